"""A scenario's sections as frozen dataclasses: what every part of a run reads from its scenario.

Parsed from TOML in ``harness.config.scenario`` (the one place that validates them) and carried to every
Locust process as data; a new option is a field here and a key there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.aws.fidelity.layer import FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates
from harness.core.errors import HarnessError
from harness.datastore.lock import LockConfig, swamp_backoff
from harness.datastore.variant import (
    LAYOUT_KINDS,
    MODE_KINDS,
    Bookkeeping,
    ExportAt,
    GlobalLock,
    Gsi,
    IndexCommit,
    LockScope,
    PrepareIndexRead,
    PushScope,
    RegistryAdds,
    Retries,
    S3CommandRequests,
    S3Commit,
    S3Index,
    S3Shards,
    SyncMode,
    Variant,
    coerce,
)
from harness.gates.expr import ThresholdSpec

BACKENDS = ("dynamodb", "s3")
KINDS = ("throughput", "write-stress", "disposable")
LIFECYCLES = ("long-lived", "disposable")
NAMESPACES = ("shared", "per-worker")
ARRIVALS = ("closed", "open")
PROCESSES = ("poisson", "uniform")


@dataclass(frozen=True)
class Stage:
    """One stage of a load shape (``[[fleet.stages]]``): for ``duration_s``, this many users or this arrival rate.

    0 keeps the previous stage's value (the fleet's own for the first stage).
    """

    duration_s: float
    workers: int = 0
    rate_per_s: float = 0.0


@dataclass(frozen=True)
class Fleet:
    workers: int = 4
    spawn_rate: float = 4.0
    duration_s: float = 60.0
    max_iterations: int = 100_000  # per worker: every loop is bounded in count as well as time
    ramp_s: float = 0.0  # users start evenly over this long (spawn rate = workers / ramp); 0: spawn_rate decides
    arrival: str = "closed"  # closed: each user starts its next sync when its last ends; open: syncs arrive at a rate
    rate_per_s: float = 0.0  # open: arrivals per second over the whole fleet (each of N processes takes rate / N)
    process: str = "poisson"  # open: poisson (exponential gaps) | uniform (even gaps)
    stages: tuple[Stage, ...] = ()  # a load shape (Locust's LoadTestShape): run only when given

    @property
    def peak_workers(self) -> int:
        """The most users any stage runs (Locust's -u with stages, so each process sizes its clients for it)."""
        return max([self.workers, *(st.workers for st in self.stages)])

    def _at(self, elapsed_s: float, own: Any, of: Callable[[Any], Any]) -> Any:
        """A stage's setting ``elapsed_s`` into the test; a stage that leaves it unset keeps the one before
        (the fleet's ``own`` before the first); past the last stage, the last's."""
        value, t = own, 0.0
        for st in self.stages:
            value = of(st) or value
            t += st.duration_s
            if elapsed_s < t:
                break
        return value

    def users_at(self, elapsed_s: float) -> int:
        """The stage's users ``elapsed_s`` into the test (the load shape's)."""
        return self._at(elapsed_s, self.workers, lambda st: st.workers)

    def rate_at(self, elapsed_s: float) -> float:
        """The fleet's arrival rate ``elapsed_s`` into the test: the stage's, or the fleet's own."""
        return self._at(elapsed_s, self.rate_per_s, lambda st: st.rate_per_s)


@dataclass(frozen=True)
class Workload:
    kind: str = "throughput"
    lifecycle: str = "long-lived"
    models_per_worker: int = 50
    methods: tuple[str, ...] = ("get_uptime", "get_memory", "get_load", "get_disk")
    payload_bytes: tuple[int, ...] = (100,)
    think_time_s: float = 0.0
    shared_models: bool = False  # every worker cycles through the same models (their paths collide)
    catalog_export: str = "compact"  # compact | swamp (23 columns a row, 2-space JSON, as swamp writes it) | stored-28
    data_name: str = "method"  # method (a data name per method) | swamp (@webframp/system: every method's "current")


@dataclass(frozen=True)
class DatastoreSpec:
    gsi: Gsi = Gsi.PER_MODEL
    s3_index: S3Index = S3Index.SHARDED
    lock_scope: LockScope = LockScope.NAMESPACE
    namespaces: str = "per-worker"
    workers_per_namespace: int = 1  # with per-worker namespaces: how many workers share each one (and its lock)
    index_commit: IndexCommit = IndexCommit.DELTA
    prune_every: int = 0
    fencing: bool = True  # false: swamp's own commit (TTL lock, no fencing token, unconditional writes)
    # one-lock (the spec's loop) | two-phase (swamp today: per-model lock, global for commit)
    sync: SyncMode = SyncMode.ONE_LOCK
    global_poll_s: float = 1.0  # two-phase: a model run polls the global lock this often before its per-model lock
    # two-phase: swamp (S3 per namespace, DynamoDB one for all) | per-namespace (both)
    global_lock: GlobalLock = GlobalLock.SWAMP
    # harness | swamp (DynamoDB: SYNCSTATE#global every push, a registry that grows)
    bookkeeping: Bookkeeping = Bookkeeping.HARNESS
    upload_concurrency: int = 1  # content uploads at a time (swamp's S3: 25)
    download_concurrency: int = 1  # content downloads at a time (swamp's S3: 50; its DynamoDB: 1)
    dirty_path_cap: int = 0  # past this many dirty paths a push reads the whole index (swamp: S3 200, DynamoDB 1000)
    # swamp's DynamoDB extension as its code reads (docs/swamp-today.md); each defaults to the harness's behaviour
    # swamp: a push rewrites every version of the data name (core marks its directory)
    push_scope: PushScope = PushScope.CHANGED
    # swamp: DynamoDB writes the catalog export inside commitPush, under the lock
    export_at: ExportAt = ExportAt.AFTER_COMMIT
    # swamp: one ADD per distinct GSI partition of a push's files, FILE#-prefixed
    registry_adds: RegistryAdds = RegistryAdds.ONE
    # swamp's S3 extension as its code reads (docs/swamp-today.md); each defaults to the harness's behaviour
    # swamp: partitionKeyFromPath's keys (a run touches data, latest, outputs, _root)
    s3_shards: S3Shards = S3Shards.MODEL
    # swamp: _meta.json and each dirty shard read again under the lock, GET + PUT in turn
    s3_commit: S3Commit = S3Commit.HARNESS
    # all (swamp: the meta and every shard, on every push) | dirty (a fork's)
    prepare_index_read: PrepareIndexRead = PrepareIndexRead.NONE
    # swamp: HeadBucket, the scoped pull's 3 shard GETs, a new model's LIST + PUT
    s3_command_requests: S3CommandRequests = S3CommandRequests.NONE
    # retries, both backends: swamp: 3 tries at 500 ms x 3^n +- 25 % (S3: its SDK at one attempt; DynamoDB: around
    # each data-path request, the SDK's kept, unprocessed batch items min(500 ms x 2^n, 5 s) x 8)
    retries: Retries = Retries.HARNESS
    swamp_values: tuple[str, ...] = ()  # the keys given as "swamp": resolved again when --backend changes it

    @property
    def swamp_own(self) -> bool:
        """Is the run swamp's own: unfenced with swamp's bookkeeping? Then its lock's requests, its reads
        (DynamoDB: eventually consistent) and its commit (DynamoDB: file by file) are swamp's, and the harness
        writes nothing of its own (docs/swamp-today.md)."""
        return self.variant.swamp_own

    def __post_init__(self) -> None:
        # the knobs' strings (TOML, the plan's JSON, a test) as their enums, once, here at the edge
        coerce(self, MODE_KINDS)
        coerce(self, LAYOUT_KINDS)

    @property
    def variant(self) -> Variant:
        """The mode knobs, what the datastore's strategies are chosen from (harness/datastore/variant.py)."""
        return Variant(fenced=self.fencing, **{k: getattr(self, k) for k in MODE_KINDS})

    def namespace_of(self, process: int, n: int) -> str | None:
        """The namespace of user ``n`` of Locust process ``process`` (its user id is ``w<process>-<n>``).

        Per-worker namespaces are named after their worker; when several workers share one
        (``workers_per_namespace``), consecutive users of a process form a group, so the
        namespace lock is contended by exactly that group.
        """
        if self.namespaces == "shared":
            return None
        if self.workers_per_namespace == 1:
            return f"w{process}-{n}"
        return f"w{process}-ns{n // self.workers_per_namespace}"

    def uneven_groups(self, workers: int, processes: int) -> str | None:
        """Why some namespaces get fewer than ``workers_per_namespace`` workers, or None when every group is full.

        Locust hands users round-robin to its processes and each process groups its own users, so every
        group is full exactly when ``workers`` is a multiple of processes x workers_per_namespace; a
        smaller group contends less for its lock (a group of one never does).
        """
        n, processes = self.workers_per_namespace, max(1, processes)
        per_process = [workers // processes + (i < workers % processes) for i in range(processes)]
        short = sorted({c % n for c in per_process if c % n})
        if n == 1 or not short:
            return None
        return (f"{workers} workers over {processes} Locust process{'es' if processes > 1 else ''} leave namespaces "
                f"with {' or '.join(map(str, short))} worker(s) instead of workers_per_namespace = {n} (a group of "
                f"one never contends for its lock): use a multiple of {processes * n}")


@dataclass(frozen=True)
class Checks:
    max_failure_ratio: float = 1.0
    min_rate_last_window: float = 0.0
    window_s: float = 30.0
    max_p99_wait_s: float = 0.0  # 0: off; else the 99th percentile of the wait (intended start to end) at most this
    safety: bool = False  # check the run's history against the final remote state; a violation fails the run
    # thresholds on any column (harness.gates.expr: "p95(commit_ms) < 200ms"), judged with their intervals; one
    # whose interval straddles its limit counts as ``undecided`` says; ``abort`` ones are judged live too
    thresholds: tuple[ThresholdSpec, ...] = ()
    undecided: str = "pass"
    dead_endpoint: bool = True  # a last window of nothing but connection failures fails the run (false: allowed)
    allow_lost_workers: bool = False  # a Locust worker process lost during the run still lets it complete


@dataclass(frozen=True)
class Pauses:
    """Stop-the-world pauses of a lock holder between push and commit (its heartbeat stops too).

    Fault injection on the client side, so they apply on every endpoint.
    """

    probability: float = 0.0  # per commit (the command driver: per run command, a freeze of its processes)
    duration_s: float = 0.0
    at_s: float = 0.5  # the command driver: how long after the run command starts its freeze begins


@dataclass(frozen=True)
class FidelitySpec:
    """The scenario's ``[fidelity]`` section: what the fidelity layer (``harness.aws.fidelity``) should model.

    ``mode`` auto means on everywhere but real AWS; ``resolve`` is the layer's
    configuration for one process on one endpoint (the run plan calls it).
    """

    mode: str = "auto"  # auto | on | off
    config: FidelityConfig = field(default_factory=lambda: FidelityConfig(
        enabled=True, dynamodb=DynamoCapacity(), s3=S3Rates(), probe_every_s=1.0))
    pauses: Pauses = field(default_factory=Pauses)
    front: bool = False  # the loopback front (harness.aws.front) between the command driver's processes and the service

    def resolve(self, endpoint_kind: str, capacity_share: float = 1.0, latency: str | None = None) -> FidelityConfig:
        """The layer as it applies to one process on one endpoint."""
        from dataclasses import replace

        on = self.mode == "on" or (self.mode == "auto" and endpoint_kind != "aws")
        cfg = self.config
        ddb = replace(cfg.dynamodb, scale=cfg.dynamodb.scale * capacity_share) if cfg.dynamodb else None
        s3 = replace(cfg.s3, scale=cfg.s3.scale * capacity_share) if cfg.s3 else None
        return replace(cfg, enabled=on, dynamodb=ddb, s3=s3, latency=latency or cfg.latency)


@dataclass(frozen=True)
class Background:
    """A paced job beside the workers: a noisy neighbour writing ``items`` items on the same table."""

    items: int = 0  # 0: none
    item_bytes: int = 1000


@dataclass(frozen=True)
class Observe:
    """``[observe]``: the observer that reads the datastore's own state from outside while the load runs
    (``harness.jobs.observer``), and what it may spend doing so; ``otel`` (as ``--otel``) sends the run's live metrics.
    Self-contained: other sections' readers need none of it, and a key of its own is a field here and a line in
    ``scenario._observe``."""

    otel: bool = False  # Locust's OpenTelemetry instrumentation and the harness's meters (docs/live-metrics.md)
    every_s: float = 10.0  # seconds between samples; 0: off ("off" in the TOML)
    share: float = 0.05  # at most this share of the table's read capacity, where the table has one
    rate_per_s: float = 25.0  # requests a second where it has none (S3, on-demand tables)
    gsi: str = ""  # the layout it reads: "" is [datastore]'s (the same names: gsi, s3_index, s3_shards)
    s3_index: str = ""
    s3_shards: str = ""

    @property
    def on(self) -> bool:
        return self.every_s > 0


@dataclass(frozen=True)
class DriverSpec:
    """``[driver]``: what runs an iteration (a module ``harness/load/drivers/<kind>.py``), and the scenario that is
    this one's twin under another driver (``harness run SCENARIO --driver KIND`` runs it).

    ``options`` are the driver's own keys, as data: the driver reads and checks them
    (``harness.load.drivers.check``) before anything starts.
    """

    kind: str = "model"
    twin: str = ""
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str = ""
    backend: str = "dynamodb"
    source: str = ""
    fleet: Fleet = field(default_factory=Fleet)
    workload: Workload = field(default_factory=Workload)
    datastore: DatastoreSpec = field(default_factory=DatastoreSpec)
    lock: LockConfig = field(default_factory=LockConfig)
    checks: Checks = field(default_factory=Checks)
    fidelity: FidelitySpec = field(default_factory=FidelitySpec)
    background: Background = field(default_factory=Background)
    observe: Observe = field(default_factory=Observe)
    driver: DriverSpec = field(default_factory=DriverSpec)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_overrides(self, *, backend: str | None = None, workers: int | None = None,
                       duration_s: float | None = None, spawn_rate: float | None = None,
                       rate_per_s: float | None = None) -> Scenario:
        from dataclasses import replace

        fleet = self.fleet
        if rate_per_s is not None:  # --rate: any scenario, open
            if rate_per_s <= 0:
                raise HarnessError(f"--rate must be positive, got {rate_per_s:g}/s")
            fleet = replace(fleet, arrival="open", rate_per_s=rate_per_s)
        if workers is not None:
            if workers < 1:
                raise HarnessError(f"--workers must be at least 1, got {workers}")
            ramped = workers / fleet.ramp_s if fleet.ramp_s else max(fleet.spawn_rate, float(workers))
            fleet = replace(fleet, workers=workers, spawn_rate=ramped if spawn_rate is None else spawn_rate)
        if spawn_rate is not None:
            fleet = replace(fleet, spawn_rate=spawn_rate)
        if duration_s is not None:
            if duration_s <= 0:
                raise HarnessError(f"--duration must be positive, got {duration_s}s")
            fleet = replace(fleet, duration_s=duration_s)
        if backend is not None and backend not in BACKENDS:
            raise HarnessError(f"unknown backend {backend!r}: choose dynamodb or s3")
        out = replace(self, fleet=fleet, backend=backend or self.backend)
        if out.backend == "dynamodb" and out.datastore.sync == "two-phase" and out.datastore.gsi == "legacy":
            raise HarnessError(f"{self.source or self.name}: --backend dynamodb cannot run this scenario's "
                               f"sync = \"two-phase\" with gsi = \"legacy\" (a model's commit is fenced by its "
                               f"per-model partition): set gsi = \"per-model\"")
        return swamp_for_backend(out) if out.backend != self.backend else out


    def with_checks(self, **limits: float | None) -> Scenario:
        """The scenario with the command line's check limits (``None``: the scenario's own)."""
        from dataclasses import replace

        given = {k: v for k, v in limits.items() if v is not None}
        added, undecided = given.pop("thresholds", ()), given.pop("undecided", None)  # --check: beside the file's
        if given.get("max_failure_ratio", 0) > 1 or any(v < 0 for v in given.values()):
            raise HarnessError(f"check limits must be 0 or more (a failure ratio at most 1), got {given}")
        if added:
            given["thresholds"] = (*self.checks.thresholds, *added)
        if undecided:
            given["undecided"] = undecided
        return replace(self, checks=replace(self.checks, **given)) if given else self


SWAMP_UPLOADS = {"s3": 25, "dynamodb": 10}  # files written at a time (docs/swamp-today.md)
SWAMP_DOWNLOADS = {"s3": 50, "dynamodb": 1}
SWAMP_DIRTY_CAP = {"s3": 200, "dynamodb": 1000}
SWAMP_GLOBAL_POLL_S = 1.0  # acquireModelLocks sleeps a fixed 1,000 ms between looks at the global lock


def swamp_for_backend(sc: Scenario) -> Scenario:
    """The scenario with every value given as "swamp" set to swamp's for its (possibly overridden) backend."""
    from dataclasses import replace

    given, b = set(sc.datastore.swamp_values), sc.backend
    values = {"upload_concurrency": SWAMP_UPLOADS[b], "download_concurrency": SWAMP_DOWNLOADS[b],
              "dirty_path_cap": SWAMP_DIRTY_CAP[b]}
    ds = replace(sc.datastore, **{k: v for k, v in values.items() if k in given})
    lock = replace(sc.lock, backoff=swamp_backoff(b)) if "backoff" in given else sc.lock
    return replace(sc, datastore=ds, lock=lock)
