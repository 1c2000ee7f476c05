"""What the commit, pull and bookkeeping modules of the DynamoDB backend ask of it: a Protocol.

``commit.py``, ``fenced.py``, ``swamp_commit.py``, ``swamp_pull.py`` and
``bookkeeping.py`` send their requests through the backend's client and its
shared request helpers (batches with their backoff, the pool, the garbage
collector). They name this surface, not ``DynamoBackend``, so the backend can
import them without the modules importing it back (no import cycle, even one
under ``TYPE_CHECKING``); ``DynamoBackend`` is the one class that provides it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from harness.core.clock import Clock
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta, PullResult
from harness.datastore.backends.dynamodb.claims import Claims
from harness.datastore.backends.dynamodb.cursor import DynamoCursor
from harness.datastore.backends.dynamodb.items import Resolved
from harness.datastore.backends.dynamodb.locks import DynamoLockStore
from harness.datastore.lock import LockGrant
from harness.datastore.variant import RegistryAdds


class DynamoPort(Protocol):
    """The backend as its request modules see it: the table, the client, the shared request helpers."""

    client: Any
    table: str
    gsi_layout: str
    registry_adds: RegistryAdds
    clock: Clock
    lock_store: DynamoLockStore
    claims: Claims

    def batch_write(self, requests: list[dict], work: Work) -> None: ...

    def batch_get(self, keys: list[dict], work: Work) -> list[dict]: ...

    def parallel(self, fn: Callable[[Any, Work], Any], items: Sequence[Any], work: Work) -> list[Any]: ...

    def collect(self, cursor: DynamoCursor, work: Work, *, content: bool = False,
                keep: set[tuple[str, str]] | frozenset = frozenset()) -> None: ...

    def later(self, grant: LockGrant, job: Callable[[Work], None]) -> None: ...

    def partition_items(self, namespace: str | None, partitions: Sequence[str], removals: Sequence[FileMeta],
                        work: Work) -> list[dict]: ...

    def forget(self, namespace: str | None, partitions: Sequence[str], seq: int, work: Work, *,
               remove: dict[str, list[str]] | None = None) -> bool: ...

    def bury(self, doomed: list[dict], tombstones: list[dict], work: Work) -> None: ...

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
             lock_key: str | None = None, cursor: dict | None = None,
             grant: LockGrant | None = None) -> PullResult: ...

    def _query(self, kwargs: dict, work: Work) -> list[dict]: ...

    def _absorb(self, res: Resolved, cur: DynamoCursor, namespace: str | None, seq: int, scoped: bool,
                full: list[str], dropped: list[str]) -> PullResult: ...
