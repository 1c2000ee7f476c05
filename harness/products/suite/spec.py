"""Benchmark suites: TOML files in ``harness/products/suite/suites/`` (shipped) or ``./suites``, one sync operation
per trial, validated on load; and their plan.

A load scenario asks how a fleet degrades over time; a suite asks what one
sync operation costs, phase by phase, on a datastore of a stated shape (swamp's
own ``datastore/benchmarks/``). Each ``[[scenario]]`` names one operation
(``push``, ``two-phase-push``, ``pull``, ``scoped-pull``), the state it starts
from (a seeded or an empty datastore, a cold or warm local cache, dirty paths,
changes another writer made) and the index layouts it applies to; a layout it
does not apply to must say why. An unknown key, a wrong type or an impossible
value is a one-line error naming the file and the key.

The suite's run plan (``suite_plan``) is a ``RunPlan`` whose scenario carries
only the backend, the layout and the latency profile, so the plan's
``Factory`` builds clients, backends and the fidelity layer exactly as for a
load run; ``layout_plan`` is that plan for one layout on one fresh table or
bucket.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.aws.fidelity.latency import load_profile
from harness.aws.fidelity.layer import FidelityConfig
from harness.config.endpoints import EMBEDDED, UNUSED, ServiceEndpoint
from harness.config.plan import Connection, LocustPlan, Resources, RunPlan, StandInPlan
from harness.config.scenario import BACKENDS, DatastoreSpec, FidelitySpec, Scenario
from harness.config.toml_reader import TomlReader as _Reader
from harness.core import package_data
from harness.core.errors import HarnessError

OPS = ("push", "two-phase-push", "pull", "scoped-pull")
PUSHES = ("push", "two-phase-push")
CACHES = ("cold", "warm")
FRESH = ("scenario", "trial")
LAYOUTS: dict[str, tuple[str, ...]] = {"s3": ("monolith", "sharded"), "dynamodb": ("legacy", "per-model")}
ALL_LAYOUTS = LAYOUTS["s3"] + LAYOUTS["dynamodb"]
BACKEND_OF = {layout: backend for backend, layouts in LAYOUTS.items() for layout in layouts}
QUICK_KEYS = ("dirty", "remote_changes", "scope_models")


@dataclass(frozen=True)
class Shape:
    """The datastore a scenario is seeded with: swamp's ``seedTestData`` (ceil(files / models) files a model)."""

    files: int = 1000
    models: int = 50
    file_bytes: int = 5120

    @property
    def per_model(self) -> int:
        return math.ceil(self.files / self.models)

    def describe(self) -> str:
        return f"{self.files} files of {self.file_bytes} B over {self.models} models"


@dataclass(frozen=True)
class SuiteScenario:
    """One swamp scenario: its operation, the state each trial starts from, where it applies."""

    number: int
    name: str
    op: str
    seeded: bool = True  # the datastore holds the suite's shape before the first trial (pushed by a writer)
    fresh: str = "scenario"  # "trial": a fresh table/bucket for every trial (and seeded again when seeded)
    cache: str = "warm"  # cold: a new local view every trial; warm: the one that seeded (push) or pulled (pull)
    dirty: int | None = 0  # paths staged before a push (None: every file of the shape)
    remote_changes: int = 0  # files another writer changes and commits before each trial (pulls)
    scope_models: int = 0  # scoped-pull: how many models (from the first) the pull is scoped to
    phases: tuple[str, ...] = ()  # report only these (and the total): swamp's phaseFilter
    layouts: tuple[str, ...] = ALL_LAYOUTS
    not_applicable: dict[str, str] = field(default_factory=dict)  # layout -> why not
    quick: dict[str, int] = field(default_factory=dict)  # --quick's values for dirty / remote_changes / scope_models
    note: str = ""  # what the harness does, where it differs from swamp's benchmark

    @property
    def key(self) -> str:
        return f"{self.number:02d}"

    def applies(self, layout: str) -> bool:
        return layout in self.layouts


@dataclass(frozen=True)
class SuiteDatastore:
    fencing: bool = True  # false: swamp's own commit (unconditional writes)
    heartbeat: bool = True  # the lock's renewals (every TTL / 3) while an operation holds it


@dataclass(frozen=True)
class Suite:
    name: str
    description: str = ""
    source: str = ""
    path: str = ""
    backend: str = "s3"
    trials: int = 5
    shape: Shape = field(default_factory=Shape)
    quick_shape: Shape = field(default_factory=lambda: Shape(100, 10, 5120))
    quick_trials: int = 2
    datastore: SuiteDatastore = field(default_factory=SuiteDatastore)
    scenarios: tuple[SuiteScenario, ...] = ()
    is_quick: bool = False

    def quick(self) -> Suite:
        """``--quick``: the small shape and its trials, each scenario with its quick values."""
        scenarios = tuple(replace(s, **s.quick) for s in self.scenarios)
        out = replace(self, shape=self.quick_shape, trials=self.quick_trials, scenarios=scenarios, is_quick=True)
        check_fits(out)
        return out

    def with_trials(self, trials: int | None) -> Suite:
        if trials is None:
            return self
        if trials < 1:
            raise HarnessError(f"--trials must be at least 1, got {trials}")
        return replace(self, trials=trials)

    def select(self, wanted: str | None) -> Suite:
        """``--scenarios 1,5,Pull 1000 files (cold)``: the scenarios named, by number or exact name."""
        if not wanted:
            return self
        picks = [w.strip() for w in wanted.split(",") if w.strip()]
        by_number = {str(s.number): s for s in self.scenarios}
        by_name = {s.name: s for s in self.scenarios}
        chosen = []
        for w in picks:
            s = by_number.get(w.lstrip("0") or "0") or by_name.get(w)
            if s is None:
                raise HarnessError(f"--scenarios: {self.name} has no scenario {w!r}: give numbers 1-"
                                   f"{max(by_number, key=int)} or exact names (see {self.path or 'the suite file'})")
            if s not in chosen:
                chosen.append(s)
        return replace(self, scenarios=tuple(sorted(chosen, key=lambda s: s.number)))

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


# ---- loading ----------------------------------------------------------------------


def suite_dirs() -> list[Path]:
    """The shipped suites (package data, ``harness/products/suite/suites/``), then ``./suites``."""
    dirs = [package_data.path("harness.products.suite", "suites"), Path.cwd() / "suites"]
    return [d for i, d in enumerate(dirs) if d.is_dir() and d not in dirs[:i]]


def available() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in suite_dirs():
        for p in sorted(d.glob("*.toml")):
            found.setdefault(p.stem, p)
    return found


def resolve(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path:
        if not p.is_file():
            raise HarnessError(f"suite file {name_or_path} does not exist")
        return p.resolve()
    known = available()
    if name_or_path not in known:
        raise HarnessError(f"unknown suite {name_or_path!r}: choose one of {', '.join(known) or '(none found)'}, "
                           "or give a .toml path")
    return known[name_or_path]


def load(name_or_path: str) -> Suite:
    path = resolve(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None
    return parse(data, str(path), default_name=path.stem)


def _shape(r: _Reader, default: Shape) -> Shape:
    shape = Shape(files=r.integer("files", default.files, 1), models=r.integer("models", default.models, 1),
                  file_bytes=r.integer("file_bytes", default.file_bytes, 1))
    if shape.models > shape.files:
        raise r.fail("models", f"({shape.models}) is more than files ({shape.files}): every model needs a file")
    return shape


def parse(data: dict, source: str = "<suite>", default_name: str = "suite") -> Suite:
    top = _Reader(data, "", source)
    name = top.string("name", default_name)
    description, origin = top.string("description", ""), top.string("source", "")
    backend = top.choice("backend", "s3", BACKENDS)
    trials = top.integer("trials", 5, 1)
    shape = _shape(_Reader(top.get("shape", {}), "shape", source), Shape())
    q = _Reader(top.get("quick", {}), "quick", source)
    quick_trials = q.integer("trials", 2, 1)
    quick_shape = _shape(q, Shape(100, 10, shape.file_bytes))
    q.done()
    d = _Reader(top.get("datastore", {}), "datastore", source)
    ds = SuiteDatastore(fencing=d.boolean("fencing", True), heartbeat=d.boolean("heartbeat", True))
    d.done()
    raw = top.get("scenario", [])
    top.done()
    if not isinstance(raw, list) or not raw:
        raise HarnessError(f"{source}: needs at least one [[scenario]]")
    scenarios = tuple(_scenario(t, i, source) for i, t in enumerate(raw))
    numbers = [s.number for s in scenarios]
    dup = next((n for n in numbers if numbers.count(n) > 1), None)
    if dup is not None:
        raise HarnessError(f"{source}: scenario number {dup} is used twice")
    suite = Suite(name=name, description=description, source=origin, path=source, backend=backend, trials=trials,
                  shape=shape, quick_shape=quick_shape, quick_trials=quick_trials, datastore=ds, scenarios=scenarios)
    check_fits(suite)
    check_fits(replace(suite, shape=quick_shape, scenarios=tuple(replace(s, **s.quick) for s in scenarios)),
               "[quick] ")
    return suite


def _scenario(table: Any, i: int, source: str) -> SuiteScenario:
    r = _Reader(table, f"scenario[{i}]", source)
    number = r.integer("number", i + 1, 1)
    name = r.string("name", "")
    if not name:
        raise r.fail("name", "must be given (swamp's scenario name)")
    r.section = f"scenario {number} ({name})"
    op = r.choice("op", "push", OPS)
    dirty = _dirty(r)
    layouts, na = _layouts(r)
    phases = r.get("phases", [])
    if not isinstance(phases, list) or any(not isinstance(p, str) for p in phases):
        raise r.fail("phases", f"must be a list of phase names, got {phases!r}")
    quick_vals = _quick(r, source)
    sc = SuiteScenario(
        number=number, name=name, op=op, seeded=r.boolean("seeded", True), fresh=r.choice("fresh", "scenario", FRESH),
        cache=r.choice("cache", "warm", CACHES), dirty=dirty, remote_changes=r.integer("remote_changes", 0, 0),
        scope_models=r.integer("scope_models", 0, 0), phases=tuple(phases), layouts=tuple(layouts),
        not_applicable=dict(na), quick=quick_vals, note=r.string("note", ""))
    r.done()
    where = f"{source}: scenario {number} ({name})"
    if sc.op in PUSHES:
        _check_push(sc, where)
    else:
        _check_pull(sc, where)
    return sc


def _dirty(r: _Reader) -> int | None:
    """``dirty``: a count of files, or ``"all"`` (None)."""
    dirty_raw = r.get("dirty", 0)
    if dirty_raw == "all":
        return None
    if isinstance(dirty_raw, int) and not isinstance(dirty_raw, bool) and dirty_raw >= 0:
        return dirty_raw
    raise r.fail("dirty", f'must be a count of files or "all", got {dirty_raw!r}')


def _layouts(r: _Reader) -> tuple[list[str], dict[str, str]]:
    """``layouts`` and ``not_applicable``: every layout is either in the list or said why it does not apply."""
    layouts = r.get("layouts", list(ALL_LAYOUTS))
    if not isinstance(layouts, list) or not layouts or any(x not in ALL_LAYOUTS for x in layouts):
        raise r.fail("layouts", f"must be a non-empty list of {', '.join(ALL_LAYOUTS)}, got {layouts!r}")
    na = r.get("not_applicable", {})
    if not isinstance(na, dict) or any(not isinstance(v, str) or not v for v in na.values()):
        raise r.fail("not_applicable", "must be a table of layout = \"why it does not apply\"")
    for layout in ALL_LAYOUTS:
        if layout not in layouts and layout not in na:
            raise r.fail("not_applicable", f"must say why the scenario does not apply to {layout} "
                                           f"(it is not in layouts)")
        if layout in layouts and layout in na:
            raise r.fail("not_applicable", f"names {layout}, which is in layouts")
    extra = sorted(set(na) - set(ALL_LAYOUTS))
    if extra:
        raise r.fail("not_applicable", f"names {extra[0]!r}, which is not a layout ({', '.join(ALL_LAYOUTS)})")
    return layouts, na


def _quick(r: _Reader, source: str) -> dict[str, int]:
    """The scenario's ``quick`` table: the values ``--quick`` uses instead."""
    quick = r.get("quick", {})
    if not isinstance(quick, dict):
        raise r.fail("quick", "must be a table of --quick values")
    qr = _Reader(quick, f"{r.section}.quick", source)
    quick_vals = {k: qr.integer(k, 0, 0) for k in QUICK_KEYS if k in quick}
    qr.done()
    return quick_vals


def _check_push(sc: SuiteScenario, where: str) -> None:
    """What a push scenario may not say."""
    if sc.remote_changes or sc.scope_models:
        raise HarnessError(f"{where}: remote_changes and scope_models are for pulls, not {sc.op}")
    if sc.cache == "cold" and sc.seeded:
        raise HarnessError(f"{where}: a cold cache cannot push into a seeded datastore (its versions would "
                           "start again at 1): use cache = \"warm\" or seeded = false")
    if sc.cache == "warm" and not sc.seeded:
        raise HarnessError(f"{where}: a warm cache needs a seeded datastore (seeded = true)")


def _check_pull(sc: SuiteScenario, where: str) -> None:
    """What a pull scenario may not say."""
    if sc.dirty:
        raise HarnessError(f"{where}: dirty is for pushes, not {sc.op}")
    if not sc.seeded:
        raise HarnessError(f"{where}: a pull needs a seeded datastore (seeded = true)")
    if sc.fresh == "trial":
        raise HarnessError(f"{where}: fresh = \"trial\" is for pushes (a pull does not change the datastore)")
    if (sc.op == "scoped-pull") != (sc.scope_models > 0):
        raise HarnessError(f"{where}: scope_models (at least 1) goes with op = \"scoped-pull\", and only there")
    if sc.cache == "cold" and sc.remote_changes:
        raise HarnessError(f"{where}: a cold cache pulls everything anyway: remote_changes needs cache = \"warm\"")


def check_fits(suite: Suite, what: str = "") -> None:
    """Every scenario's counts fit the suite's shape (dirty paths and changes are files that exist)."""
    for s in suite.scenarios:
        where = f"{suite.path or suite.name}: {what}scenario {s.number} ({s.name})"
        if s.dirty is not None and s.dirty > suite.shape.files:
            raise HarnessError(f"{where}: dirty = {s.dirty} is more than the {suite.shape.files} files of the shape "
                               "(set a smaller value in the scenario's quick table)")
        if s.remote_changes > suite.shape.files:
            raise HarnessError(f"{where}: remote_changes = {s.remote_changes} is more than the shape's files")
        if s.scope_models > suite.shape.models:
            raise HarnessError(f"{where}: scope_models = {s.scope_models} is more than the shape's "
                               f"{suite.shape.models} models")


# ---- the plan -----------------------------------------------------------------------


def suite_plan(suite: Suite, backend: str, connection: Connection, stand_in: StandInPlan, run_id: str,
               run_dir: str, latency: str | None = None) -> RunPlan:
    """The plan the suite's clients and backends are built from (one fresh table/bucket per layout plan).

    The suite sends nothing to the other backend's service: unless a variable names it, it gets no client
    and no stand-in (``harness run`` serves both from the embedded stand-in once it starts one).
    """
    if latency:
        load_profile(latency)
    other = "s3" if backend == "dynamodb" else "dynamodb"
    if connection.service(other).kind == EMBEDDED:
        connection = replace(connection, **{other: ServiceEndpoint(None, UNUSED, "none")})
    on = bool(latency) and latency != "local"
    fidelity = FidelitySpec(mode="on" if on else "off",
                            config=FidelityConfig(enabled=on, dynamodb=None, s3=None, latency=latency or "local"))
    sc = Scenario(name=suite.name, description=suite.description, backend=backend, source=suite.path,
                  datastore=DatastoreSpec(lock_scope="datastore", namespaces="shared", fencing=suite.datastore.fencing),
                  fidelity=fidelity)
    return RunPlan(run_id=run_id, run_dir=run_dir, scenario=sc, connection=connection,
                   resources=Resources.for_run(run_id), locust=LocustPlan(users=1, spawn_rate=1.0, run_time_s=None),
                   stand_in=stand_in, latency=latency or None)


def layout_plan(plan: RunPlan, layout: str, name: str) -> RunPlan:
    """``plan`` for one index layout on its own table or bucket ``name``."""
    backend = BACKEND_OF[layout]
    if backend != plan.backend:
        raise HarnessError(f"layout {layout} is {backend}'s, and this suite runs on {plan.backend}")
    ds = plan.scenario.datastore
    ds = replace(ds, gsi=layout) if backend == "dynamodb" else replace(ds, s3_index=layout)
    return replace(plan, scenario=replace(plan.scenario, datastore=ds),
                   resources=replace(plan.resources, table=name, bucket=name))
