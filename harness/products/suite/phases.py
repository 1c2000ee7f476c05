"""Phases of one sync operation, named as swamp's trace names them, and the probe that times them.

The datastore reports a pull as one step (its index read and its downloads in
one ``Work``), while swamp's trace splits it into ``pullChanged.pullIndex`` /
``pullChanged.fastpath``, ``pullChanged.walk`` and ``pullChanged.download``.
``PhaseProbe`` stands between the datastore and its backend (the ``Backend``
protocol is the seam: nothing in the datastore changes) and times each
``pull`` and ``get_content`` call into a ``Work`` of its own, which it then
adds to the caller's, so the datastore's own counts are unchanged.

Which swamp name each harness step gets (``docs/suite.md`` has the table):

- ``lock``, ``release``: the datastore's lock steps (swamp's benchmark takes
  no lock; the harness cannot commit without one); ``lock.held``: grant to
  release, overlapping the phases inside it (what a two-phase push shortens).
- a push's pull under the lock (the commit's base): ``pushChanged.pullIndex``
  (two-phase: ``commitPush.pullIndex``, no swamp twin);
- ``prepare`` (content upload): ``pushChanged.upload`` / ``preparePush.upload``;
- ``commit`` (the index write): ``pushChanged.writeback`` / ``commitPush``;
- a pull's index read: ``pullChanged.fastpath`` when it took the short cut
  (the index says nothing changed), else ``pullChanged.pullIndex``; its
  downloads: ``pullChanged.download``; the rest of the pull (comparing the
  index with the local view, outside any request): ``pullChanged.walk``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.work import Work, recording
from harness.datastore.backends.base import FileMeta, PullResult

LOCK, RELEASE, HELD, TOTAL = "lock", "release", "lock.held", "total"
PUSH_PULL, PUSH_UPLOAD, PUSH_WRITEBACK = "pushChanged.pullIndex", "pushChanged.upload", "pushChanged.writeback"
PREPARE_UPLOAD, COMMIT_PULL, COMMIT = "preparePush.upload", "commitPush.pullIndex", "commitPush"
PULL_FAST, PULL_INDEX, PULL_WALK, PULL_DOWNLOAD = ("pullChanged.fastpath", "pullChanged.pullIndex",
                                                   "pullChanged.walk", "pullChanged.download")
NOT_ADDITIVE = frozenset({HELD, TOTAL})  # they overlap the other phases


@dataclass
class Phase:
    """One phase of one trial: milliseconds and what it did."""

    phase: str
    ms: float
    work: Work = field(default_factory=Work)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        w = self.work
        return {"phase": self.phase, "ms": round(self.ms, 4), "requests": dict(w.requests),
                "bytes_sent": w.bytes_sent, "bytes_received": w.bytes_received, "items_read": w.items_read,
                "items_written": w.items_written, "index_entries_written": w.index_entries_written,
                "read_units": round(w.read_units, 3), "write_units": round(w.write_units, 3),
                "request_ms": round(w.request_ms, 4), "detail": self.detail}


@dataclass
class Call:
    method: str
    ms: float
    work: Work
    short_cut: bool = False
    count: int = 1  # files a content call fetched (get_contents: a batch)


class PhaseProbe:
    """A backend that times its ``pull`` and ``get_content`` calls and otherwise is the backend it wraps."""

    def __init__(self, backend: Any, timer: Callable[[], float]) -> None:
        self._backend = backend
        self._timer = timer
        self.calls: list[Call] = []

    def __getattr__(self, name: str) -> Any:  # everything else (lock_store, commit, put_content ...) as is
        return getattr(self._backend, name)

    @property
    def wrapped(self) -> Any:
        return self._backend

    def take(self) -> list[Call]:
        """The calls timed since the last ``take`` (and forget them)."""
        out, self.calls = self.calls, []
        return out

    def _timed(self, method: str, work: Work, call: Callable[[Work], Any], count: int = 1) -> Any:
        sub = Work()
        t0 = self._timer()
        res: Any = None
        try:
            with recording(sub):
                res = call(sub)
            return res
        finally:
            work.add(sub)
            self.calls.append(Call(method, (self._timer() - t0) * 1000, sub,
                                   bool(getattr(res, "short_cut", False)), count))

    def pull(self, namespace: str | None, since_ms: int, partitions: Any, work: Work, **kw: Any) -> PullResult:
        return self._timed("pull", work, lambda w: self._backend.pull(namespace, since_ms, partitions, w, **kw))

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        return self._timed("get_content", work, lambda w: self._backend.get_content(meta, w))

    def get_contents(self, metas: Sequence[FileMeta], work: Work, *, concurrency: int = 1) -> None:
        """A batch of downloads (a datastore that fetches with a transfer concurrency calls this, not
        ``get_content``): timed as one call, counted as its files; the backend's own ``get_content`` calls
        inside it do not pass through the probe."""
        batch = list(metas)
        self._timed("get_content", work,
                    lambda w: self._backend.get_contents(batch, w, concurrency=concurrency), count=len(batch))


def split_pull(total_ms: float, calls: list[Call]) -> list[Phase]:
    """A pull's phases from the calls the probe timed inside it: index read, downloads, and the rest (walk)."""
    index = [c for c in calls if c.method == "pull"]
    gets = [c for c in calls if c.method == "get_content"]
    index_work, get_work = Work(), Work()
    for c in index:
        index_work.add(c.work)
    for c in gets:
        get_work.add(c.work)
    index_ms, get_ms = sum(c.ms for c in index), sum(c.ms for c in gets)
    if index and all(c.short_cut for c in index):  # swamp traces only its fast path on a hit
        return [Phase(PULL_FAST, index_ms, index_work, "hit")]
    return [Phase(PULL_INDEX, index_ms, index_work, "miss"),
            Phase(PULL_WALK, max(0.0, total_ms - index_ms - get_ms), Work()),
            Phase(PULL_DOWNLOAD, get_ms, get_work, f"pulled={sum(c.count for c in gets)}")]
