"""The DynamoDB backend's two systems as strategy objects: how it commits, and swamp's own pull.

``choose.py`` picks one of each from the scenario's ``Variant``, once, when the backend is built; no call
carries a mode flag. The committers:

- ``FencedCommitter``: the harness's fenced commit (``fenced.py``): version items, the registry's records,
  the seal on the lock item; what it made garbage goes after the release.
- ``UnfencedCommitter``: swamp's commit on the harness's items (``commit.py``): entries rewritten in place,
  unconditionally.
- ``SwampCommitter``: a run that is swamp's own: its ``commitPush`` request by request (``swamp_commit.py``),
  its bookkeeping included.

The pull rules (``FencedPull``, ``UnfencedPull``) are ``pull.py``'s; ``SwampOwnPull`` is swamp's own reads
(``swamp_pull.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.core.work import Work
from harness.datastore.backends.base import CommitResult, FileMeta, PullResult
from harness.datastore.backends.dynamodb.commit import unfenced_commit
from harness.datastore.backends.dynamodb.cursor import DynamoCursor
from harness.datastore.backends.dynamodb.fenced import FencedCommit
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.backends.dynamodb.pull import UnfencedPull
from harness.datastore.backends.dynamodb.swamp_commit import swamp_commit
from harness.datastore.backends.dynamodb.swamp_pull import own_pull
from harness.datastore.lock import LockGrant


class FencedCommitter:
    """The harness's fenced commit: refused for a stale grant, sealed on the lock item."""

    def commit(self, be: DynamoPort, namespace: str | None, upserts: Sequence[FileMeta],
               removals: Sequence[FileMeta], forget: list[str], grant: LockGrant, cursor: dict, cid: str | None,
               work: Work, *, base_seq: int | None, model_fence: tuple[str, int] | None) -> CommitResult:
        return FencedCommit(be, namespace, grant, base_seq, cursor, work, model_fence).run(upserts, removals, forget)


class UnfencedCommitter:
    """swamp's commit on the harness's items: in place and unconditional (the base and model fence unchecked)."""

    def commit(self, be: DynamoPort, namespace: str | None, upserts: Sequence[FileMeta],
               removals: Sequence[FileMeta], forget: list[str], grant: LockGrant, cursor: dict, cid: str | None,
               work: Work, *, base_seq: int | None, model_fence: tuple[str, int] | None) -> CommitResult:
        return unfenced_commit(be, namespace, upserts, removals, forget, grant, DynamoCursor.of(cursor), cid, work)


class SwampCommitter:
    """A swamp-own run's ``commitPush``, its bookkeeping included; its registry forgets nothing."""

    def commit(self, be: DynamoPort, namespace: str | None, upserts: Sequence[FileMeta],
               removals: Sequence[FileMeta], forget: list[str], grant: LockGrant, cursor: dict, cid: str | None,
               work: Work, *, base_seq: int | None, model_fence: tuple[str, int] | None) -> CommitResult:
        return swamp_commit(be, namespace, upserts, removals, grant, DynamoCursor.of(cursor), cid, work)


class SwampOwnPull(UnfencedPull):
    """A swamp-own run's reads: eventually consistent, on swamp's own items only (``swamp_pull.py``)."""

    def pull(self, be: DynamoPort, namespace: str | None, since_ms: int,  # type: ignore[override]
             partitions: Iterable[str] | None, work: Work, *, lock_key: str | None, cursor: dict | None,
             grant: object) -> PullResult:
        return own_pull(be, namespace, since_ms, partitions, cursor, work)


Committer = FencedCommitter | UnfencedCommitter | SwampCommitter
