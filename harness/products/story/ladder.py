"""Ladders: a story told in chapters, as data (``harness/products/story/stories/*.toml``), validated on load.

A ladder is the spec's climb written down: each chapter applies one fix (a
scenario plus overrides), runs it, and says what its run should show. The
runs are ordinary ``harness run`` plans; what a chapter expects is judged
later, from each run's own findings (``harness/products/story/expect.py``), so an
expectation here is plain data that travels into ``story.json``.

A malformed ladder is a one-line error naming the file and the key, before
anything runs: every chapter's scenario is loaded with its overrides applied
(the scenario's own validation), every latency profile and every expectation
is checked here.

Keys (see ``harness/products/story/stories/README.md``): top level ``name``, ``title``,
``description``, ``[[chapter]]``; a chapter's ``name``, ``fix``, ``expect``
and the run keys (``scenario``, ``backend``, ``workers``, ``duration``,
``latency``, ``seed``, ``overrides``, ``quick``, and the real swamp's: ``swamp_repo``, ``sync``, ``front``,
``scale``), or several
``[[chapter.run]]`` tables of run keys (the chapter's own run keys are their
defaults), each with an ``expect`` of its own beside the chapter's. A list of
``workers`` or ``backend`` makes one run per value (a chapter at N and 2N
workers; DynamoDB beside S3), and a list of ``seed`` tables one run per pre-aged
size (``grew_with_items`` compares them: a count that grows with the datastore's
age, which one run of minutes cannot show).

A real-swamp ladder (``driver = "swamp"``: ``harness story LADDER --driver swamp --swamp-repo NAME=DIR ...``)
runs each chapter's scenario on the real swamp CLI: every run names its repository template (``swamp_repo``,
one per extension version), may add a full ``swamp datastore sync --pull`` after each run (``sync``), goes
through the fidelity front (``front``) at a scaled capacity (``scale``: ``[fidelity] scale``), and is pre-aged
in swamp's own layout (``seed.layout``, ``harness.jobs.pacing.swamp_layout``). A chapter's ``why_not`` says,
with the source in swamp's code, why the real code may not show what the model's chapter (``model``) shows:
the page reads "not shown, and why" then, not a failure of the harness.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.aws.fidelity.latency import load_profile
from harness.config import scenario as scenarios
from harness.config.plan import PreAge
from harness.config.scenario import BACKENDS, Scenario
from harness.core import package_data
from harness.core.durations import parse_duration
from harness.core.errors import HarnessError
from harness.jobs.pacing.swamp_layout import ALL_LAYOUTS, model_files

STORIES_DIR = package_data.path("harness.products.story", "stories")  # package data, installed or not
DEFAULT_LADDER = "migrating-bottleneck"

BOUND_KINDS = ("lock", "step", "capacity", "partition", "generator", "stand-in", "none")
RATES = ("falling", "holds")
MORE_WORKERS = ("no faster", "faster")
BACKEND_ORDER = ("dynamodb faster", "s3 faster")
# What a run's findings can be asked (harness/products/story/expect.py judges each): per run ...
RUN_EXPECTATIONS = ("bound_by", "not_bound_by", "grew", "steady", "at_most", "explained_by", "rate", "errors",
                    "no_errors")
# ... and across a chapter's runs
CHAPTER_EXPECTATIONS = ("more_workers", "backends", "same_growth", "grew_with_items")
SWAMP_RUN_KEYS = ("swamp_repo", "sync", "front", "scale")  # a real-swamp ladder's (driver = "swamp")
RUN_KEYS = ("scenario", "backend", "workers", "duration", "latency", "seed", "overrides", "quick", *SWAMP_RUN_KEYS)
DRIVERS = ("model", "swamp")
BACKEND_NAMES = {"dynamodb": "DynamoDB items", "s3": "S3 objects"}
QUICK_KEYS = ("duration", "workers", "seed")
COUNTS = ("pull_items_read", "index_entries_written", "catalog_rows", "files_pushed", "lock_attempts",
          "read_units", "write_units")
STEPS = ("lock wait", "pull", "method", "push", "commit", "export", "delete", "prune")
# push_failed: the swamp driver (a push swamp downgraded to a warning), so a ladder of real-swamp runs can expect it
ERROR_KINDS = ("lock_timeout", "throttled", "fenced", "conflict", "timeout", "connection", "push_failed", "other")


@dataclass(frozen=True)
class SwampRun:
    """How a real-swamp chapter's run runs swamp: the template by ``--swamp-repo`` name, a full pull after each run,
    the front, and the capacity's scale (``[fidelity] scale``, already in the run's scenario)."""

    repo: str
    sync: bool = False
    front: bool = False
    scale: float | None = None

    def fidelity(self) -> dict[str, Any]:
        """The run's ``[fidelity]`` overrides: the front and the capacity's scale (said on the page)."""
        keys = {**({"front": True} if self.front else {}), **({"scale": self.scale} if self.scale else {})}
        return {"fidelity": keys} if keys else {}


@dataclass(frozen=True)
class ChapterRun:
    """One run of a chapter: a scenario with the chapter's overrides, its fleet, backend, latency and pre-ageing."""

    label: str  # unique in the chapter: names its run directory
    scenario: Scenario
    backend: str
    workers: int
    duration_s: float
    latency: str | None = None
    seed: PreAge | None = None
    expect: dict[str, Any] = field(default_factory=dict)  # this run's own expectations (beside the chapter's)
    swamp: SwampRun | None = None  # a real-swamp ladder's run: its repository, sync, front and scale


@dataclass(frozen=True)
class Chapter:
    number: int
    name: str
    fix: str
    runs: tuple[ChapterRun, ...]
    expect: dict[str, Any] = field(default_factory=dict)  # every run's, and the cross-run ones
    why_not: str = ""  # a real-swamp chapter: why swamp's code may not show it (the page's "not shown, and why")
    model: str = ""  # the model ladder's chapter this one tells again on the real code

    @property
    def slug(self) -> str:
        return f"{self.number:02d}-{slug(self.name)}"

    def run_expectations(self, run: ChapterRun) -> dict[str, Any]:
        """The per-run expectations of one run: the chapter's, then the run's own on top."""
        base = {k: v for k, v in self.expect.items() if k in RUN_EXPECTATIONS}
        return {**base, **run.expect}


@dataclass(frozen=True)
class Ladder:
    name: str
    title: str
    description: str
    source: str
    chapters: tuple[Chapter, ...]
    quick: bool = False
    driver: str = "model"  # swamp: every run on the real swamp CLI (harness story --driver swamp)

    def swamp_repos(self) -> list[str]:
        """The ``--swamp-repo`` names the chapters run on, in order of first use."""
        return list(dict.fromkeys(r.swamp.repo for c in self.chapters for r in c.runs if r.swamp))


def slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "chapter"


def available() -> dict[str, Path]:
    """The ladders, by name (file stem): the shipped ones (``harness/products/story/stories/``), then ``./stories``."""
    found: dict[str, Path] = {}
    for d in (STORIES_DIR, Path.cwd() / "stories"):
        for p in sorted(d.glob("*.toml")) if d.is_dir() else []:
            found.setdefault(p.stem, p)
    if DEFAULT_LADDER in found:  # the default first (the real-swamp ladder's name sorts before it)
        found = {DEFAULT_LADDER: found[DEFAULT_LADDER], **found}
    return found


def resolve(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or "/" in name_or_path:
        if not p.is_file():
            raise HarnessError(f"ladder file {name_or_path} does not exist (`harness story --list` shows the shipped "
                               "ladders)")
        return p.resolve()
    known = available()
    if name_or_path not in known:
        raise HarnessError(f"unknown ladder {name_or_path!r}: choose one of {', '.join(known) or '(none found)'}, "
                           "or give a .toml path")
    return known[name_or_path]


def load(name_or_path: str, *, quick: bool = False, backend: str | None = None,
         scenario_dirs: Sequence[str] = ()) -> Ladder:
    """Parse and validate a ladder (every chapter's scenario loaded with its overrides); ``quick`` takes each
    run's ``quick`` keys; ``backend`` moves every single-backend chapter to that backend."""
    path = resolve(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None
    return parse(data, str(path), default_name=path.stem, quick=quick, backend=backend, scenario_dirs=scenario_dirs)


class _Where:
    """Error messages that name the file and the key (``chapter[2].expect.grew``)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, what: str) -> HarnessError:
        return HarnessError(f"{self.source}: {key} {what}")


def _table(w: _Where, value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise w.fail(key, f"must be a table, got {value!r}")
    return value


def _unknown(w: _Where, table: dict[str, Any], known: Sequence[str], key: str, hint: str) -> None:
    extra = sorted(set(table) - set(known))
    if extra:
        raise w.fail(f"{key}.{extra[0]}" if key else extra[0], f"is not a known key ({hint}; see stories/README.md)")


def _string(w: _Where, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    v = table.get(key, default)
    if not isinstance(v, str) or (default is None and not v.strip()):
        raise w.fail(f"{where}{key}", f"must be a non-empty string, got {v!r}" if default is None
                     else f"must be a string, got {v!r}")
    return v


def parse(data: dict[str, Any], source: str = "<ladder>", *, default_name: str = "ladder", quick: bool = False,
          backend: str | None = None, scenario_dirs: Sequence[str] = ()) -> Ladder:
    w = _Where(source)
    _unknown(w, data, ("name", "title", "description", "driver", "chapter"), "", "a ladder has name, title, "
             "description, driver and [[chapter]] tables")
    name = _string(w, data, "name", "", default_name)
    title = _string(w, data, "title", "", name)
    description = _string(w, data, "description", "", "")
    driver = _string(w, data, "driver", "", "model")
    if driver not in DRIVERS:
        raise w.fail("driver", f"must be model or swamp (every chapter on the real swamp CLI), got {driver!r}")
    raw = data.get("chapter")
    if not isinstance(raw, list) or not raw or not all(isinstance(c, dict) for c in raw):
        raise w.fail("chapter", "must be one or more [[chapter]] tables")
    if backend is not None and backend not in BACKENDS:
        raise HarnessError(f"unknown backend {backend!r}: choose dynamodb or s3")
    chapters = tuple(_chapter(w, c, i + 1, quick, backend, scenario_dirs, driver) for i, c in enumerate(raw))
    names = [c.name for c in chapters]
    again = next((i for i, n in enumerate(names) if n in names[:i]), None)
    if again is not None:
        raise w.fail(f"chapter[{again + 1}].name", f"{names[again]!r} names two chapters: give each its own name")
    return Ladder(name, title, description, source, chapters, quick, driver)


def _chapter(w: _Where, c: dict[str, Any], number: int, quick: bool, backend: str | None,
             scenario_dirs: Sequence[str], driver: str = "model") -> Chapter:
    key = f"chapter[{number}]"
    _unknown(w, c, ("name", "fix", "expect", "why_not", "model", "run", *RUN_KEYS), key, "a chapter has name, fix, "
             f"expect, why_not, model, the run keys {', '.join(RUN_KEYS)}, or [[chapter.run]] tables")
    name = _string(w, c, "name", f"{key}.")
    fix = _string(w, c, "fix", f"{key}.", "")
    why_not = _string(w, c, "why_not", f"{key}.", "")
    model = _string(w, c, "model", f"{key}.", "")
    if (why_not or model) and driver != "swamp":
        raise w.fail(f"{key}.{'why_not' if why_not else 'model'}", "belongs to a real-swamp ladder (driver = "
                                                                   "\"swamp\")")
    expect = _expect(w, _table(w, c.get("expect", {}), f"{key}.expect"), f"{key}.expect", chapter=True)
    base = {k: c[k] for k in RUN_KEYS if k in c}
    subs = c.get("run")
    if subs is None:
        specs = [(base, f"{key}", {})]
    else:
        if not isinstance(subs, list) or not subs or not all(isinstance(s, dict) for s in subs):
            raise w.fail(f"{key}.run", "must be one or more [[chapter.run]] tables")
        specs = []
        for j, s in enumerate(subs):
            rk = f"{key}.run[{j + 1}]"
            _unknown(w, s, (*RUN_KEYS, "expect"), rk, f"a run has the run keys {', '.join(RUN_KEYS)} and expect")
            own = _expect(w, _table(w, s.get("expect", {}), f"{rk}.expect"), f"{rk}.expect", chapter=False)
            specs.append(({**base, **{k: v for k, v in s.items() if k != "expect"}}, rk, own))
    runs: list[ChapterRun] = []
    for spec, rk, own in specs:
        runs.extend(_runs(w, spec, rk, own, quick, backend, scenario_dirs, driver))
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise w.fail(f"{key}.run", f"two runs of the chapter are the same ({dup}): give them different scenarios, "
                                   "backends or workers")
    _cross_run_fits(w, expect, runs, key)
    return Chapter(number, name, fix, tuple(runs), expect, why_not, model)


def _runs(w: _Where, spec: dict[str, Any], key: str, expect: dict[str, Any], quick: bool, backend: str | None,
          scenario_dirs: Sequence[str], driver: str = "model") -> list[ChapterRun]:
    if "scenario" not in spec:
        raise w.fail(f"{key}.scenario", "is missing: name a scenario (see `harness scenarios`) or a .toml path")
    spec = dict(spec)
    q = _table(w, spec.pop("quick", {}), f"{key}.quick")
    _unknown(w, q, QUICK_KEYS, f"{key}.quick", f"quick may set {', '.join(QUICK_KEYS)}")
    if quick:
        spec.update(q)
    scen = _string(w, spec, "scenario", f"{key}.")
    overrides = _table(w, spec.get("overrides", {}), f"{key}.overrides")
    swamp = _swamp_run(w, spec, key, driver)
    if swamp is not None:
        overrides = _merge(overrides, swamp.fidelity())
    sc = _scenario(w, scen, overrides, f"{key}.overrides", scenario_dirs)
    backends = _listed(w, spec.get("backend", sc.backend), f"{key}.backend", str)
    for b in backends:
        if b not in BACKENDS:
            raise w.fail(f"{key}.backend", f"must be dynamodb, s3 or a list of them, got {b!r}")
    if backend is not None and len(backends) == 1:  # --backend moves a single-backend chapter, not a comparison
        backends = [backend]
    workers = _listed(w, spec.get("workers", sc.fleet.workers), f"{key}.workers", int)
    if any(n < 1 for n in workers):
        raise w.fail(f"{key}.workers", f"must be at least 1, got {workers!r}")
    try:
        duration = parse_duration(spec.get("duration", sc.fleet.duration_s))
    except ValueError:
        raise w.fail(f"{key}.duration", f"must be a duration like \"90s\", got {spec.get('duration')!r}") from None
    if duration <= 0:
        raise w.fail(f"{key}.duration", "must be positive")
    latency = spec.get("latency")
    if latency is not None and not isinstance(latency, str | dict):
        raise w.fail(f"{key}.latency", f"must be a profile name or a table of one per backend, got {latency!r}")
    if isinstance(latency, dict):
        _unknown(w, latency, BACKENDS, f"{key}.latency", "latency per backend: dynamodb, s3")
    seeds = _seeds(w, spec.get("seed"), f"{key}.seed", driver)
    out = []
    for b in backends:
        lat = latency.get(b) if isinstance(latency, dict) else latency
        if lat is not None:
            try:
                load_profile(lat)
            except HarnessError as e:
                raise w.fail(f"{key}.latency", str(e)) from None
        _seeds_fit(w, seeds, b, key, backend)
        for n in workers:
            for seed in seeds:
                label = f"{slug(sc.name)}-{b}-{n}w" + (f"-{seed.models}x{seed.versions}" if len(seeds) > 1 and seed
                                                       else "")
                own = seed if seed is not None and b == seed.backend else None
                out.append(ChapterRun(label, sc, b, n, duration, lat, own, expect, swamp))
    return out


def _seeds_fit(w: _Where, seeds: list[PreAge | None], b: str, key: str, backend: str | None) -> None:
    """Each seed pre-ages the run's own backend (``--backend`` moving a chapter drops them instead)."""
    for seed in seeds:
        writes = seed.backend if seed is not None else "dynamodb"
        if seed is not None and b != writes and backend is None:
            raise w.fail(f"{key}.seed", f"pre-ages {BACKEND_NAMES[writes]}: drop it from the {b} run (or run "
                                        f"that chapter on {writes} only)")


def _listed(w: _Where, value: Any, key: str, tp: type) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(v, bool) or not isinstance(v, tp) for v in items):
        kind = "an integer" if tp is int else "a string"
        raise w.fail(key, f"must be {kind} or a list of them, got {value!r}")
    if len(set(items)) != len(items):
        raise w.fail(key, f"lists a value twice: {value!r}")
    return list(items)


def _seeds(w: _Where, value: Any, key: str, driver: str = "model") -> list[PreAge | None]:
    """A seed table (one pre-aged size), or a list of them: one run per size, labelled ``-<models>x<versions>``
    (``grew_with_items`` compares the sizes)."""
    if not isinstance(value, list):
        return [_seed(w, value, key, driver)]
    if len(value) < 2 or not all(isinstance(v, dict) for v in value):
        raise w.fail(key, f"must be a seed table or a list of two or more (one run per pre-aged size), got {value!r}")
    seeds = [_seed(w, v, f"{key}[{i + 1}]", driver) for i, v in enumerate(value)]
    sizes = [(s.models, s.versions) for s in seeds if s is not None]
    again = next((x for i, x in enumerate(sizes) if x in sizes[:i]), None)
    if again is not None:
        raise w.fail(key, f"lists the size {again[0]} models x {again[1]} versions twice: one run per size")
    if len({s.layout for s in seeds if s is not None}) > 1:
        raise w.fail(key, "mixes layouts: every size of a chapter's runs is pre-aged in one layout")
    return seeds


def pre_aged_files(seed: PreAge) -> int:
    """How many files a pre-age writes (swamp's own layout: each model's definition, three files a version and its
    latest pointer) or, in the model's layout, the models' versions: the size a ``grew_with_items`` says."""
    if seed.layout is None:
        return seed.models * seed.versions
    return seed.models * len(model_files(0.0, 0, seed.versions, seed.models))


def _seed(w: _Where, value: Any, key: str, driver: str = "model") -> PreAge | None:
    seed = _seed_table(w, value, key)
    if seed is not None and (seed.layout is not None) != (driver == "swamp"):
        raise w.fail(f"{key}.layout", "is a real-swamp ladder's pre-age in swamp's own layout (and a real-swamp "
                     f"run needs it: swamp reads no other): one of {', '.join(ALL_LAYOUTS)}" if driver == "swamp" else
                     "belongs to a real-swamp ladder (driver = \"swamp\"): the model reads its own layout")
    return seed


def _seed_table(w: _Where, value: Any, key: str) -> PreAge | None:
    if value is None:
        return None
    t = _table(w, value, key)
    _unknown(w, t, ("models", "versions", "orphans", "layout"), key, "seed has models, versions, orphans and layout")
    vals = {}
    for k, default, low in (("models", None, 1), ("versions", 10, 1), ("orphans", 0, 0)):
        v = t.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise w.fail(f"{key}.{k}", f"must be an integer of at least {low}, got {v!r}")
        vals[k] = v
    if vals["orphans"] > vals["models"]:
        raise w.fail(f"{key}.orphans", f"({vals['orphans']}) cannot be more than seed.models ({vals['models']})")
    layout = t.get("layout")
    if layout is not None and layout not in ALL_LAYOUTS:
        raise w.fail(f"{key}.layout", f"must be one of {', '.join(ALL_LAYOUTS)} (swamp's own layout, per extension "
                                      f"version), got {layout!r}")
    if layout is not None and vals["orphans"]:
        raise w.fail(f"{key}.orphans", "must be 0 with a layout: swamp's delete leaves a model's files live, so an "
                                       "orphan's items are a live model's")
    return PreAge(vals["models"], vals["versions"], vals["orphans"], layout)


def _swamp_run(w: _Where, spec: dict[str, Any], key: str, driver: str) -> SwampRun | None:
    """A real-swamp run's keys (``swamp_repo``, ``sync``, ``front``, ``scale``), or None on a model ladder."""
    given = [k for k in SWAMP_RUN_KEYS if k in spec]
    if driver != "swamp":
        if given:
            raise w.fail(f"{key}.{given[0]}", "belongs to a real-swamp ladder (driver = \"swamp\")")
        return None
    repo = spec.get("swamp_repo")
    if not isinstance(repo, str) or not repo.strip():
        raise w.fail(f"{key}.swamp_repo", f"must name the run's repository template (given as --swamp-repo "
                                          f"NAME=DIR), got {repo!r}")
    flags = {}
    for k in ("sync", "front"):
        v = spec.get(k, False)
        if not isinstance(v, bool):
            raise w.fail(f"{key}.{k}", f"must be true or false, got {v!r}")
        flags[k] = v
    scale = spec.get("scale")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int | float) or scale <= 0):
        raise w.fail(f"{key}.scale", f"must be a positive number ([fidelity] scale: every limit times it), got "
                                     f"{scale!r}")
    return SwampRun(repo, flags["sync"], flags["front"], float(scale) if scale is not None else None)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _scenario(w: _Where, name: str, overrides: dict[str, Any], key: str, scenario_dirs: Sequence[str]) -> Scenario:
    """The chapter's scenario with its overrides, validated by the scenario's own rules (errors name the key)."""
    try:
        path = scenarios.resolve(name, scenario_dirs)
    except HarnessError as e:
        raise w.fail(key.rsplit(".", 1)[0] + ".scenario", str(e)) from None
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: malformed TOML: {e}") from None
    if not overrides:
        return scenarios.parse(data, str(path), default_name=path.stem)
    if "name" in overrides:
        raise w.fail(f"{key}.name", "cannot be overridden: the scenario keeps its name (the chapter has its own)")
    sc = scenarios.parse(_merge(data, overrides), f"{w.source}: {key} (over {path.name})", default_name=path.stem)
    from dataclasses import replace

    return replace(sc, source=str(path))


def _expect(w: _Where, e: dict[str, Any], key: str, *, chapter: bool) -> dict[str, Any]:
    known = (*RUN_EXPECTATIONS, *CHAPTER_EXPECTATIONS) if chapter else RUN_EXPECTATIONS
    _unknown(w, e, known, key, f"an expectation is one of {', '.join(known)}")
    out: dict[str, Any] = {}

    def names(k: str, choices: Sequence[str], what: str) -> list[str]:
        v = e[k]
        items = v if isinstance(v, list) else [v]
        for x in items:
            base = x.split(":", 1)[0] if k in ("bound_by", "not_bound_by") and isinstance(x, str) else x
            if not isinstance(x, str) or base not in choices:
                raise w.fail(f"{key}.{k}", f"must be {what} ({', '.join(choices)}), got {x!r}")
        return list(items)

    for k in ("bound_by", "not_bound_by"):
        if k in e:
            out[k] = names(k, BOUND_KINDS, "a list of bounds: a kind, or kind:name such as step:commit")
            for x in out[k]:
                if x.startswith("step:") and x.split(":", 1)[1] not in STEPS:
                    raise w.fail(f"{key}.{k}", f"names no step: {x!r} (steps: {', '.join(STEPS)})")
    for k in ("grew", "steady", "same_growth", "grew_with_items"):
        if k in e:
            out[k] = names(k, COUNTS, "a list of work counts")
    if "explained_by" in e:
        out["explained_by"] = names("explained_by", COUNTS, "a work count")[0]
    for k in ("errors", "no_errors"):
        if k in e:
            out[k] = names(k, ERROR_KINDS, "a list of error kinds")
    if "rate" in e:
        out["rate"] = names("rate", RATES, "one of")[0]
    if "at_most" in e:
        t = _table(w, e["at_most"], f"{key}.at_most")
        for c, v in t.items():
            if c not in COUNTS:
                raise w.fail(f"{key}.at_most.{c}", f"is not a work count ({', '.join(COUNTS)})")
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise w.fail(f"{key}.at_most.{c}", f"must be a number, got {v!r}")
        out["at_most"] = {c: float(v) for c, v in t.items()}
    if "more_workers" in e:
        out["more_workers"] = names("more_workers", MORE_WORKERS, "one of")[0]
    if "backends" in e:
        out["backends"] = names("backends", BACKEND_ORDER, "one of")[0]
    return out


def _cross_run_fits(w: _Where, expect: dict[str, Any], runs: list[ChapterRun], key: str) -> None:
    """A cross-run expectation needs the runs it compares: two fleet sizes, or both backends."""
    pairs = {(r.scenario.name, r.backend) for r in runs}
    if "more_workers" in expect and not any(
            len({r.workers for r in runs if (r.scenario.name, r.backend) == p}) > 1 for p in pairs):
        raise w.fail(f"{key}.expect.more_workers", "needs runs at two fleet sizes: give workers = [N, 2N]")
    if "grew_with_items" in expect and not any(
            len({(r.seed.models, r.seed.versions) for r in runs if r.seed is not None
                 and (r.scenario.name, r.backend, r.workers) == t}) > 1
            for t in {(r.scenario.name, r.backend, r.workers) for r in runs}):
        raise w.fail(f"{key}.expect.grew_with_items", "needs runs at two pre-aged sizes: give seed = [{models = 5, "
                                                       "...}, {models = 20, ...}]")
    both = {r.scenario.name for r in runs if r.backend == "dynamodb"} & {r.scenario.name for r in runs
                                                                            if r.backend == "s3"}
    for k in ("backends", "same_growth"):
        if k in expect and not both:
            raise w.fail(f"{key}.expect.{k}", "needs one scenario on both backends: give backend = [\"dynamodb\", "
                                               "\"s3\"]")


def describe(ladder: Ladder) -> list[str]:
    """One line per chapter: its runs (for ``harness story --list`` and the progress lines)."""
    return [f"{c.number}. {c.name}: " + "; ".join(run_line(r) for r in c.runs) for c in ladder.chapters]


def run_line(r: ChapterRun) -> str:
    seed = (f", pre-aged {r.seed.models} models x {r.seed.versions} versions"
            + (f" ({r.seed.orphans} orphaned)" if r.seed.orphans else "") if r.seed else "")
    if r.seed and r.seed.layout:
        seed += f" in {r.seed.layout}'s layout"
    lat = f", latency {r.latency}" if r.latency else ""
    real = ""
    if r.swamp:
        real = (f", the real swamp on template {r.swamp.repo}" + (", a full sync after each run" if r.swamp.sync
                                                                   else "")
                + (", through the front" if r.swamp.front else "")
                + (f", capacity x{r.swamp.scale:g}" if r.swamp.scale is not None else ""))
    return f"{r.scenario.name} on {r.backend}, {r.workers} workers, {r.duration_s:g} s{lat}{seed}{real}"
