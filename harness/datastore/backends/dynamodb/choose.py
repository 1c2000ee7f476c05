"""The one place the DynamoDB backend's strategies are chosen from the scenario's ``Variant``.

``DynamoBackend`` is built with a variant and asks this module once, in its constructor, for what it runs:
its committer, pull rules, bookkeeping, retries and lock store. A run that is swamp's own (unfenced, swamp's
bookkeeping) runs swamp's lock, commit and reads; an unfenced one swamp's commit on the harness's items; a
fenced one the harness's design. Nothing below re-decides it per call.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.datastore.backends.dynamodb.bookkeeping import HarnessBookkeeping, SwampBookkeeping
from harness.datastore.backends.dynamodb.locks import DynamoLockStore
from harness.datastore.backends.dynamodb.modes import (
    Committer,
    FencedCommitter,
    SwampCommitter,
    SwampOwnPull,
    UnfencedCommitter,
)
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.backends.dynamodb.pull import FencedPull, UnfencedPull
from harness.datastore.backends.dynamodb.retry import HarnessRetries, SwampRetries
from harness.datastore.backends.dynamodb.swamp_lock import SwampDynamoLockStore
from harness.datastore.variant import Bookkeeping, Retries, Variant


@dataclass(frozen=True)
class DynamoModes:
    """What a DynamoDB backend runs, per seam."""

    committer: Committer
    pulling: FencedPull | UnfencedPull
    retries: HarnessRetries | SwampRetries
    lock_store: type[DynamoLockStore] | type[SwampDynamoLockStore]
    own: bool  # swamp's own run: its content held for its commit, its reads eventually consistent


def choose(variant: Variant) -> DynamoModes:
    """The strategies of ``variant``'s system (see the module's docstring)."""
    retries = SwampRetries() if variant.retries is Retries.SWAMP else HarnessRetries()
    if variant.swamp_own:
        return DynamoModes(SwampCommitter(), SwampOwnPull(), retries, SwampDynamoLockStore, own=True)
    if variant.fenced:
        return DynamoModes(FencedCommitter(), FencedPull(), retries, DynamoLockStore, own=False)
    return DynamoModes(UnfencedCommitter(), UnfencedPull(), retries, DynamoLockStore, own=False)


def bookkeeping(variant: Variant, be: DynamoPort) -> HarnessBookkeeping | SwampBookkeeping:
    """What is written beside a commit: swamp's bookkeeping (not in a swamp-own run: its commit writes it)."""
    if variant.bookkeeping is Bookkeeping.SWAMP and not variant.swamp_own:
        return SwampBookkeeping(be)
    return HarnessBookkeeping()
