"""Pre-age an S3 bucket in swamp's own layout, as swamp-club's S3 datastore extension at c25ec91 writes it.

The DynamoDB twin (``swamp_layout``) writes what webframp's extension leaves in a table; this writes what
``swamp model create @webframp/system NAME`` then ``method run get_uptime NAME`` leaves in a bucket, once per
model and run, so a real ``swamp datastore sync`` of a fresh repository on that bucket pulls every pre-aged
model's data (``swamp data search``) and a story chapter starts at the spec's age (3,500 index entries and
more) without hours of 2-second swamp commands. A model's files are the DynamoDB twin's (``model_files``: the
files are swamp core's, the datastore only carries them).

The facts are the extension's, read in its code (swamp-club/swamp-extensions c25ec91,
``datastore/s3/extensions/datastores/_lib/s3_cache_sync.ts``, ``s3_client.ts``) and checked against a recorded
run (tests/fixtures/swamp/``s3-c25ec91.objects.json``, how in that folder's README), swamp 06b6147:

- each file is one plain PutObject of its bytes at ``<prefix>/<rel>`` (``s3_client.ts`` ``fullKey``: the
  config's ``prefix`` and a slash; none without one), no metadata, no content type;
- the push's commit on a bucket with no ``_index/_meta.json`` of version 2 (a fresh bucket: c25ec91 never
  migrates by itself, ``commitPush``) is ``commitPushMonolith``: the whole index as one object,
  ``.datastore-index.json`` = ``{"version": 1, "lastPulled", "entries": {rel: {"key": rel, "size",
  "lastModified", "localMtime", "sha256"}}}`` (one line), then ``writePartitionedIndex``: every partition's
  entries in ``_index/<partition>.json`` = ``{"version": 1, "entries"}`` and the partition list
  ``_index/_meta.json`` = ``{"version": 1, "partitions"}`` (in the order the entries first name them);
- a partition is ``partitionKeyFromPath(rel)``: under ``data/``, ``outputs/``, ``definitions-evaluated/`` the
  path's segments but the last (the last three from six segments on) joined by ``--``. So a model's versions
  share one shard (``data--@webframp--system--<id>``), and every model's ``latest`` pointer, definition and
  output records share three (``data--@webframp--system``, ``definitions-evaluated--@webframp--system``,
  ``outputs--@webframp--system--get_uptime``);
- a fresh reader's unscoped pull (``pullChanged``, no ``_meta.json`` v2) reads ``.datastore-index.json`` and
  GETs every entry missing locally; a scoped one (a model's run) reads the model's three shards.

Without a namespace, as the DynamoDB twin (a namespaced push puts everything under ``<ns>/`` and adds a
``.namespace.json`` registration: not written here).

Pacing: S3 has no capacity units; a bucket takes 3,500 PUTs a second per key prefix before ``503 SlowDown``
(``harness.aws.fidelity.throttle``). An item is one model: its files and then its own shard (so a shard never
names a file still missing), one PutObject each; its cost is its requests, and the ceiling is 70 % of one
prefix's PUT rate (every object here shares the bucket's prefix; a real bucket splits hot prefixes only after
minutes). ``finish`` writes the shared shards, the partition list and the monolithic index once every model
landed, so a reader never sees an index promising files still missing.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.core.clock import Clock
from harness.core.virtual_time import Threads
from harness.core.work import Work, recording
from harness.jobs.pacing.budget import BUDGETS, Budgets
from harness.jobs.pacing.ceiling import SHARE
from harness.jobs.pacing.engine import Job, Progress
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.swamp_layout import SwampFile, SwampS3Layout, _uuid, iso_ms, model_files

NAME = SwampS3Layout.name
INDEX = ".datastore-index.json"
META = "_index/_meta.json"
PER_MODEL_DIRS = ("data", "outputs", "definitions-evaluated")
SINGLE_SHARD_DIRS = ("workflows-evaluated", "auto-definitions", "audit", "telemetry", "logs", "files")
PUTS_PER_PREFIX_S = 3_500.0  # S3's PUT/COPY/POST/DELETE a second per key prefix
REQUEST_CEILING = SHARE * PUTS_PER_PREFIX_S
LOCAL_LEAD_MS = 70  # swamp writes a file locally, then pushes it: the recording's localMtime led by 62-110 ms


def partition_key(rel: str) -> str | None:
    """The index shard a path's entry goes to (``partitionKeyFromPath``), or None for a path it drops."""
    segments = rel.split("/")
    if len(segments) < 2:
        return "_root" if segments[0] else None
    top = segments[0]
    if top in PER_MODEL_DIRS:
        if len(segments) < 4:
            return None
        end = len(segments) - 3 if len(segments) >= 6 else len(segments) - 1
        return "--".join(segments[:end])
    if top == "workflow-runs":
        return f"{top}--{segments[1]}" if len(segments) >= 3 else None
    return top if top in SINGLE_SHARD_DIRS else None


def index_entry(f: SwampFile) -> dict:
    """A file's index entry, keys in the extension's order: pushed at ``updated_at``, written locally just before."""
    pushed = datetime.strptime(f.updated_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    local = pushed - timedelta(milliseconds=LOCAL_LEAD_MS)
    return {"key": f.rel, "size": len(f.content), "lastModified": f.updated_at,
            "localMtime": local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}Z",
            "sha256": hashlib.sha256(f.content).hexdigest()}


def _json(value: Any) -> bytes:
    """JavaScript's ``JSON.stringify``: no spaces, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def shards(files: list[SwampFile]) -> dict[str, dict[str, dict]]:
    """Entries by partition, partitions in the order the sorted entries first name them (``groupEntriesByPartition``
    over the index, whose entries are in path order)."""
    out: dict[str, dict[str, dict]] = {}
    for f in sorted(files, key=lambda f: f.rel):
        key = partition_key(f.rel)
        if key is not None:
            out.setdefault(key, {})[f.rel] = index_entry(f)
    return out


def index_objects(files: list[SwampFile], last_pulled: str) -> dict[str, bytes]:
    """What ``commitPushMonolith`` writes after the files: the index, every shard, the partition list."""
    entries = {f.rel: index_entry(f) for f in sorted(files, key=lambda f: f.rel)}
    parts = shards(files)
    out = {INDEX: _json({"version": 1, "lastPulled": last_pulled, "entries": entries})}
    out.update({f"_index/{k}.json": _json({"version": 1, "entries": v}) for k, v in parts.items()})
    out[META] = _json({"version": 1, "partitions": list(parts)})
    return out


class RequestCeiling:
    """A job's ceiling in requests a second, fixed (S3 says nothing like DescribeTable): a ``CeilingWatcher``'s face."""

    def __init__(self, value: float = REQUEST_CEILING) -> None:
        self.value = value

    def current(self) -> float:
        return self.value


@dataclass(frozen=True)
class S3Target:
    bucket: str
    prefix: str = ""  # the extension's ``prefix`` config: keys are ``<prefix>/<rel>``

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel


class SwampS3LayoutSource:
    """``models`` models of ``@webframp/system``, each run ``versions`` times, in the S3 extension's layout.

    Item ``m`` is model ``m``: its files, then the shards only its files are in, one PutObject each (its cost:
    that many requests). ``finish`` writes the shards models share, the partition list and the index.
    """

    def __init__(self, client: Any, target: S3Target, models: int, versions: int, epoch: float) -> None:
        self.client, self.target = client, target
        self.layout = SwampS3Layout()
        self.by_model = [model_files(epoch, m, versions, models) for m in range(models)]
        self.total = models
        self.model_ids = [_uuid(epoch, "model", m) for m in range(models)]
        every = [f for files in self.by_model for f in files]
        self.last_push = max((f.updated_at for f in every), default=iso_ms(int(epoch * 1000)))
        owners: dict[str, set[int]] = {}
        for m, files in enumerate(self.by_model):
            for f in files:
                owners.setdefault(partition_key(f.rel) or "", set()).add(m)
        self._own = {k for k, ms in owners.items() if len(ms) == 1 and k}

    def files(self) -> int:
        return sum(len(files) for files in self.by_model)

    def objects(self, idx: int) -> list[tuple[str, bytes]]:
        """Model ``idx``'s objects in the order they go out: its files, then its own shards."""
        files = self.by_model[idx]
        own = {f"_index/{k}.json": v for k, v in shards(files).items() if k in self._own}
        return ([(self.target.key(f.rel), f.content) for f in files]
                + [(self.target.key(rel), _json({"version": 1, "entries": v})) for rel, v in own.items()])

    def cost(self, idx: int) -> float:
        return float(len(self.objects(idx)))

    def run(self, idx: int, work: Work) -> None:
        """Unconditional puts: the same parameters give the same bytes, so a redone item lands the same objects."""
        for key, body in self.objects(idx):
            with recording(work):
                self.client.put_object(Bucket=self.target.bucket, Key=key, Body=body)

    def shared_objects(self) -> dict[str, bytes]:
        """The commit's objects no one model owns: the shared shards, the partition list, the index."""
        every = [f for files in self.by_model for f in files]
        objs = index_objects(every, self.last_push)
        return {rel: body for rel, body in objs.items()
                if not (rel.startswith("_index/") and rel != META and rel[len("_index/"):-len(".json")] in self._own)}

    def finish(self) -> None:
        """The commit, once every model landed: shared shards, then the partition list, then the index last."""
        objs = self.shared_objects()
        order = sorted(objs, key=lambda rel: (rel == INDEX, rel == META, rel))
        work = Work()
        for rel in order:
            with recording(work):
                self.client.put_object(Bucket=self.target.bucket, Key=self.target.key(rel), Body=objs[rel])


def estimate_line(source: SwampS3LayoutSource, ceiling: float = REQUEST_CEILING) -> str:
    """The job's estimate before it starts, in requests (the DynamoDB jobs' line is in write units)."""
    requests = sum(source.cost(i) for i in range(source.total)) + len(source.shared_objects())
    seconds = requests / ceiling
    when = f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min" if seconds < 5400 else \
        f"{seconds / 3600:.1f} h"
    return (f"{source.total:,} items ({source.files():,} files), {requests:,.0f} PutObject requests at a ceiling of "
            f"{ceiling:,.0f} requests/s: about {when}")


def run_layout_job(job_id: str, params: dict[str, Any], source: SwampS3LayoutSource, endpoint: str | None,
                   journal: Journal, *, resume: bool = False, ceiling: float = REQUEST_CEILING,
                   clock: Clock | None = None, threads: Threads | None = None, budgets: Budgets = BUDGETS,
                   rng: random.Random | None = None, period_s: float = 1.0,
                   on_progress: Callable[[Progress], None] | None = None,
                   on_start: Callable[[Job], None] | None = None) -> str:
    """Journal (or continue) the job and run it through the pacing engine, paced by requests a second.

    The engine is the DynamoDB jobs' (AIMD, the shared budget, throttles backed off and redone: S3's
    ``503 SlowDown`` is a throttle); only the ceiling differs: fixed, in requests, shared by every job on the
    same endpoint, bucket and prefix. ``finish`` is the caller's, once the job is done.
    """
    if not resume:
        journal.create(job_id, "seed", params, source.total, None, endpoint)
    job = Job(job_id, source, journal, RequestCeiling(ceiling),  # type: ignore[arg-type] - its one method
              (endpoint, source.target.bucket, "requests", source.target.prefix), clock=clock, budgets=budgets,
              period_s=period_s, on_progress=on_progress, threads=threads, rng=rng)
    if on_start:
        on_start(job)
    return job.run()
