"""The one place the S3 backend's strategies are chosen from the scenario's ``Variant``.

``S3Backend`` is built with a variant and asks this module once, in its constructor, for what it runs: the
commit's rules (``modes.py``: fenced or swamp's), swamp's S3 behaviours (``swamp.py``: shards, commit reads,
prepare reads, command requests), its retries, and its lock store (swamp's own in a swamp-own run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.core.clock import Clock
from harness.datastore.backends.s3.locks import S3LockStore
from harness.datastore.backends.s3.modes import FencedS3, S3Mode, UnfencedS3
from harness.datastore.backends.s3.objects import S3Objects
from harness.datastore.backends.s3.swamp import S3Swamp
from harness.datastore.backends.s3.swamp_lock import SwampS3LockStore
from harness.datastore.backends.swamp_retry import SwampRetry
from harness.datastore.variant import Retries, Variant


@dataclass(frozen=True)
class S3Modes:
    """What an S3 backend runs, per seam."""

    mode: S3Mode
    swamp: S3Swamp
    retry: Callable[[Clock], SwampRetry | None]
    lock_store: Callable[[S3Objects, Clock], S3LockStore | SwampS3LockStore]


def choose(variant: Variant) -> S3Modes:
    """The strategies of ``variant``'s system (see the module's docstring)."""
    swamp = S3Swamp(shards=variant.s3_shards, commit=variant.s3_commit, prepare_read=variant.prepare_index_read,
                    command_requests=variant.s3_command_requests, retries=variant.retries)
    # swamp's retries: its sync layer's around index and content requests; none around the lock's
    retry: Callable[[Clock], SwampRetry | None] = SwampRetry if variant.retries is Retries.SWAMP else _no_retry
    lock_store: Callable[[S3Objects, Clock], S3LockStore | SwampS3LockStore] = (
        SwampS3LockStore if variant.swamp_own else _harness_lock)
    return S3Modes(FencedS3() if variant.fenced else UnfencedS3(), swamp, retry, lock_store)


def _no_retry(clock: Clock) -> None:
    return None


def _harness_lock(objects: S3Objects, clock: Clock) -> S3LockStore:
    return S3LockStore(objects)
