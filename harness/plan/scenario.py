"""Scenarios: TOML files in ``scenarios/``, validated on load; the run plan's largest part.

Every knob that reproduces one of the seed's bottlenecks is a field here, not a
code edit. An unknown key, a wrong type or an impossible value is a one-line
error naming the file and the key. A run parses its scenario's TOML once, where
the command builds the plan; from there the scenario travels as data
(``Scenario.to_dict`` / ``scenario_from_dict``), never as a file to parse again.

Adding an option: its field here, its parsing in ``parse``, its use where it
acts, its test and its line in ``scenarios/README.md``. Nothing passes it along
by hand: the plan carries the whole scenario to every Locust process.
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from harness.aws.fidelity.faults import FAULT_KINDS, FaultRates
from harness.aws.fidelity.latency import load_profile, parse_dist
from harness.aws.fidelity.layer import FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates
from harness.datastore.backends.dynamodb import GSI_LAYOUTS
from harness.datastore.backends.s3 import INDEX_KINDS
from harness.datastore.catalog import CATALOG_EXPORTS
from harness.datastore.lock import BACKOFFS, LockConfig, swamp_backoff
from harness.datastore.model import METHODS
from harness.datastore.sync import BOOKKEEPING, GLOBAL_LOCKS, INDEX_COMMITS, LOCK_SCOPES, SYNC_MODES
from harness.durations import parse_duration
from harness.errors import HarnessError

BACKENDS = ("dynamodb", "s3")
KINDS = ("throughput", "write-stress", "disposable")
LIFECYCLES = ("long-lived", "disposable")
NAMESPACES = ("shared", "per-worker")


@dataclass(frozen=True)
class Fleet:
    workers: int = 4
    spawn_rate: float = 4.0
    duration_s: float = 60.0
    max_iterations: int = 100_000  # per worker: every loop is bounded in count as well as time
    ramp_s: float = 0.0  # users start evenly over this long (spawn rate = workers / ramp); 0: spawn_rate decides


@dataclass(frozen=True)
class Workload:
    kind: str = "throughput"
    lifecycle: str = "long-lived"
    models_per_worker: int = 50
    methods: tuple[str, ...] = ("get_uptime", "get_memory", "get_load", "get_disk")
    payload_bytes: tuple[int, ...] = (100,)
    think_time_s: float = 0.0
    shared_models: bool = False  # every worker cycles through the same models (their paths collide)
    catalog_export: str = "compact"  # compact | swamp (every row's 28 fields, 2-space pretty JSON, as swamp writes it)


@dataclass(frozen=True)
class DatastoreSpec:
    gsi: str = "per-model"
    s3_index: str = "sharded"
    lock_scope: str = "namespace"
    namespaces: str = "per-worker"
    workers_per_namespace: int = 1  # with per-worker namespaces: how many workers share each one (and its lock)
    index_commit: str = "delta"
    prune_every: int = 0
    fencing: bool = True  # false: swamp's own commit (TTL lock, no fencing token, unconditional writes)
    sync: str = "one-lock"  # one-lock (the seed's loop) | two-phase (swamp today: per-model lock, global for commit)
    global_poll_s: float = 1.0  # two-phase: a model run polls the global lock this often before its per-model lock
    global_lock: str = "swamp"  # two-phase: swamp (S3 per namespace, DynamoDB one for all) | per-namespace (both)
    bookkeeping: str = "harness"  # harness | swamp (DynamoDB: SYNCSTATE#global every push, a registry that grows)
    upload_concurrency: int = 1  # content uploads at a time (swamp's S3: 25)
    download_concurrency: int = 1  # content downloads at a time (swamp's S3: 50; its DynamoDB: 1)
    dirty_path_cap: int = 0  # past this many dirty paths a push reads the whole index (swamp: S3 200, DynamoDB 1000)
    swamp_values: tuple[str, ...] = ()  # the keys given as "swamp": resolved again when --backend changes it

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
    safety: bool = False  # check the run's history against the final remote state; a violation fails the run


@dataclass(frozen=True)
class Pauses:
    """Stop-the-world pauses of a lock holder between push and commit (its heartbeat stops too).

    Fault injection on the client side, so they apply on every endpoint.
    """

    probability: float = 0.0  # per commit
    duration_s: float = 0.0


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_overrides(self, *, backend: str | None = None, workers: int | None = None,
                       duration_s: float | None = None, spawn_rate: float | None = None) -> Scenario:
        from dataclasses import replace

        fleet = self.fleet
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


SWAMP_UPLOADS = {"s3": 25, "dynamodb": 10}  # files written at a time (docs/swamp-today.md)
SWAMP_DOWNLOADS = {"s3": 50, "dynamodb": 1}
SWAMP_DIRTY_CAP = {"s3": 200, "dynamodb": 1000}


def swamp_for_backend(sc: Scenario) -> Scenario:
    """The scenario with every value given as "swamp" set to swamp's for its (possibly overridden) backend."""
    from dataclasses import replace

    given, b = set(sc.datastore.swamp_values), sc.backend
    values = {"upload_concurrency": SWAMP_UPLOADS[b], "download_concurrency": SWAMP_DOWNLOADS[b],
              "dirty_path_cap": SWAMP_DIRTY_CAP[b]}
    ds = replace(sc.datastore, **{k: v for k, v in values.items() if k in given})
    lock = replace(sc.lock, backoff=swamp_backoff(b)) if "backoff" in given else sc.lock
    return replace(sc, datastore=ds, lock=lock)


# ---- loading ----------------------------------------------------------------------


def scenario_dirs(extra: Sequence[str] = ()) -> list[Path]:
    """Where scenario files are looked up: ``extra`` first (``HARNESS_SCENARIOS``, read at the command line's
    edge), then the project's ``scenarios/``, then ``./scenarios``."""
    dirs = [Path(d) for d in extra if d]
    dirs.append(Path(__file__).resolve().parents[2] / "scenarios")
    dirs.append(Path.cwd() / "scenarios")
    return [d for i, d in enumerate(dirs) if d.is_dir() and d not in dirs[:i]]


def available(extra: Sequence[str] = ()) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in scenario_dirs(extra):
        for p in sorted(d.glob("*.toml")):
            found.setdefault(p.stem, p)
    return found


def resolve(name_or_path: str, extra: Sequence[str] = ()) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path:
        if not p.is_file():
            raise HarnessError(f"scenario file {name_or_path} does not exist")
        return p.resolve()
    known = available(extra)
    if name_or_path not in known:
        names = ", ".join(known) or "(none found)"
        raise HarnessError(f"unknown scenario {name_or_path!r}: choose one of {names}, or give a .toml path")
    return known[name_or_path]


def load(name_or_path: str, extra: Sequence[str] = ()) -> Scenario:
    """Parse a scenario file: the one place a run reads its TOML (the plan carries the result)."""
    path = resolve(name_or_path, extra)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None
    return parse(data, str(path), default_name=path.stem)


class _Reader:
    """Takes typed values out of one TOML table, remembering which keys were used."""

    def __init__(self, table: dict, section: str, source: str) -> None:
        if not isinstance(table, dict):
            raise HarnessError(f"{source}: [{section}] must be a table")
        self.t, self.section, self.source, self.used = table, section, source, set()

    def _where(self, key: str) -> str:
        return f"{self.source}: {self.section + '.' if self.section else ''}{key}"

    def fail(self, key: str, what: str) -> HarnessError:
        return HarnessError(f"{self._where(key)} {what}")

    def get(self, key: str, default: Any) -> Any:
        self.used.add(key)
        return self.t.get(key, default)

    def integer(self, key: str, default: int, minimum: int = 0) -> int:
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(key, f"must be an integer, got {v!r}")
        if v < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {v}")
        return v

    def integer_or_swamp(self, key: str, default: int, swamp: int, minimum: int = 0) -> int:
        """An integer, or "swamp": the value swamp's extension for this backend uses (docs/swamp-today.md)."""
        return swamp if self.get(key, default) == "swamp" else self.integer(key, default, minimum)

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(key, f"must be a number, got {v!r}")
        if v < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {v}")
        return float(v)

    def duration(self, key: str, default: float, positive: bool = True) -> float:
        v = self.get(key, default)
        try:
            s = parse_duration(v)
        except ValueError:
            raise self.fail(key, f"must be a duration like \"90s\" or \"5m\", got {v!r}") from None
        if s < 0 or (positive and s == 0):
            raise self.fail(key, f"must be a positive duration, got {v!r}")
        return s

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        v = self.get(key, default)
        if v not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {v!r}")
        return v

    def boolean(self, key: str, default: bool) -> bool:
        v = self.get(key, default)
        if not isinstance(v, bool):
            raise self.fail(key, f"must be true or false, got {v!r}")
        return v

    def string(self, key: str, default: str) -> str:
        v = self.get(key, default)
        if not isinstance(v, str):
            raise self.fail(key, f"must be a string, got {v!r}")
        return v

    def done(self) -> None:
        extra = sorted(set(self.t) - self.used)
        if extra:
            raise self.fail(extra[0], "is not a known key (check the spelling; see scenarios/README.md)")


def parse(data: dict, source: str = "<scenario>", default_name: str = "scenario") -> Scenario:
    top = _Reader(data, "", source)
    name = top.string("name", default_name)
    description = top.string("description", "")
    backend = top.choice("backend", "dynamodb", BACKENDS)
    sections = {s: _Reader(top.get(s, {}), s, source)
                for s in ("fleet", "workload", "datastore", "lock", "checks", "fidelity", "background")}
    top.done()

    f = sections["fleet"]
    workers, ramp = f.integer("workers", 4, 1), f.duration("ramp", 0.0, positive=False)
    if ramp and "spawn_rate" in f.t:
        raise f.fail("ramp", "and fleet.spawn_rate both set how fast users start: give one of them")
    fleet = Fleet(workers=workers, spawn_rate=workers / ramp if ramp else f.number("spawn_rate", 4.0, 0.01),
                  duration_s=f.duration("duration", 60.0), max_iterations=f.integer("max_iterations", 100_000, 1),
                  ramp_s=ramp)
    f.done()

    w = sections["workload"]
    kind = w.choice("kind", "throughput", KINDS)
    lifecycle = w.choice("lifecycle", "disposable" if kind == "disposable" else "long-lived", LIFECYCLES)
    if kind == "disposable" and lifecycle != "disposable":
        raise w.fail("lifecycle", "must be \"disposable\" for kind = \"disposable\"")
    methods = w.get("methods", list(Workload.methods))
    if not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods):
        raise w.fail("methods", f"must be a non-empty list of {', '.join(METHODS)}, got {methods!r}")
    payloads = w.get("payload_bytes", [100])
    if isinstance(payloads, int) and not isinstance(payloads, bool):
        payloads = [payloads]
    if (not isinstance(payloads, list) or not payloads
            or any(isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 4_000_000 for p in payloads)):
        raise w.fail("payload_bytes", f"must be a list of sizes from 1 to 4000000 bytes, got {payloads!r}")
    workload = Workload(kind=kind, lifecycle=lifecycle, models_per_worker=w.integer("models_per_worker", 50, 1),
                        methods=tuple(methods), payload_bytes=tuple(payloads),
                        think_time_s=w.duration("think_time", 0.0, positive=False),
                        shared_models=w.boolean("shared_models", False),
                        catalog_export=w.choice("catalog_export", "compact", CATALOG_EXPORTS))
    w.done()

    d = sections["datastore"]
    if d.t.get("lock_scope") == "model":
        raise d.fail("lock_scope", "\"model\" is not supported: a commit merges into the namespace's index, which "
                                   "only the namespace (or datastore) lock can fence; use \"namespace\"")
    ds = DatastoreSpec(gsi=d.choice("gsi", "per-model", GSI_LAYOUTS),
                       s3_index=d.choice("s3_index", "sharded", INDEX_KINDS),
                       lock_scope=d.choice("lock_scope", "namespace", LOCK_SCOPES),
                       namespaces=d.choice("namespaces", "per-worker", NAMESPACES),
                       workers_per_namespace=d.integer("workers_per_namespace", 1, 1),
                       index_commit=d.choice("index_commit", "delta", INDEX_COMMITS),
                       prune_every=d.integer("prune_every", 0, 0), fencing=d.boolean("fencing", True),
                       sync=d.choice("sync", "one-lock", SYNC_MODES),
                       global_poll_s=d.duration("global_poll", 1.0),
                       global_lock=d.choice("global_lock", "swamp", GLOBAL_LOCKS),
                       bookkeeping=d.choice("bookkeeping", "harness", BOOKKEEPING),
                       upload_concurrency=d.integer_or_swamp("upload_concurrency", 1, SWAMP_UPLOADS[backend], 1),
                       download_concurrency=d.integer_or_swamp("download_concurrency", 1, SWAMP_DOWNLOADS[backend],
                                                               1),
                       dirty_path_cap=d.integer_or_swamp("dirty_path_cap", 0, SWAMP_DIRTY_CAP[backend], 0),
                       swamp_values=tuple(k for k in ("upload_concurrency", "download_concurrency", "dirty_path_cap")
                                          if d.t.get(k) == "swamp")
                       + (("backoff",) if sections["lock"].t.get("backoff") == "swamp" else ()))
    d.done()
    if ds.lock_scope == "namespace" and ds.namespaces == "shared":
        raise d.fail("lock_scope", "\"namespace\" needs namespaces = \"per-worker\" (shared means one datastore lock)")
    if ds.workers_per_namespace > 1 and ds.namespaces != "per-worker":
        raise d.fail("workers_per_namespace", "needs namespaces = \"per-worker\" (shared is one namespace for all)")
    if ds.sync == "two-phase" and ds.index_commit == "full":
        raise d.fail("index_commit", "\"full\" cannot go with sync = \"two-phase\": each model commits its own "
                                     "dirty entries under its own lock (swamp commits per dirty shard); use \"delta\"")
    if ds.sync == "two-phase" and ds.gsi == "legacy" and backend == "dynamodb":
        raise d.fail("gsi", "\"legacy\" cannot go with sync = \"two-phase\" on DynamoDB: the per-model partitions "
                            "that fence a model's commit are the per-model GSI's; use \"per-model\"")
    if ds.prune_every and workload.lifecycle != "disposable":
        raise d.fail("prune_every", "only makes sense with disposable models (nothing is orphaned otherwise)")

    lk = sections["lock"]
    ttl, wait = lk.duration("ttl", 30.0), lk.duration("wait", 60.0)
    retry, cap = lk.duration("retry", 1.0), lk.duration("retry_cap", 2.0)
    backoff = lk.choice("backoff", "harness", BACKOFFS)
    lk.done()
    if wait < retry:
        raise lk.fail("wait", f"({wait:g}s) is shorter than lock.retry ({retry:g}s): a waiter would never retry")
    if cap < retry:
        raise lk.fail("retry_cap", f"({cap:g}s) is shorter than lock.retry ({retry:g}s)")
    lock = LockConfig(ttl_s=ttl, wait_s=wait, retry_s=retry, retry_cap_s=cap,
                      backoff=swamp_backoff(backend) if backoff == "swamp" else backoff)

    c = sections["checks"]
    ratio = c.number("max_failure_ratio", 1.0)
    if ratio > 1:
        raise c.fail("max_failure_ratio", f"must be between 0 and 1, got {ratio}")
    checks = Checks(max_failure_ratio=ratio, min_rate_last_window=c.number("min_rate_last_window", 0.0),
                    window_s=c.duration("window", 30.0), safety=c.boolean("safety", False))
    c.done()
    b = sections["background"]
    background = Background(items=b.integer("items", 0, 0), item_bytes=b.integer("item_bytes", 1000, 1))
    b.done()
    if background.items and backend != "dynamodb":
        raise b.fail("items", "needs backend = \"dynamodb\" (the background job writes DynamoDB items)")
    return Scenario(name=name, description=description, backend=backend, source=source, fleet=fleet,
                    workload=workload, datastore=ds, lock=lock, checks=checks,
                    fidelity=_fidelity(sections["fidelity"]), background=background)


def _fidelity(f: _Reader) -> FidelitySpec:
    mode = f.get("enabled", "auto")
    mode = {True: "on", False: "off"}.get(mode, mode) if isinstance(mode, bool) else mode
    if mode not in ("auto", "on", "off"):
        raise f.fail("enabled", f"must be true, false or \"auto\", got {mode!r}")
    capacity = f.choice("capacity", "on-demand", ("on-demand", "provisioned", "none"))
    scale = f.number("scale", 1.0, 1e-6)
    ddb = None if capacity == "none" else DynamoCapacity(
        mode=capacity, read=f.number("read_capacity", 12_000.0, 1.0), write=f.number("write_capacity", 4_000.0, 1.0),
        max_read=f.number("max_read", 0.0), max_write=f.number("max_write", 0.0),
        partition_read=f.number("partition_read", 3_000.0, 1.0),
        partition_write=f.number("partition_write", 1_000.0, 1.0),
        burst_s=f.duration("burst", 300.0), scale=scale)
    s3 = S3Rates(writes=f.number("s3_prefix_writes", 3_500.0, 1.0), reads=f.number("s3_prefix_reads", 5_500.0, 1.0),
                 scale=scale)
    latency = f.string("latency", "local")
    try:
        load_profile(latency)
    except HarnessError as e:
        raise f.fail("latency", str(e)) from None
    gsi_lag = f.string("gsi_lag", "")  # "": the latency profile's
    if gsi_lag:
        try:
            parse_dist(gsi_lag, off=True)
        except ValueError as e:
            raise f.fail("gsi_lag", str(e)) from None
    faults_table = f.get("faults", {})
    if not isinstance(faults_table, dict):
        raise f.fail("faults", "must be a table of [fidelity.faults.<Operation>] sections")
    faults = {}
    for op, rates in faults_table.items():
        r = _Reader(rates, f"fidelity.faults.{op}", f.source)
        vals = {k: r.number(k, 0.0) for k in FAULT_KINDS}
        r.done()
        if sum(vals.values()) > 1:
            raise r.fail("error_5xx", "rates add up to more than 1")
        faults[op] = FaultRates(**vals)
    cfg = FidelityConfig(enabled=mode != "off", dynamodb=ddb, s3=s3, latency=latency, faults=faults,
                         timeout_after_s=f.duration("timeout_after", 1.0),
                         probe_every_s=f.duration("probe_every", 1.0, positive=False), gsi_lag=gsi_lag)
    pr = _Reader(f.get("pauses", {}), "fidelity.pauses", f.source)
    pauses = Pauses(probability=pr.number("probability", 0.0), duration_s=pr.duration("duration", 0.0, positive=False))
    pr.done()
    if pauses.probability > 1:
        raise pr.fail("probability", f"must be between 0 and 1, got {pauses.probability}")
    if pauses.probability > 0 and pauses.duration_s <= 0:
        raise pr.fail("duration", "must be positive when probability is above 0")
    f.done()
    return FidelitySpec(mode=mode, config=cfg, pauses=pauses)


# ---- the scenario as data (the run plan's JSON) -------------------------------------


def scenario_from_dict(data: dict[str, Any]) -> Scenario:
    """The inverse of ``Scenario.to_dict``: a scenario back from the plan's JSON, without its TOML."""
    return _build(Scenario, data)


def _build(tp: Any, value: Any) -> Any:
    """``value`` (JSON) as type ``tp``: dataclasses field by field, optionals, tuples, dicts, numbers."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(inner[0], value)
    if is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        known = {f.name for f in fields(tp)}
        return tp(**{k: _build(hints[k], v) for k, v in value.items() if k in known})
    if origin is tuple:
        (item, *_) = typing.get_args(tp)
        return tuple(_build(item, v) for v in value)
    if origin is dict:
        _, item = typing.get_args(tp)
        return {k: _build(item, v) for k, v in value.items()}
    if tp is float:
        return float(value)
    return value
