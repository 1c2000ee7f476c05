"""The sync coordinator: swamp's loop over one backend, step by step.

``one-lock`` (the seed's loop): lock -> pull changed -> run the method
locally -> push (prepare) -> commit the index update (fenced) -> export the
catalog -> release. ``two-phase`` is swamp's sync today: a per-model lock
around a scoped pull, the method and the upload, the global lock only for the
commit. Each is a profile in ``profiles/`` that drives this module's public
steps; ``cfg.sync`` names the one a worker runs. Model delete and prune are
separate commands that take the (global) lock themselves.

Every step appends a ``Step`` (name, milliseconds, Work) to the caller's list,
also when it fails, so a failed iteration still says where its time went.
Every lock grant, renewal, release and commit attempt is reported to the
``recorder`` (JSON-serialisable dicts: the history a safety checker reads),
and ``pauses`` (a callable from the fault-injection layer: seconds to stall at
a named point) can freeze the holder, heartbeat included, between push and
commit.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from harness.core.aws_errors import outcome_unknown
from harness.core.clock import Clock, SystemClock, now_ms
from harness.core.work import Work, recording
from harness.datastore.backends.base import Backend, CommitResult, CursorDraft, FileMeta, PullResult, partition_of
from harness.datastore.catalog import Catalog
from harness.datastore.errors import ConfigError, ContentMissingError
from harness.datastore.lock import Heartbeat, Lock, LockConfig, LockGrant, Recorder
from harness.datastore.model import MODEL_TYPE, SWAMP_DATA_NAME, run_method
from harness.datastore.paths import Paths, model_of
from harness.datastore.profiles import SYNC_MODES, profile
from harness.datastore.store import Step
from harness.datastore.swamp_push import EXPORTS_AT, PUSH_SCOPES, data_name_dir, stage_rewrites
from harness.datastore.sync_modes import choose
from harness.datastore.variant import (
    Bookkeeping,
    DataName,
    ExportAt,
    GlobalLock,
    IndexCommit,
    LockScope,
    PushScope,
    values,
)

LOCK_SCOPES = values(LockScope)
INDEX_COMMITS = values(IndexCommit)
BOOKKEEPING = values(Bookkeeping)
GLOBAL_LOCKS = values(GlobalLock)  # profiles/two_phase.py: commit_lock_key says each
CONTENT_TRIES = 3  # pulls in a row whose content went missing under them before one is taken as read
VIEW_LIMIT = 2000  # entries of a pull's view kept in the history (larger views are recorded by their size)


@dataclass(frozen=True)
class SyncConfig:
    namespace: str | None = None
    lock_scope: str = "namespace"
    index_commit: str = "delta"
    lock: LockConfig = field(default_factory=LockConfig)
    heartbeat: bool = True
    sync: str = "one-lock"
    global_poll_s: float = 1.0
    global_lock: str = GlobalLock.SWAMP  # two-phase's global lock key (profiles/two_phase.py: commit_lock_key)
    upload_concurrency: int = 1
    download_concurrency: int = 1
    dirty_path_cap: int = 0
    catalog_export: str = "compact"
    data_name: str = "method"  # swamp: every method's run a version of the model's one data name (model.py)
    push_scope: str = "changed"  # swamp: a push writes every version of a changed data name again (DynamoDB)
    export_at: str = "after-commit"  # swamp: in two-phase's commit, under the lock (DynamoDB), or the push (S3)
    record_views: bool = False  # every pull's view in the history (the checker's torn-read test; safety runs)
    # where content is written: None = as the profile says swamp does it (two-phase on DynamoDB: at the commit,
    # under the global lock, its commitPush; else in the push's prepare); True / False to choose
    uploads_at_commit: bool | None = None

    def __post_init__(self) -> None:
        if self.lock_scope == "model":
            raise ConfigError('lock scope "model" is not supported: a commit merges into the namespace\'s '
                              'index, which only the namespace (or datastore) lock can fence; use "namespace"')
        if self.lock_scope not in LOCK_SCOPES:
            raise ConfigError(f"unknown lock scope {self.lock_scope!r}: choose one of {', '.join(LOCK_SCOPES)}")
        if self.index_commit not in INDEX_COMMITS:
            raise ConfigError(
                f"unknown index commit mode {self.index_commit!r}: choose one of {', '.join(INDEX_COMMITS)}")
        if self.sync not in SYNC_MODES:
            raise ConfigError(f"unknown sync {self.sync!r}: choose one of {', '.join(SYNC_MODES)}")
        if self.global_lock not in GLOBAL_LOCKS:
            raise ConfigError(f"unknown global lock {self.global_lock!r}: choose one of {', '.join(GLOBAL_LOCKS)}")
        if self.push_scope not in PUSH_SCOPES or self.export_at not in EXPORTS_AT:
            raise ConfigError(f"unknown push_scope {self.push_scope!r} or export_at {self.export_at!r}: choose "
                              f"{' / '.join(PUSH_SCOPES)} and {' / '.join(EXPORTS_AT)}")
        if self.sync == "two-phase" and self.index_commit == "full":
            raise ConfigError('sync = "two-phase" commits each model\'s dirty entries under its own lock: a full '
                              'commit would rewrite other models\' entries without theirs; use index_commit = "delta"')


@dataclass
class PruneReport:
    models: list[tuple[str, str]]
    files: int
    rows: int
    dry_run: bool


class Datastore:
    """One worker's view of a datastore: its local tree, dirty paths, catalog and watermark.

    Fenced or swamp's, and whose bookkeeping, is the backend's ``variant`` (it was built with it): the
    strategies of ``sync_modes.py`` are chosen from it once, here.
    """

    def __init__(self, backend: Backend, catalog: Catalog, cfg: SyncConfig, *,
                 clock: Clock | None = None, holder: str = "harness", rng: random.Random | None = None,
                 recorder: Recorder | None = None, pauses: Callable[[str], float] | None = None) -> None:
        self.backend, self.catalog, self.cfg = backend, catalog, cfg
        self.variant = backend.variant
        modes = choose(self.variant)  # the one choice of the two systems' steps (sync_modes.py)
        self.fencing, self.books = modes.fencing, modes.books
        self.clock = clock or SystemClock()
        self.holder = holder
        self.rng = rng or random.Random()
        self.record: Recorder = recorder or (lambda _event: None)
        self.pauses = pauses
        self._profile = profile(cfg.sync)  # how sync_run drives the steps below (harness/datastore/profiles/)
        self.uploads_at_commit = cfg.uploads_at_commit if cfg.uploads_at_commit is not None else (
            self._profile.uploads_at_commit(backend.name))
        # swamp's DynamoDB extension (swamp_push.py): its push rewrites a data name's versions, its commit the export
        self.rewrites = cfg.push_scope == PushScope.SWAMP and backend.name == "dynamodb"
        # (a swamp-own DynamoDB run writes the export as a file of the push, as swamp's push does)
        own = self.variant.swamp_own
        self.exports_in_commit = cfg.export_at == ExportAt.SWAMP and backend.name == "dynamodb" and not own
        self.exports_in_push = cfg.export_at == ExportAt.SWAMP and (backend.name == "s3" or own)  # a file of the push
        # paths every worker of the namespace writes, the last writer's kept (swamp_push.py): no version conflict
        self.overwrites = {Paths(cfg.namespace).catalog_export()} if self.exports_in_push else set()
        self.kept: dict[str, bytes] = {}  # the bytes of this worker's data-name files, which a rewrite writes again
        self.paths = Paths(cfg.namespace)
        self.ns = self.paths.namespace
        self.local: dict[str, FileMeta] = {}
        self.staged: dict[str, FileMeta] = {}
        self.dirty: dict[str, bytes] = {}
        self.watermark_ms = 0  # local only: swamp's "pulled as of" time (the unfenced index is keyed by time)
        self.last_seq: int | None = None  # the sequence this worker's view is complete up to
        self._cursor: dict = {}  # the backend's record of what this worker has read (see each backend's cursor)
        self._grant: LockGrant | None = None  # the grant of the locked section we are in, if any
        self._beat: Heartbeat | None = None
        self._base: int | None = None  # the sequence this section's pull saw
        self._model_view: int | None = None  # two-phase: the sequence the section's scoped pull saw (its model's)
        self._model_grant: LockGrant | None = None  # two-phase: the per-model lock held for the section
        self._model_part: str | None = None  # ... and its model's partition
        self._cid: str | None = None  # fenced: the id of the commit whose content is uploaded (picked before it)

    # ---- plumbing ----------------------------------------------------------------
    @contextmanager
    def step(self, steps: list[Step], name: str) -> Iterator[Work]:
        """One named step: its Work is recorded into, its time and Work appended to ``steps`` (on failure too)."""
        work = Work()
        t0 = time.perf_counter()
        try:
            with recording(work):
                yield work
        finally:
            steps.append(Step(name, (time.perf_counter() - t0) * 1000, work))

    def lock_key(self) -> str:
        """The lock whose holder commits: the commit domain, as the scenario's profile names it."""
        return self._profile.commit_lock_key(self)

    def new_lock(self, key: str) -> Lock:
        return Lock(self.backend.lock_store, key, self.clock, self.cfg.lock, self.holder, self.rng,
                    recorder=self.record)

    @contextmanager
    def hold(self, steps: list[Step], lock: Lock, *, lock_step: str = "lock",
             on_grant: Callable[[LockGrant, Work], None] | None = None) -> Iterator[tuple[LockGrant, Heartbeat | None]]:
        """Take ``lock`` (its wait is step ``lock_step``), heartbeat it, release it as step ``release``."""
        with self.step(steps, lock_step) as w:
            grant = lock.acquire(w, on_grant)
        with self.hold_granted(steps, lock, grant) as beat:
            yield grant, beat

    @contextmanager
    def hold_granted(self, steps: list[Step], lock: Lock, grant: LockGrant) -> Iterator[Heartbeat | None]:
        """Heartbeat a lock already granted for the block, then release it (step ``release``)."""
        beat_work = Work()
        beat = Heartbeat(lock, grant, beat_work) if self.cfg.heartbeat else None
        ok = False
        try:
            with beat or nullcontext():
                yield beat
            ok = True
        finally:
            with self.step(steps, "release") as w:
                w.add(beat_work)
                try:
                    lock.release(grant, w)
                except Exception:
                    if ok:  # do not hide the step's own failure behind a release failure
                        raise
                finally:
                    self.backend.release_grant(grant)
            if getattr(self.backend, "pending_collection", lambda _g: False)(grant):  # after the release: the
                with self.step(steps, "collect") as w:  # garbage a fenced commit left, none of it live (safety.md)
                    self.backend.collect_after(grant, w)

    def fence_hook(self) -> Callable[[LockGrant, Work], None] | None:
        """What a fenced grant of the commit domain's lock tells the backend first (None unfenced)."""
        return self.fencing.fence_hook(self)

    @contextmanager
    def locked(self, steps: list[Step]) -> Iterator[LockGrant]:
        """The commit domain's lock held for a section (one-lock's whole sync; a delete or a prune)."""
        with self.hold(steps, self.new_lock(self.lock_key()), on_grant=self.fence_hook()) as (grant, beat):
            self._grant, self._beat, self._base = grant, beat, None
            try:
                yield grant
            finally:
                self._grant, self._beat, self._base = None, None, None

    def model_fence_hook(self, part: str | None) -> Callable[[LockGrant, Work], None] | None:
        """What a fenced grant of a model's lock tells the backend: its partition is fenced by this grant."""
        return self.fencing.model_fence_hook(self, part)

    @contextmanager
    def model_held(self, steps: list[Step], lock: Lock, grant: LockGrant, part: str | None) -> Iterator[None]:
        """A model's lock held for a section (two-phase): its pull is the model's view, its commit fenced by it."""
        self._model_grant, self._model_part, self._model_view = grant, part, None
        try:
            with self.hold_granted(steps, lock, grant) as beat:
                self._beat = beat
                yield
        finally:
            self._model_grant, self._model_part, self._model_view, self._beat = None, None, None, None

    def pause(self, point: str) -> None:
        """A stop-the-world pause of this holder, if the fault-injection layer asks for one here."""
        seconds = self.pauses(point) if self.pauses else 0.0
        if seconds <= 0:
            return
        start = now_ms(self.clock)
        with self._beat.suspended() if self._beat else nullcontext():
            self.clock.sleep(seconds)
        grant = self._grant or self._model_grant
        self.record({"type": "pause", "point": point, "holder": self.holder, "start_ms": start,
                     "end_ms": now_ms(self.clock), "key": grant.key if grant else None,
                     "fence": grant.fence if grant else None})

    def _commit(self, op: str, grant: LockGrant, writes: list[FileMeta], deletes: list[FileMeta],
                call: Callable[[str], CommitResult]) -> CommitResult:
        """Run one commit (``call(cid)``) and record the attempt: invoke, seal and complete times, outcome, paths.

        ``seal_ms`` is when the sealing request was first sent (botocore's
        before-send, not when the commit started building it), ``sent_ms``
        when it was last sent (a retry): a seal sent after another holder's
        grant and accepted is what the checker calls unsafe; one in flight
        across that grant, uncertain.
        The backend may seal under an id of its own (DynamoDB: the one the
        grant claimed); the record takes the id the commit really used.
        """
        cid, self._cid = self._cid or self.new_commit_id(), None
        event = {"type": "commit", "op": op, "key": grant.key, "holder": self.holder, "fence": grant.fence,
                 "nonce": grant.nonce, "namespace": self.ns, "cid": cid, "fencing": self.variant.fenced,
                 "view_seq": self._base if grant is self._grant else self._model_view, "invoke_ms": now_ms(self.clock),
                 "writes": [[m.rel_path, m.version, m.digest, m.size] for m in writes],
                 "deletes": [[m.rel_path, m.version, m.digest] for m in deletes]}
        if self.overwrites & {m.rel_path for m in writes}:  # blind overwrites: no lost update (checker.py)
            event["overwrites"] = sorted(self.overwrites & {m.rel_path for m in writes})
        if self._model_view is not None and grant is not self._grant:  # two-phase: the view is its model's only
            event["view_scope"] = "model"
        model = self._model_grant
        if model is not None:
            event.update(model_key=model.key, model_nonce=model.nonce, model_fence=model.fence)
        try:
            self.fencing.refuse_lost(grant)
            res = call(cid)
        except BaseException as e:  # interrupted too (the run ending): its outcome is then unknown
            event["cid"] = getattr(e, "commit_id", None) or event["cid"]  # the id the backend really used (DynamoDB)
            self.record({**event, "ok": False, "complete_ms": now_ms(self.clock),
                         "error": f"{type(e).__name__}: {e}"[:300],
                         "indeterminate": not isinstance(e, Exception) or outcome_unknown(e)
                         or getattr(e, "indeterminate", False)})
            raise
        self.record({**event, "ok": True, "complete_ms": now_ms(self.clock), "seq": res.seq, "base": res.base,
                     "domain": res.domain, "cid": res.cid, "seal_ms": res.seal_ms, "sent_ms": res.sent_ms})
        return res

    @staticmethod
    def new_commit_id() -> str:
        """A commit's id (picked before its content is written when fenced: ``sync_modes.FencedSync``)."""
        return uuid.uuid4().hex[:16]

    def _live(self, rel: str) -> bool:
        """A file is live while its model's definition exists (or it belongs to no model)."""
        owner = model_of(rel, self.ns)
        if owner is None:
            return True
        d = self.paths.definition(*owner)
        return d in self.staged or d in self.local

    def stage(self, rel: str, data: bytes) -> None:
        """A file written locally: its next version is dirty until a push commits it."""
        prev = self.staged.get(rel) or self.local.get(rel)
        self.staged[rel] = FileMeta(rel, len(data), FileMeta.digest_of(data), 0, (prev.version + 1) if prev else 1)
        self.dirty[rel] = data
        if self.rewrites and data_name_dir(rel):
            self.kept[rel] = data

    _stage = stage

    # ---- steps ------------------------------------------------------------------
    def pull(self, work: Work, partitions: list[str] | None = None) -> int:
        """Pull changed paths and learn removals; only an unscoped pull advances the watermark. Files pulled.

        The pull never writes: the watermark is this worker's own, and the
        backend's cursor remembers what it has read, so an unchanged index
        costs one read. A pull that fails leaves the view and the cursor as they were (``CursorDraft``).
        """
        start = now_ms(self.clock)
        with recording(work):
            for attempt in range(CONTENT_TRIES):
                # the pull reads into a draft of the cursor; view and cursor move together, once it has it all
                draft = CursorDraft(self._cursor)
                res = self.backend.pull(self.ns, self.watermark_ms, partitions, work, lock_key=self.lock_key(),
                                        cursor=draft.parts, grant=self._grant)
                view = self._forget(res, dict(self.local))
                fetch = [m for m in res.changed
                         if (have := view.get(m.rel_path)) is None or have.digest != m.digest]
                try:
                    self.backend.get_contents(fetch, work, concurrency=self.cfg.download_concurrency)
                except ContentMissingError:
                    # superseded and collected after this pull read the index (a reader without the commit lock):
                    # the draft goes, and a pull again, from the cursor as it was, brings the newer version. Still
                    # missing on the last: the view is the index's as read (its content lost: corrupt, not torn)
                    if attempt < CONTENT_TRIES - 1:
                        continue
                break
            self.local = {**view, **{m.rel_path: m for m in res.changed}}
            draft.adopt()
            pulled = len(fetch)
            work.files_pulled += pulled
            if partitions is None:  # a scoped pull cannot vouch for other models: only this one advances it
                self.last_seq = res.seq
                if self._grant is not None:
                    self._base = res.seq
                if not res.short_cut:
                    self.watermark_ms = start
            elif self._model_grant is not None:  # two-phase: what this model's commit will have been based on
                self._model_view = res.seq
        if self.cfg.record_views:
            self._record_view(res.seq, partitions, start)
        return pulled

    def _record_view(self, seq: int, partitions: list[str] | None, start: int) -> None:
        """The pull's view, as the checker's torn-read test reads it: every entry in its scope, at ``seq``."""
        scope = set(partitions) if partitions is not None else None
        view = [[r, m.version, m.digest] for r, m in sorted(self.local.items())
                if scope is None or partition_of(r, self.ns) in scope]
        self.record({"type": "pull", "holder": self.holder, "namespace": self.ns, "domain": self.lock_key(),
                     "seq": seq, "scope": sorted(scope) if scope is not None else None, "invoke_ms": start,
                     "fencing": self.variant.fenced,
                     "complete_ms": now_ms(self.clock), "view": view[:VIEW_LIMIT], "view_size": len(view)})

    def _forget(self, res: PullResult, view: dict[str, FileMeta]) -> dict[str, FileMeta]:
        """Drop from ``view`` (a copy of the local view) what the pull says is gone: removed paths, pruned or
        re-read partitions."""
        for rel in res.removed:
            view.pop(rel, None)
        if not (res.dropped or res.full):
            return view
        present = {m.rel_path for m in res.changed}
        whole = "*" in res.full
        dropped, reread = set(res.dropped), set(res.full)
        for rel in list(view):
            part = partition_of(rel, self.ns)
            if part in dropped or ((whole or part in reread) and rel not in present):
                del view[rel]
        return view

    def run_method_locally(self, model_type: str, model_id: str, method: str, payload_bytes: int,
                           work: Work) -> None:
        if not self.catalog.has_model(self.ns, model_type, model_id):
            self.catalog.add_model(self.ns, model_type, model_id)
            self._stage(self.paths.definition(model_type, model_id),
                        f"type: {model_type}\nid: {model_id}\n".encode())
        name, raw = run_method(method, payload_bytes, self.rng)
        name = SWAMP_DATA_NAME if self.cfg.data_name == DataName.SWAMP else name  # @webframp/system: one data name
        version = self.catalog.next_version(self.ns, model_type, model_id, name)
        raw_rel = self.paths.data_raw(model_type, model_id, name, version)
        digest = FileMeta.digest_of(raw)
        self._stage(raw_rel, raw)
        self._stage(self.paths.data_metadata(model_type, model_id, name, version),
                    f"name: {name}\nversion: {version}\nsize: {len(raw)}\ndigest: {digest}\n".encode())
        self._stage(self.paths.data_latest(model_type, model_id, name), str(version).encode())
        run_id = f"{int(self.clock.now() * 1000)}-{self.rng.getrandbits(32):08x}"
        self._stage(self.paths.output_record(model_type, model_id, run_id),
                    f"method: {method}\nstatus: succeeded\ndata: {raw_rel}\n".encode())
        self.catalog.add_data(self.ns, model_type, model_id, name, version, raw_rel, len(raw))
        if self.rewrites:
            stage_rewrites(self)
        work.catalog_rows = self.catalog.rows(self.ns)

    def prepare(self, work: Work) -> None:
        """Push, phase one: upload the dirty paths' content (and delete content earlier commits superseded).

        Unfenced (swamp's push) it first looks the dirty paths up by key for a
        newer remote version. Fenced, it does not: the seal is conditioned on
        nothing having been sealed since this holder's pull, which is the same
        check made atomic with the commit.
        """
        paths = list(self.dirty)
        with recording(work):
            index_read = getattr(self.backend, "prepare_reads", None)  # S3: swamp's prepare reads its index first
            if index_read is not None:
                index_read(self.ns, paths, work, lock_key=self.lock_key())
            cap = self.cfg.dirty_path_cap
            if cap and len(paths) > cap:  # swamp's dirty-path cap: past it the push walks the whole index
                self.backend.read_index(self.ns, work, lock_key=self.lock_key())
            self.fencing.check_remote(self, paths, work)  # unfenced (swamp's push): a newer remote version
            if not self.uploads_at_commit:
                self._upload(work)
        work.files_pushed += len(paths)

    def _upload(self, work: Work) -> None:
        self.fencing.name_content(self)  # fenced: the commit's id, picked first, in every content key
        self.backend.put_content(self.dirty, self.staged, work, cursor=self._cursor,
                                 concurrency=self.cfg.upload_concurrency)

    def commit(self, grant: LockGrant, work: Work) -> int:
        """Push, phase two: merge the manifest into the index under the lock (fenced); returns the sequence.

        Whatever the outcome, the staged files are no longer pending here: on
        success they are part of the local view; on failure they were never
        visible remotely, and the next push must not carry them again.
        """
        now = now_ms(self.clock)
        for m in self.staged.values():
            m.updated_at_ms = now
        if self.cfg.index_commit == "full":
            merged = {r: m for r, m in self.local.items() if self._live(r)}
            merged.update(self.staged)
            entries = list(merged.values())
        else:
            entries = list(self.staged.values())
        base = self._base if grant is self._grant else None
        staged = list(self.staged.values())
        try:
            with recording(work):
                if self.uploads_at_commit:  # swamp's DynamoDB writes the content under the global lock too
                    self._upload(work)
                res = self._commit("sync", grant, staged, [], lambda cid: self.backend.commit(
                    self.ns, entries, grant, work, base_seq=base, cid=cid, cursor=self._cursor,
                    model_fence=self._model_fence()))
            self.local.update(self.staged)
            if self.last_seq is not None and res.base == self.last_seq:  # nobody else sealed since this view
                self.last_seq = res.seq
        finally:
            self.staged.clear()
            self.dirty.clear()
            self._cid = None
        return res.seq

    def _model_fence(self) -> tuple[str, int] | None:
        """Two-phase, fenced: (the model's partition, its lock's fence): the commit checks no newer holder of it."""
        return self.fencing.model_fence(self._model_grant, self._model_part)

    def export_catalog(self, work: Work) -> None:
        if self.ns:
            with recording(work):
                self.backend.put_blob(self.paths.catalog_export(),
                                      self.catalog.export(self.ns, self.cfg.catalog_export), work)
        work.catalog_rows = self.catalog.rows(self.ns)

    def _delete(self, op: str, grant: LockGrant, metas: list[FileMeta], work: Work,
                forget: list[str] | None = None) -> None:
        """A commit of removals, against the view this section's pull saw (its base), like any commit."""
        base = self._base if grant is self._grant else None  # (unfenced: the backend checks no base)
        self._commit(op, grant, [], metas, lambda cid: self.backend.delete_files(
            self.ns, metas, grant, work, cid=cid, cursor=self._cursor, base_seq=base, forget=forget or ()))

    # ---- commands ---------------------------------------------------------------
    def sync_run(self, model_id: str, method: str, payload_bytes: int, steps: list[Step],
                 model_type: str = MODEL_TYPE) -> None:
        """One ``swamp model method run`` with sync around it, as the scenario's profile runs it."""
        self._profile.sync_run(self, model_id, method, payload_bytes, steps, model_type)

    def delete_model(self, model_id: str, steps: list[Step], model_type: str = MODEL_TYPE) -> None:
        """``swamp model delete --force``: the definition goes, the data and catalog rows stay.

        Under the lock it pulls first and removes the definition as its view
        has it, committing against that view: a delete from a stale view (one
        that missed a re-creation of the model) would remove what it never saw.
        """
        with self.locked(steps) as grant, self.step(steps, "delete") as w:
            self.pull(w)
            rel = self.paths.definition(model_type, model_id)
            self.staged.pop(rel, None)
            self.dirty.pop(rel, None)
            meta = self.local.get(rel)
            if meta is not None:
                self._delete("delete", grant, [meta], w)
                self.local.pop(rel, None)
            self.catalog.remove_model(self.ns, model_type, model_id)
            w.catalog_rows = self.catalog.rows(self.ns)

    def _orphans(self) -> list[tuple[str, str]]:
        """The catalog's models without a definition that are not defined in this view either (re-created by
        another worker since this one deleted them: not orphans)."""
        return [o for o in self.catalog.orphans(self.ns) if self.paths.definition(*o) not in self.local]

    def prune(self, steps: list[Step], dry_run: bool = False) -> PruneReport:
        """``swamp data prune --force``: remove data whose model no longer exists, this namespace only.

        The orphans and their files are found under the lock, after a pull:
        from a stale view a prune would remove a model someone re-created.
        """
        if dry_run or not self.catalog.orphans(self.ns):
            orphans = self._orphans()
            files = [m for r, m in self.local.items() if model_of(r, self.ns) in set(orphans)]
            rows = sum(self.catalog.rows(self.ns, model) for model in orphans)
            return PruneReport(orphans, len(files), rows, dry_run)
        with self.locked(steps) as grant, self.step(steps, "prune") as w:
            self.pull(w)
            orphans = self._orphans()
            owners = set(orphans)
            files = [m for r, m in self.local.items() if model_of(r, self.ns) in owners]
            if files:  # one commit: the files' removal, and their partitions gone from the registry
                parts = [partition_of(self.paths.definition(t, i), self.ns) for t, i in orphans]
                forget = self.books.forget(parts)  # (swamp's bookkeeping forgets nothing: its registry only grows)
                self._delete("prune", grant, files, w, forget=forget)
            for m in files:
                self.local.pop(m.rel_path, None)
            rows = sum(self.catalog.remove_data(self.ns, t, i) for t, i in orphans)
            w.catalog_rows = self.catalog.rows(self.ns)
        return PruneReport(orphans, len(files), rows, dry_run)
