"""The sync coordinator: swamp's loop over one backend, step by step.

lock -> pull changed -> run the method locally -> push (prepare) -> commit the
index update (fenced) -> export the catalog -> release. Model delete and prune
are separate commands that take the lock themselves.

Every step appends a ``Step`` (name, milliseconds, Work) to the caller's list,
also when it fails, so a failed iteration still says where its time went.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from harness.clock import Clock, SystemClock, now_ms
from harness.datastore.backends.base import Backend, FileMeta, partition_of
from harness.datastore.catalog import Catalog
from harness.datastore.errors import ConfigError, ConflictError
from harness.datastore.lock import Heartbeat, Lock, LockConfig, LockGrant
from harness.datastore.model import MODEL_TYPE, run_method
from harness.datastore.paths import Paths, model_of
from harness.datastore.work import Work

LOCK_SCOPES = ("datastore", "namespace", "model")
INDEX_COMMITS = ("full", "delta")


@dataclass(frozen=True)
class SyncConfig:
    namespace: str | None = None
    lock_scope: str = "namespace"
    index_commit: str = "delta"
    lock: LockConfig = field(default_factory=LockConfig)
    heartbeat: bool = True

    def __post_init__(self) -> None:
        if self.lock_scope not in LOCK_SCOPES:
            raise ConfigError(f"unknown lock scope {self.lock_scope!r}: choose one of {', '.join(LOCK_SCOPES)}")
        if self.index_commit not in INDEX_COMMITS:
            raise ConfigError(
                f"unknown index commit mode {self.index_commit!r}: choose one of {', '.join(INDEX_COMMITS)}")


@dataclass
class Step:
    name: str
    ms: float
    work: Work


@dataclass
class PruneReport:
    models: list[tuple[str, str]]
    files: int
    rows: int
    dry_run: bool


class Datastore:
    """One worker's view of a datastore: its local tree, dirty paths, catalog and watermark."""

    def __init__(self, backend: Backend, catalog: Catalog, cfg: SyncConfig, *,
                 clock: Clock | None = None, holder: str = "harness", rng: random.Random | None = None) -> None:
        self.backend, self.catalog, self.cfg = backend, catalog, cfg
        self.clock = clock or SystemClock()
        self.holder = holder
        self.rng = rng or random.Random()
        self.paths = Paths(cfg.namespace)
        self.ns = self.paths.namespace
        self.local: dict[str, FileMeta] = {}
        self.staged: dict[str, FileMeta] = {}
        self.dirty: dict[str, bytes] = {}
        self.watermark_ms = 0
        self.last_seq: int | None = None

    # ---- plumbing ----------------------------------------------------------------
    @contextmanager
    def _step(self, steps: list[Step], name: str) -> Iterator[Work]:
        work = Work()
        t0 = time.perf_counter()
        try:
            yield work
        finally:
            steps.append(Step(name, (time.perf_counter() - t0) * 1000, work))

    def lock_key(self, model: tuple[str, str] | None = None) -> str:
        if self.cfg.lock_scope == "model" and model:
            return f"{self.paths.root}data/{model[0]}/{model[1]}/.lock"
        if self.cfg.lock_scope in ("namespace", "model") and self.ns:
            return f".locks/{self.ns}.lock"
        return self.backend.datastore_lock_key()

    @contextmanager
    def locked(self, steps: list[Step], model: tuple[str, str] | None = None) -> Iterator[LockGrant]:
        lock = Lock(self.backend.lock_store, self.lock_key(model), self.clock, self.cfg.lock,
                    self.holder, self.rng)
        with self._step(steps, "lock") as w:
            grant = lock.acquire(w)
        beat_work = Work()
        beat = Heartbeat(lock, grant, beat_work) if self.cfg.heartbeat else nullcontext()
        ok = False
        try:
            with beat:
                yield grant
            ok = True
        finally:
            with self._step(steps, "release") as w:
                w.add(beat_work)
                try:
                    lock.release(grant, w)
                except Exception:
                    if ok:  # do not hide the step's own failure behind a release failure
                        raise

    def _live(self, rel: str) -> bool:
        """A file is live while its model's definition exists (or it belongs to no model)."""
        owner = model_of(rel, self.ns)
        if owner is None:
            return True
        d = self.paths.definition(*owner)
        return d in self.staged or d in self.local

    def _stage(self, rel: str, data: bytes) -> None:
        prev = self.staged.get(rel) or self.local.get(rel)
        self.staged[rel] = FileMeta(rel, len(data), FileMeta.digest_of(data), 0, (prev.version + 1) if prev else 1)
        self.dirty[rel] = data

    # ---- steps ------------------------------------------------------------------
    def pull(self, work: Work, partitions: list[str] | None = None) -> int:
        """Pull changed paths; only an unscoped pull advances the watermark. Returns files pulled."""
        start = now_ms(self.clock)
        last = self.last_seq if partitions is None else None
        res = self.backend.pull(self.ns, self.watermark_ms, partitions, last, work)
        pulled = 0
        for m in res.changed:
            have = self.local.get(m.rel_path)
            if have is None or have.digest != m.digest:
                self.backend.get_content(m, work)
                pulled += 1
            self.local[m.rel_path] = m
        work.files_pulled += pulled
        if partitions is None:  # a scoped pull cannot vouch for other models: only this one advances it
            self.last_seq = res.seq
            if not res.short_cut:
                self.watermark_ms = start
                self.backend.write_watermark(self.ns, start, work)
        return pulled

    def run_method_locally(self, model_type: str, model_id: str, method: str, payload_bytes: int,
                           work: Work) -> None:
        if not self.catalog.has_model(self.ns, model_type, model_id):
            self.catalog.add_model(self.ns, model_type, model_id)
            self._stage(self.paths.definition(model_type, model_id),
                        f"type: {model_type}\nid: {model_id}\n".encode())
        name, raw = run_method(method, payload_bytes, self.rng)
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
        work.catalog_rows = self.catalog.rows(self.ns)

    def prepare(self, work: Work) -> None:
        """Push, phase one: look the dirty paths up (scoped, by key) and upload their content."""
        paths = list(self.dirty)
        remote = self.backend.lookup(paths, work)
        for rel in paths:
            base = self.local[rel].version if rel in self.local else 0
            r = remote.get(rel)
            if r is not None and r.version > base and r.digest != self.staged[rel].digest:
                raise ConflictError(f"conflict on {rel}: remote version {r.version} is newer than ours ({base})")
        self.backend.put_content(self.dirty, self.staged, work)
        work.files_pushed += len(paths)

    def commit(self, grant: LockGrant, work: Work) -> int:
        """Push, phase two: merge the manifest into the index under the lock (fenced)."""
        now = now_ms(self.clock)
        for m in self.staged.values():
            m.updated_at_ms = now
        if self.cfg.index_commit == "full":
            merged = {r: m for r, m in self.local.items() if self._live(r)}
            merged.update(self.staged)
            entries = list(merged.values())
        else:
            entries = list(self.staged.values())
        seq = self.backend.commit(self.ns, entries, grant, work)
        self.local.update(self.staged)
        self.staged.clear()
        self.dirty.clear()
        return seq

    def export_catalog(self, work: Work) -> None:
        if self.ns:
            self.backend.put_blob(self.paths.catalog_export(), self.catalog.export(self.ns), work)
        work.catalog_rows = self.catalog.rows(self.ns)

    # ---- commands ---------------------------------------------------------------
    def sync_run(self, model_id: str, method: str, payload_bytes: int, steps: list[Step],
                 model_type: str = MODEL_TYPE) -> None:
        """One ``swamp model method run`` with sync around it."""
        model = (model_type, model_id)
        scope = [partition_of(self.paths.definition(*model), self.ns)] if self.cfg.lock_scope == "model" else None
        with self.locked(steps, model) as grant:
            with self._step(steps, "pull") as w:
                self.pull(w, scope)  # type: ignore[arg-type]
            with self._step(steps, "method") as w:
                self.run_method_locally(model_type, model_id, method, payload_bytes, w)
            with self._step(steps, "push") as w:
                self.prepare(w)
            with self._step(steps, "commit") as w:
                self.commit(grant, w)
            with self._step(steps, "export") as w:
                self.export_catalog(w)

    def delete_model(self, model_id: str, steps: list[Step], model_type: str = MODEL_TYPE) -> None:
        """``swamp model delete --force``: the definition goes, the data and catalog rows stay."""
        with self.locked(steps, (model_type, model_id)) as grant, self._step(steps, "delete") as w:
            rel = self.paths.definition(model_type, model_id)
            self.staged.pop(rel, None)
            self.dirty.pop(rel, None)
            meta = self.local.pop(rel, None)
            if meta is not None:
                self.backend.delete_files(self.ns, [meta], grant, w)
            self.catalog.remove_model(self.ns, model_type, model_id)
            w.catalog_rows = self.catalog.rows(self.ns)

    def prune(self, steps: list[Step], dry_run: bool = False) -> PruneReport:
        """``swamp data prune --force``: remove data whose model no longer exists, this namespace only."""
        orphans = self.catalog.orphans(self.ns)
        owners = set(orphans)
        files = [m for r, m in self.local.items() if model_of(r, self.ns) in owners]
        if dry_run or not orphans:
            rows = sum(self.catalog.rows(self.ns, model) for model in orphans)
            return PruneReport(orphans, len(files), rows, dry_run)
        with self.locked(steps) as grant, self._step(steps, "prune") as w:
            self.backend.delete_files(self.ns, files, grant, w)
            self.backend.forget_partitions(self.ns, [partition_of(self.paths.definition(t, i), self.ns) or ""
                                                     for t, i in orphans], w)
            for m in files:
                self.local.pop(m.rel_path, None)
            rows = sum(self.catalog.remove_data(self.ns, t, i) for t, i in orphans)
            w.catalog_rows = self.catalog.rows(self.ns)
        return PruneReport(orphans, len(files), rows, dry_run)
