"""The contract between the sync coordinator and a storage backend.

Anything that can store a blob by key, do a conditional write for locking and
list (or query) by prefix qualifies. The index is the backend's own business:
a GSI on DynamoDB, manifest files on S3.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.core.work import Work, recording
from harness.datastore.lock import LockGrant, LockStore
from harness.datastore.paths import model_of
from harness.datastore.variant import Variant


@dataclass
class FileMeta:
    """One index entry: a file's metadata as the index records it."""

    rel_path: str
    size: int
    digest: str
    updated_at_ms: int
    version: int = 1
    # the id of the commit whose writer uploaded this version's content (picked before the upload; fenced runs):
    # part of the content's key, so a re-creation with the same path, version and bytes gets a key of its own.
    # "" for swamp's unfenced keys (path, version and digest) and for entries older than the field.
    content_id: str = ""

    @staticmethod
    def digest_of(data: bytes) -> str:
        return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass
class PullResult:
    """What a pull tells the worker's view: entries to take, entries gone, partitions to reconcile.

    ``removed``: paths deleted since the worker last looked. ``dropped``:
    partitions gone whole (pruned): every local path in them goes.
    ``full``: partitions read from scratch (``"*"``: the whole scope), whose
    every visible entry is in ``changed``: a local path there that is not in
    ``changed`` is gone.
    """

    changed: list[FileMeta]
    seq: int
    short_cut: bool = False
    removed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    full: list[str] = field(default_factory=list)


@dataclass
class CommitResult:
    """A sealed commit: its place in the domain's sequence, the sequence it started from, its id."""

    seq: int
    base: int
    cid: str
    domain: str  # what the sequence counts: the lock item (DynamoDB) or the namespace's index (S3)
    seal_ms: int | None = None  # when the request that sealed it was first sent (the safety checker's overlap test)
    sent_ms: int | None = None  # ... and last sent (a retry): a seal in flight across a grant is uncertain, not unsafe


class AfterRelease:
    """Work a fenced commit leaves for after its grant's release: deleting what it made garbage (both backends).

    No key a fenced commit writes is written by another commit, and a sealed
    commit is never undone: nothing live is among that garbage, however late
    it is deleted, so it need not hold the lock (docs/safety.md)."""

    def _jobs(self) -> tuple[threading.Lock, dict[str, list[Callable[[Work], None]]]]:
        if not hasattr(self, "_later_jobs"):
            self._later_guard, self._later_jobs = threading.Lock(), {}
        return self._later_guard, self._later_jobs

    def later(self, grant: LockGrant, job: Callable[[Work], None]) -> None:
        guard, jobs = self._jobs()
        with guard:
            jobs.setdefault(grant.nonce, []).append(job)

    def pending_collection(self, grant: LockGrant) -> bool:
        guard, jobs = self._jobs()
        with guard:
            return bool(jobs.get(grant.nonce))

    def collect_after(self, grant: LockGrant, work: Work) -> None:
        """After the release: the grant's jobs, best effort (garbage left behind only takes space)."""
        guard, jobs = self._jobs()
        with guard:
            todo = jobs.pop(grant.nonce, [])
        with recording(work):
            for job in todo:
                try:
                    job(work)
                except Exception:  # noqa: BLE001 - garbage is invisible: what is left only takes space
                    pass


class CursorDraft:
    """A pull's working copy of a worker's cursor (each backend's part, its containers copied): the pull reads into
    ``parts``, and ``adopt()`` makes it the cursor only once the pull's view is complete, content included. A pull
    that fails halfway (a read throttled past botocore's retries, content gone) leaves the cursor as it was, so the
    next pull cannot short-cut past entries the view never got. Values are replaced, never changed in place."""

    def __init__(self, cursor: dict) -> None:
        self.cursor = cursor
        self.parts = {k: self._copy(v) for k, v in cursor.items()}

    @staticmethod
    def _copy(v: object) -> object:
        if not dataclasses.is_dataclass(v) or isinstance(v, type):
            return copy.copy(v)
        return dataclasses.replace(v, **{f.name: copy.copy(x) for f in dataclasses.fields(v)
                                         if isinstance(x := getattr(v, f.name), dict | set | list)})

    def adopt(self) -> None:
        """The pull succeeded: the draft becomes the cursor, in place (whatever holds a backend's part keeps it)."""
        for k, v in self.parts.items():
            live = self.cursor.get(k)
            if live is not None and type(live) is type(v) and dataclasses.is_dataclass(v):
                vars(live).update(vars(v))
            else:
                self.cursor[k] = v


def partition_of(rel_path: str, namespace: str | None) -> str | None:
    """The per-model partition a path belongs to: ``[<ns>/]<type>/<id>``."""
    owner = model_of(rel_path, namespace)
    if owner is None:
        return None
    return f"{namespace}/{owner[0]}/{owner[1]}" if namespace else f"{owner[0]}/{owner[1]}"


class Backend(Protocol):
    """A datastore backend, built with its ``Variant`` (``harness/datastore/variant.py``): which system it runs
    (fenced or swamp's, swamp's bookkeeping or not) was chosen once, in its constructor (``backends/*/choose.py``),
    so no method takes a mode flag."""

    name: str
    lock_store: LockStore
    variant: Variant

    def datastore_lock_key(self) -> str:
        """The one lock for the whole datastore (swamp's key without a namespace)."""

    def ensure(self) -> None:
        """Create the table or bucket if missing; refuse one that does not fit."""

    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work, *,
                    cursor: dict | None = None, concurrency: int = 1) -> None:
        """Prepare: upload content, outside the index (and delete content the worker's commits superseded);
        ``concurrency`` files at a time (swamp's transfers)."""

    def get_content(self, meta: FileMeta, work: Work) -> bytes: ...

    def get_contents(self, metas: Sequence[FileMeta], work: Work, *, concurrency: int = 1) -> None:
        """Download these files' content, ``concurrency`` at a time, in fixed batches as swamp's transfers run."""

    def global_lock_key(self, namespace: str | None) -> str:
        """The one-item global lock of a stored copy of core (two-phase's ``global_lock = "one-item"``)."""

    def fence_model(self, namespace: str | None, partition: str, grant: LockGrant, cursor: dict | None,
                    work: Work, *, lock_key: str | None = None) -> None:
        """Two-phase, fenced: a model lock's grant, recorded where the commit of ``lock_key``'s domain checks it."""

    def read_index(self, namespace: str | None, work: Work, *, lock_key: str | None = None) -> int:
        """The whole index of the namespace, read (a push past the dirty-path cap); the entries read."""

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        """The index entries of ``paths``, as readers see them (unfenced: as swamp's scoped push reads them)."""

    def on_grant(self, namespace: str | None, grant: LockGrant, cursor: dict | None, work: Work) -> None:
        """A fenced grant was just made: whatever the seal is conditioned on must learn of it first."""

    def release_grant(self, grant: LockGrant) -> None:
        """The locked section is over: drop what the backend kept for the grant."""

    def pending_collection(self, grant: LockGrant) -> bool:
        """Did the grant's fenced commits leave garbage for after its release (``AfterRelease``)?"""

    def collect_after(self, grant: LockGrant, work: Work) -> None:
        """After the grant's release: delete the garbage its fenced commits left (``AfterRelease``)."""

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, cid: str | None = None,
               cursor: dict | None = None, model_fence: tuple[str, int] | None = None) -> CommitResult:
        """Merge entries into the index under the lock and seal it.

        Fenced (the backend's variant) the store itself refuses a stale grant,
        and a commit either seals completely or leaves nothing visible.
        ``base_seq`` is the sequence this holder's view was pulled at: the
        commit is refused if anything sealed since. ``cursor`` is the worker's
        own (what its pulls saw): with it a commit reads nothing it already
        knows. Unfenced it writes unconditionally (swamp's own behaviour; the
        base and the model fence go unchecked).
        ``model_fence`` (two-phase, fenced): the model's partition and its lock's
        fence, refused if a newer holder of the model was granted. With swamp's
        bookkeeping its own items are written beside the commit (DynamoDB).
        """

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
             lock_key: str | None = None, cursor: dict | None = None,
             grant: LockGrant | None = None) -> PullResult:
        """What changed since the worker's ``cursor``; ``partitions`` scopes the pull; it never writes."""

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     cid: str | None = None, cursor: dict | None = None,
                     base_seq: int | None = None, forget: Sequence[str] = ()) -> CommitResult:
        """Remove index entries (a commit of removals, fenced like one); ``forget``: partitions pruned whole."""

    def index_snapshot(self, work: Work) -> dict:
        """Everything readers can see, for a safety check: entries with their content digests."""

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        """Store a file outside the index (the catalog export), in place of its previous version."""
