"""Scenarios: TOML files in ``harness/config/scenarios/`` (shipped) or ``./scenarios``, validated on load; the run
plan's largest part.

Every knob that reproduces one of the spec's bottlenecks is a field here, not a
code edit. An unknown key, a wrong type or an impossible value is a one-line
error naming the file and the key. A run parses its scenario's TOML once, where
the command builds the plan; from there the scenario travels as data
(``Scenario.to_dict`` / ``scenario_from_dict``), never as a file to parse again.

Adding an option: its field here, its parsing in ``parse``, its use where it
acts, its test and its line in ``harness/config/scenarios/README.md``. Nothing passes it along
by hand: the plan carries the whole scenario to every Locust process.
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Sequence
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from harness.aws.fidelity.faults import FAULT_KINDS, FaultRates
from harness.aws.fidelity.latency import load_profile, parse_dist
from harness.aws.fidelity.layer import FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates
from harness.config.sections import (
    ARRIVALS,
    BACKENDS,
    KINDS,
    LIFECYCLES,
    NAMESPACES,
    PROCESSES,
    SWAMP_DIRTY_CAP,
    SWAMP_DOWNLOADS,
    SWAMP_GLOBAL_POLL_S,
    SWAMP_UPLOADS,
    Background,
    Checks,
    DatastoreSpec,
    DriverSpec,
    FidelitySpec,
    Fleet,
    Observe,
    Pauses,
    Scenario,
    Stage,
    Workload,
)
from harness.config.toml_reader import TomlReader as _Reader
from harness.core import package_data
from harness.core.errors import HarnessError
from harness.core.rates import parse_rate
from harness.datastore.backends.dynamodb import GSI_LAYOUTS
from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY_ADDS
from harness.datastore.backends.s3 import INDEX_KINDS
from harness.datastore.backends.s3.swamp import COMMAND_REQUESTS, COMMITS, PREPARE_READS, RETRIES, SHARDS
from harness.datastore.catalog import CATALOG_EXPORTS
from harness.datastore.lock import BACKOFFS, LockConfig, swamp_backoff
from harness.datastore.model import DATA_NAMES, METHODS
from harness.datastore.swamp_push import EXPORTS_AT, PUSH_SCOPES
from harness.datastore.sync import BOOKKEEPING, GLOBAL_LOCKS, INDEX_COMMITS, LOCK_SCOPES, SYNC_MODES
from harness.gates.expr import UNDECIDED, ThresholdSpec
from harness.gates.expr import parse as parse_threshold

# ---- loading ----------------------------------------------------------------------


def scenario_dirs(extra: Sequence[str] = ()) -> list[Path]:
    """Where scenario files are looked up: ``extra`` first (``HARNESS_SCENARIOS``, read at the command line's
    edge), then the shipped ones (``harness/config/scenarios/``), then ``./scenarios``."""
    dirs = [Path(d) for d in extra if d]
    dirs.append(package_data.path("harness.config", "scenarios"))  # package data: found installed too
    dirs.append(Path.cwd() / "scenarios")
    return [d for i, d in enumerate(dirs) if d.is_dir() and d not in dirs[:i]]


def available(extra: Sequence[str] = ()) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in scenario_dirs(extra):
        for p in sorted(d.glob("*.toml"), key=lambda p: p.stem):  # by name: namespaced before namespaced-command
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
    data = _read_toml(path)
    if "twin_of" in data:  # a twin: its model twin's sections, with its own [driver] and what it sets itself
        data = _inherit(data, path, extra)
    return parse(data, str(path), default_name=path.stem)


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None


def _inherit(data: dict, path: Path, extra: Sequence[str]) -> dict:
    """``twin_of = "namespaced"``: every section of that scenario, each key the twin sets overriding its own;
    the twin's name, description and [driver] are its own (one file per twin, the settings in one place)."""
    base_name = data["twin_of"]
    if not isinstance(base_name, str) or not base_name:
        raise HarnessError(f"{path}: twin_of must name the scenario this one is a twin of")
    local = path.parent / f"{base_name}.toml"
    base_path = local if local.is_file() else resolve(base_name, extra)
    if base_path == path:
        raise HarnessError(f"{path}: twin_of names this file itself")
    base = _read_toml(base_path)
    if "twin_of" in base:
        raise HarnessError(f"{path}: twin_of = {base_name!r} is a twin itself: name the scenario it is a twin of")
    out = {k: v for k, v in base.items() if k not in ("name", "description", "driver")}
    for key, value in data.items():
        if key == "twin_of":
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "driver":
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def driver_kinds() -> tuple[str, ...]:
    """The drivers there are: one module ``harness/load/drivers/<kind>.py`` each (listed, not imported: the plan
    sits below the drivers)."""
    folder = Path(__file__).resolve().parents[1] / "load" / "drivers"
    return tuple(sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_") and p.stem != "base"))


SWAMP = "swamp"  # the driver with swamp's loop built in: any scenario runs on it as it is


def twin_for(sc: Scenario, kind: str, extra: Sequence[str] = ()) -> Scenario:
    """``--driver KIND``: the scenario itself when it runs on that driver, else the twin its [driver] names
    (``--driver swamp``: the scenario itself, its loop run by the real swamp, named ``<name>-swamp``)."""
    if kind not in driver_kinds():
        raise HarnessError(f"unknown driver {kind!r}: choose one of {', '.join(driver_kinds())}")
    if sc.driver.kind == kind:
        return sc
    if kind == SWAMP:
        if sc.driver.kind != "model":
            raise HarnessError(f"{sc.source or sc.name}: --driver swamp runs a model scenario's loop on swamp; "
                               f"{sc.name!r} runs on the {sc.driver.kind} driver: name its model twin "
                               f"({sc.driver.twin or 'none'})")
        return as_swamp(sc, extra)
    where = sc.source or sc.name
    if not sc.driver.twin:
        raise HarnessError(f"{where}: scenario {sc.name!r} has no {kind} twin ([driver] twin = \"NAME\" names "
                           f"one): run a {kind} scenario, or drop --driver")
    local = Path(sc.source).parent / f"{sc.driver.twin}.toml" if sc.source else None
    twin = load(str(local) if local is not None and local.is_file() else sc.driver.twin, extra)
    if twin.driver.kind != kind:
        raise HarnessError(f"{where}: its twin {sc.driver.twin!r} runs on the {twin.driver.kind} driver, not "
                           f"{kind}")
    return twin


def as_swamp(sc: Scenario, extra: Sequence[str] = ()) -> Scenario:
    """A model scenario's loop on the real swamp: its fleet, namespaces, models, lifecycle and prune cadence as
    they are; its ``[datastore]`` says what swamp's datastore is (two-phase: the model's lock, the namespace's
    to commit; swamp's GSI partitions, shard keys and bookkeeping; unfenced), so the observer reads swamp's own
    table or prefix in swamp's layout (a ``legacy`` GSI stays, with its sync, which the model's checks allow
    it: the extension at bc36088a). Its twin is the
    two-phase profile of the scenario where one ships (``two-phase-<name>``), else the scenario itself."""
    try:
        twin = resolve(f"two-phase-{sc.name}", extra).stem
    except HarnessError:
        twin = sc.name
    return replace(sc, name=f"{sc.name}-swamp", datastore=swamp_datastore(sc.datastore),
                   driver=DriverSpec(kind=SWAMP, twin=twin, options={}))


def swamp_datastore(ds: DatastoreSpec) -> DatastoreSpec:
    """What swamp's datastore is, whatever the scenario's model settings (the observer reads this layout)."""
    legacy = ds.gsi == "legacy"  # webframp's extension at bc36088a: every file item under gsi1pk = "FILE"
    return replace(ds, sync=ds.sync if legacy else "two-phase", global_lock="swamp", bookkeeping="swamp",
                   fencing=False, gsi="legacy" if legacy else "swamp", s3_index="sharded", s3_shards="swamp",
                   index_commit="delta")


def with_swamp(sc: Scenario, swamp: str | None, repo: str | None) -> Scenario:
    """``--swamp PATH`` / ``--swamp-repo DIR`` into the swamp driver's ``[driver]`` keys (paths made absolute:
    the workers run elsewhere in the file system)."""
    if not swamp and not repo:
        return sc
    if sc.driver.kind != SWAMP:
        raise HarnessError(f"--swamp and --swamp-repo are the swamp driver's: add --driver swamp (scenario "
                           f"{sc.name!r} runs on the {sc.driver.kind} driver)")
    options = dict(sc.driver.options)
    if swamp:
        options["swamp"] = str(Path(swamp).expanduser().resolve()) if os.sep in swamp else swamp
    if repo:
        options["swamp_repo"] = str(Path(repo).expanduser().resolve())
    return replace(sc, driver=replace(sc.driver, options=options))


def parse(data: dict, source: str = "<scenario>", default_name: str = "scenario") -> Scenario:
    top = _Reader(data, "", source)
    name = top.string("name", default_name)
    description = top.string("description", "")
    backend = top.choice("backend", "dynamodb", BACKENDS)
    sections = {s: _Reader(top.get(s, {}), s, source)
                for s in ("fleet", "workload", "datastore", "lock", "checks", "fidelity", "background", "observe",
                          "driver")}
    top.done()
    fleet = _fleet(sections["fleet"])
    workload = _workload(sections["workload"])
    ds = _datastore(sections["datastore"], backend, workload, lock_backoff=sections["lock"].t.get("backoff"))
    lock = _lock(sections["lock"], backend)
    checks = _checks(sections["checks"])
    background = _background(sections["background"], backend)
    driver = _driver(sections["driver"])
    if driver.kind == SWAMP:  # swamp's own datastore, whatever the file's [datastore] says of the model
        ds = swamp_datastore(ds)
    return Scenario(name=name, description=description, backend=backend, source=source, fleet=fleet,
                    workload=workload, datastore=ds, lock=lock, checks=checks,
                    fidelity=_fidelity(sections["fidelity"]), background=background,
                    observe=_observe(sections["observe"]), driver=driver)


def _driver(d: _Reader) -> DriverSpec:
    """``[driver]``: its kind and twin here; the other keys are the driver's own (it checks them)."""
    kind = d.choice("kind", "model", driver_kinds())
    twin = d.string("twin", "")
    options = {k: v for k, v in d.t.items() if k not in ("kind", "twin")}
    return DriverSpec(kind=kind, twin=twin, options=options)


def _fleet(f: _Reader) -> Fleet:
    workers, ramp = f.integer("workers", 4, 1), f.duration("ramp", 0.0, positive=False)
    if ramp and "spawn_rate" in f.t:
        raise f.fail("ramp", "and fleet.spawn_rate both set how fast users start: give one of them")
    arrival = f.choice("arrival", "closed", ARRIVALS)
    rate = _rate(f, "rate")
    if arrival == "open" and not rate and not f.t.get("stages"):
        raise f.fail("arrival", "= \"open\" needs fleet.rate, e.g. rate = \"2/s\" or \"120/min\"")
    for key in ("rate", "process"):
        if arrival == "closed" and key in f.t:
            raise f.fail(key, "only applies to arrival = \"open\" (a closed fleet starts each sync after its last)")
    stages = _stages(f, arrival, workers)
    fleet = Fleet(workers=workers, spawn_rate=workers / ramp if ramp else f.number("spawn_rate", 4.0, 0.01),
                  duration_s=f.duration("duration", sum(st.duration_s for st in stages) or 60.0),
                  max_iterations=f.integer("max_iterations", 100_000, 1),
                  ramp_s=ramp, arrival=arrival, rate_per_s=rate, process=f.choice("process", "poisson", PROCESSES),
                  stages=stages)
    f.done()
    if arrival == "open" and not fleet.rate_at(0.0):
        raise f.fail("rate", "is needed: the first stage gives no rate, so the open fleet would start with none")
    return fleet


def _rate(r: _Reader, key: str) -> float:
    """A rate key's arrivals per second; 0.0 when it is not given."""
    value = r.get(key, None)
    if value is None:
        return 0.0
    try:
        return parse_rate(value)
    except ValueError as e:
        raise r.fail(key, f"must be a rate like \"2/s\" or \"120/min\": {e}") from None


def _stages(f: _Reader, arrival: str, workers_before: int) -> tuple[Stage, ...]:
    """``[[fleet.stages]]``: each a duration and the users (closed or open) or the arrival rate (open) to hold.

    A stage that gives no users keeps the last stage's (the fleet's for the first): resolved here, so a test's
    user count (Locust's -u, the stages' peak) never stands in for it.
    """
    table = f.get("stages", [])
    if not isinstance(table, list):
        raise f.fail("stages", "must be an array of tables: [[fleet.stages]] with duration and workers or rate")
    out = []
    for i, t in enumerate(table):
        r = _Reader(t, f"fleet.stages[{i}]", f.source)
        workers, rate = r.integer("workers", 0, 0), _rate(r, "rate")
        stage = Stage(duration_s=r.duration("duration", 0.0), workers=workers, rate_per_s=rate)
        r.done()
        if rate and arrival != "open":
            raise r.fail("rate", "needs fleet.arrival = \"open\" (a closed fleet has no arrival rate)")
        workers_before = workers or workers_before
        out.append(Stage(stage.duration_s, workers_before, stage.rate_per_s))
    return tuple(out)


def _workload(w: _Reader) -> Workload:
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
                        catalog_export=w.choice("catalog_export", "compact", CATALOG_EXPORTS),
                        data_name=w.choice("data_name", "method", DATA_NAMES))
    w.done()
    return workload


def _datastore(d: _Reader, backend: str, workload: Workload, lock_backoff: Any) -> DatastoreSpec:
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
                       global_poll_s=SWAMP_GLOBAL_POLL_S if d.get("global_poll", None) == "swamp"
                       else d.duration("global_poll", SWAMP_GLOBAL_POLL_S),
                       global_lock=d.choice("global_lock", "swamp", GLOBAL_LOCKS),
                       bookkeeping=d.choice("bookkeeping", "harness", BOOKKEEPING),
                       upload_concurrency=d.integer_or_swamp("upload_concurrency", 1, SWAMP_UPLOADS[backend], 1),
                       download_concurrency=d.integer_or_swamp("download_concurrency", 1, SWAMP_DOWNLOADS[backend],
                                                               1),
                       dirty_path_cap=d.integer_or_swamp("dirty_path_cap", 0, SWAMP_DIRTY_CAP[backend], 0),
                       push_scope=d.choice("push_scope", "changed", PUSH_SCOPES),
                       export_at=d.choice("export_at", "after-commit", EXPORTS_AT),
                       registry_adds=d.choice("registry_adds", "one", REGISTRY_ADDS),
                       s3_shards=d.choice("s3_shards", "model", SHARDS),
                       s3_commit=d.choice("s3_commit", "harness", COMMITS),
                       prepare_index_read="all" if d.get("prepare_index_read", None) == "swamp"
                       else d.choice("prepare_index_read", "none", PREPARE_READS),
                       s3_command_requests=d.choice("s3_command_requests", "none", COMMAND_REQUESTS),
                       retries=d.choice("retries", "harness", RETRIES),
                       swamp_values=tuple(k for k in ("upload_concurrency", "download_concurrency", "dirty_path_cap")
                                          if d.t.get(k) == "swamp")
                       + (("backoff",) if lock_backoff == "swamp" else ()))
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
    if ds.registry_adds == "swamp" and ds.bookkeeping != "swamp":
        raise d.fail("registry_adds", "is how swamp's bookkeeping writes its registry: needs bookkeeping = \"swamp\"")
    if ds.export_at == "swamp" and ds.sync != "two-phase":
        raise d.fail("export_at", "\"swamp\" is the export inside two-phase's commit: needs sync = \"two-phase\"")
    if ds.s3_shards == "swamp" and ds.s3_index != "sharded":
        raise d.fail("s3_shards", "\"swamp\" is the keys of swamp's shards: needs s3_index = \"sharded\"")
    if ds.prune_every and workload.lifecycle != "disposable":
        raise d.fail("prune_every", "only makes sense with disposable models (nothing is orphaned otherwise)")
    return ds


def _lock(lk: _Reader, backend: str) -> LockConfig:
    ttl, wait = lk.duration("ttl", 30.0), lk.duration("wait", 60.0)
    retry, cap = lk.duration("retry", 1.0), lk.duration("retry_cap", 2.0)
    backoff = lk.choice("backoff", "harness", BACKOFFS)
    lk.done()
    if wait < retry:
        raise lk.fail("wait", f"({wait:g}s) is shorter than lock.retry ({retry:g}s): a waiter would never retry")
    if cap < retry:
        raise lk.fail("retry_cap", f"({cap:g}s) is shorter than lock.retry ({retry:g}s)")
    return LockConfig(ttl_s=ttl, wait_s=wait, retry_s=retry, retry_cap_s=cap,
                      backoff=swamp_backoff(backend) if backoff == "swamp" else backoff)


def _checks(c: _Reader) -> Checks:
    ratio = c.number("max_failure_ratio", 1.0)
    if ratio > 1:
        raise c.fail("max_failure_ratio", f"must be between 0 and 1, got {ratio}")
    checks = Checks(max_failure_ratio=ratio, min_rate_last_window=c.number("min_rate_last_window", 0.0),
                    window_s=c.duration("window", 30.0), max_p99_wait_s=c.duration("max_p99_wait", 0.0, False),
                    safety=c.boolean("safety", False), thresholds=_thresholds(c),
                    undecided=c.choice("undecided", "pass", UNDECIDED), dead_endpoint=c.boolean("dead_endpoint", True),
                    allow_lost_workers=c.boolean("allow_lost_workers", False))
    c.done()
    return checks


def _thresholds(c: _Reader) -> tuple[ThresholdSpec, ...]:
    """``thresholds = ["p95(commit_ms) < 200ms", { check = "...", abort = true }]``, each parsed now."""
    items = c.get("thresholds", [])
    if not isinstance(items, list):
        raise c.fail("thresholds", "must be a list of expressions, e.g. [\"p95(commit_ms) < 200ms\"]")
    out = []
    for i, item in enumerate(items):
        where = f"{c.source}: checks.thresholds[{i}]"
        if isinstance(item, dict):
            r = _Reader(item, f"checks.thresholds[{i}]", c.source)
            spec = ThresholdSpec(r.string("check", ""), r.boolean("abort", False))
            r.done()
        else:
            spec = ThresholdSpec(item)
        parse_threshold(spec.check, where, spec.abort)  # malformed: one line, before anything starts
        out.append(spec)
    return tuple(out)


def _background(b: _Reader, backend: str) -> Background:
    background = Background(items=b.integer("items", 0, 0), item_bytes=b.integer("item_bytes", 1000, 1))
    b.done()
    if background.items and backend != "dynamodb":
        raise b.fail("items", "needs backend = \"dynamodb\" (the background job writes DynamoDB items)")
    return background


MIN_OBSERVE_S = 1.0


def _observe(o: _Reader) -> Observe:
    """``[observe]``: ``every`` a duration of at least 1 s or "off"; the layout keys take [datastore]'s names."""
    every = o.get("every", "10s")
    every_s = 0.0 if every == "off" else o.duration("every", 10.0)
    if every != "off" and every_s < MIN_OBSERVE_S:
        raise o.fail("every", f"must be at least 1s (or \"off\"), got {every!r}: each sample reads the "
                              "datastore, and the interval is also its budget's")
    share = o.number("share", 0.05)
    if not 0 < share <= 1:
        raise o.fail("share", f"must be above 0 and at most 1 (a share of the table's read capacity), got {share}")
    rate = _rate(o, "rate") or Observe.rate_per_s  # 0.0: not given
    observe = Observe(otel=o.boolean("otel", False), every_s=every_s, share=share, rate_per_s=rate,
                      gsi=_layout(o, "gsi", GSI_LAYOUTS),
                      s3_index=_layout(o, "s3_index", INDEX_KINDS), s3_shards=_layout(o, "s3_shards", SHARDS))
    o.done()
    return observe


def _layout(o: _Reader, key: str, names: tuple[str, ...]) -> str:
    """A layout the observer reads instead of [datastore]'s: one of the names [datastore] takes ("" when unset)."""
    value = o.get(key, "")
    if value != "" and value not in names:
        raise o.fail(key, f"is not a layout the observer can read: choose one of {', '.join(names)} (the names "
                          f"[datastore] {key} takes), got {value!r}")
    return value


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
                         probe_every_s=f.duration("probe_every", 1.0, positive=False), gsi_lag=gsi_lag,
                         spike_s=f.duration("spike", 1.0))
    pr = _Reader(f.get("pauses", {}), "fidelity.pauses", f.source)
    pauses = Pauses(probability=pr.number("probability", 0.0), duration_s=pr.duration("duration", 0.0, positive=False),
                    at_s=pr.duration("at", 0.5, positive=False))
    pr.done()
    if pauses.probability > 1:
        raise pr.fail("probability", f"must be between 0 and 1, got {pauses.probability}")
    if pauses.probability > 0 and pauses.duration_s <= 0:
        raise pr.fail("duration", "must be positive when probability is above 0")
    front = f.boolean("front", False)
    f.done()
    return FidelitySpec(mode=mode, config=cfg, pauses=pauses, front=front)


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
