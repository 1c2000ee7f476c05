"""What a sync profile and swamp's push rules ask of the datastore (``Store``), and the step they record (``Step``).

``profiles/`` drives a ``sync.Datastore`` through its public steps and
``swamp_push.py`` stages files into it; ``sync.py`` imports both. They name
this Protocol instead of ``Datastore``, so neither imports ``sync.py`` back (no
import cycle, not even one under ``TYPE_CHECKING``). ``Datastore`` is the one
class that provides it; ``Step`` lives here for the same reason (``sync.py``
re-exports it, where its users import it from).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from harness.core.clock import Clock
from harness.core.work import Work
from harness.datastore.backends.base import Backend, FileMeta
from harness.datastore.catalog import Catalog
from harness.datastore.lock import Heartbeat, Lock, LockGrant, Recorder
from harness.datastore.paths import Paths


@dataclass
class Step:
    name: str
    ms: float
    work: Work


class Store(Protocol):
    """One worker's datastore as a profile and the push rules drive it (``sync.Datastore``)."""

    backend: Backend
    catalog: Catalog
    cfg: Any  # sync.SyncConfig (defined beside the Datastore that reads it)
    clock: Clock
    holder: str
    record: Recorder
    paths: Paths
    ns: str | None
    exports_in_commit: bool
    exports_in_push: bool
    kept: dict[str, bytes]
    local: dict[str, FileMeta]
    staged: dict[str, FileMeta]
    dirty: dict[str, bytes]

    def step(self, steps: list[Step], name: str) -> AbstractContextManager[Work]: ...

    def lock_key(self) -> str: ...

    def new_lock(self, key: str) -> Lock: ...

    def hold(self, steps: list[Step], lock: Lock, *, lock_step: str = "lock",
             on_grant: Callable[[LockGrant, Work], None] | None = None
             ) -> AbstractContextManager[tuple[LockGrant, Heartbeat | None]]: ...

    def fence_hook(self) -> Callable[[LockGrant, Work], None] | None: ...

    def locked(self, steps: list[Step]) -> AbstractContextManager[LockGrant]: ...

    def model_fence_hook(self, part: str | None) -> Callable[[LockGrant, Work], None] | None: ...

    def model_held(self, steps: list[Step], lock: Lock, grant: LockGrant, part: str | None
                   ) -> AbstractContextManager[None]: ...

    def pause(self, point: str) -> None: ...

    def stage(self, rel: str, data: bytes) -> None: ...

    def pull(self, work: Work, partitions: list[str] | None = None) -> int: ...

    def run_method_locally(self, model_type: str, model_id: str, method: str, payload_bytes: int,
                           work: Work) -> None: ...

    def prepare(self, work: Work) -> None: ...

    def commit(self, grant: LockGrant, work: Work) -> int: ...

    def export_catalog(self, work: Work) -> None: ...


__all__ = ["Step", "Store"]
