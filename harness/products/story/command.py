"""``harness story [LADDER]``: run a ladder of chapters in order and write one narrated report.

Each chapter's runs are ordinary ``harness run`` runs (the same plan builder and
``harness.supervisor.run.run``), each in a run directory of its own inside the
story directory, each with its report; a chapter of several runs gets a
comparison too. As each chapter ends its verdict is judged from its runs' own
findings and recorded in ``story.json``, so whatever stops the story keeps the
chapters that finished: Ctrl-C records the running chapter's run (Locust
stops it as it stops ``harness run``), leaves that chapter unjudged, and the
page is written from the finished ones (after SIGTERM or SIGHUP only
``story.json``: the page is one ``harness report --story STORY_DIR`` away).

Exit codes: 0; 2 bad input (a malformed ladder names its file and key, before
anything runs); 3 with ``--strict`` when a chapter did not show what it
expected; 128 + signal when interrupted.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.config import scenario as scenarios
from harness.config.build import RunOptions, plan_run
from harness.config.plan import RunPlan
from harness.config.scenario import Scenario
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.products.product_dir import product_dir
from harness.products.story import STORY_JSON
from harness.products.story import ladder as ladders
from harness.products.story import story as stories
from harness.report.run.build import build_report
from harness.supervisor.run import run
from harness.supervisor.supervise import Interrupted, signals_raise

SWAMP_LADDER = "migrating-bottleneck-swamp"  # the spec's story told by the real swamp (--driver swamp)
OVERHEAD_S = 15.0  # per run, about: the stand-in, Locust's start and stop, the run's report (for the estimate)


@dataclass(frozen=True)
class StoryOptions:
    ladder: str = ladders.DEFAULT_LADDER
    backend: str | None = None
    quick: bool = False
    strict: bool = False
    run_dir: str | None = None
    driver: str = "model"  # swamp: a real-swamp ladder, every run on the real swamp CLI
    swamp: str | None = None  # --swamp PATH
    swamp_repos: tuple[str, ...] = ()  # --swamp-repo NAME=DIR, each
    beside: str | None = None  # --beside MODEL_STORY_DIR: the model's story, each chapter's verdict beside ours


def swamp_repos(values: Sequence[str]) -> dict[str, Path]:
    """``--swamp-repo NAME=DIR`` (repeated): each name's template, or the first thing wrong, one line."""
    out: dict[str, Path] = {}
    for v in values:
        name, sep, where = v.partition("=")
        if not sep or not name.strip() or not where.strip():
            raise HarnessError(f"--swamp-repo {v!r}: give NAME=DIR (the name a chapter's swamp_repo uses, e.g. "
                               "ddb-legacy=/tmp/realswamp/template/ddb-legacy)")
        if name in out:
            raise HarnessError(f"--swamp-repo names {name!r} twice")
        d = Path(where).expanduser()
        if not d.is_dir():
            raise HarnessError(f"--swamp-repo {name}={where}: no such directory (a swamp repository template: the "
                               "folder that holds extensions/)")
        out[name] = d.resolve()
    return out


def check_driver(lad: ladders.Ladder, opts: StoryOptions) -> dict[str, Path]:
    """The ladder and ``--driver`` agree, and every repository a chapter names is given (and no other)."""
    if opts.driver != "swamp":
        if lad.driver == "swamp":
            names = " ".join(f"--swamp-repo {n}=DIR" for n in lad.swamp_repos())
            raise HarnessError(f"ladder {lad.name!r} runs on the real swamp: add --driver swamp {names}")
        if opts.swamp or opts.swamp_repos:
            raise HarnessError("--swamp and --swamp-repo are the real swamp's: add --driver swamp")
        return {}
    if lad.driver != "swamp":
        raise HarnessError(f"--driver swamp needs a real-swamp ladder (driver = \"swamp\", e.g. "
                           f"{SWAMP_LADDER}); {lad.name!r} is the model's")
    repos = swamp_repos(opts.swamp_repos)
    needed = lad.swamp_repos()
    missing = [n for n in needed if n not in repos]
    if missing:
        raise HarnessError(f"ladder {lad.name!r} runs on swamp repository {missing[0]!r}, which no --swamp-repo "
                           f"names: give --swamp-repo {missing[0]}=DIR")
    unknown = [n for n in repos if n not in needed]
    if unknown:
        raise HarnessError(f"--swamp-repo {unknown[0]}: no chapter of {lad.name!r} runs on it (its chapters name "
                           f"{', '.join(needed)})")
    return repos


def cmd_list(say: Callable[[str], None] = print) -> int:
    """``harness story --list``: the shipped ladders, each with its chapters."""
    found = ladders.available()
    if not found:
        say("harness: no ladders shipped (stories/ is missing)")
        return 0
    for name, path in found.items():
        lad = ladders.load(str(path))
        say(f"{name:22s} {lad.title}: {len(lad.chapters)} chapters" + (f". {lad.description}" if lad.description
                                                                        else ""))
        for line in ladders.describe(lad):
            say(f"    {line}")
    return 0


def _options(r: ladders.ChapterRun, run_dir: Path) -> RunOptions:
    return RunOptions(scenario=r.scenario.source or r.scenario.name, backend=r.backend, workers=r.workers,
                      duration_s=r.duration_s, run_dir=str(run_dir), latency=r.latency, preage=r.seed)


def swamp_scenario(r: ladders.ChapterRun, swamp: str | None, repos: dict[str, Path],
                   extra: Sequence[str] = ()) -> Scenario:
    """A real-swamp chapter's run: its scenario's loop on swamp (``--driver swamp``), on the template its
    ``swamp_repo`` names, with the full sync after each run when asked (``[driver] sync``)."""
    assert r.swamp is not None
    sc = scenarios.with_swamp(scenarios.twin_for(r.scenario, "swamp", extra), swamp, str(repos[r.swamp.repo]))
    if r.swamp.sync:
        sc = replace(sc, driver=replace(sc.driver, options={**sc.driver.options, "sync": True}))
    return sc


def plan_chapter_run(r: ladders.ChapterRun, run_dir: Path, env: UserEnvironment, swamp: str | None = None,
                     repos: dict[str, Path] | None = None) -> RunPlan:
    if r.swamp is None:
        return plan_run(_options(r, run_dir), env, scenario=r.scenario)
    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    return plan_run(_options(r, run_dir), env, scenario=swamp_scenario(r, swamp, repos or {}, extra))


def static_record(ch: ladders.Chapter, story_dir: Path) -> dict[str, Any]:
    """What a chapter ran and expected, as ``story.json`` keeps it (run directories relative to the story)."""
    runs = [{"label": r.label, "run_dir": f"{ch.slug}/{r.label}", "scenario": r.scenario.name, "backend": r.backend,
             "workers": r.workers, "duration_s": r.duration_s, "latency": r.latency,
             "seed": {"models": r.seed.models, "versions": r.seed.versions, "orphans": r.seed.orphans,
                      **({"layout": r.seed.layout} if r.seed.layout else {})} if r.seed else None,
             "expect": r.expect, "line": ladders.run_line(r),
             **({"swamp": {"repo": r.swamp.repo, "sync": r.swamp.sync, "front": r.swamp.front,
                           "scale": r.swamp.scale}} if r.swamp else {})} for r in ch.runs]
    out = {"number": ch.number, "name": ch.name, "fix": ch.fix, "slug": ch.slug, "runs": runs,
           "expected": ch.expect, "comparison": f"{ch.slug}/comparison" if len(ch.runs) > 1 else None}
    if ch.why_not or ch.model:
        out.update(why_not=ch.why_not, model=ch.model)
    return out


def _say(line: str) -> None:
    """A progress line, flushed: a story runs for minutes and its lines matter as they happen, also in a log."""
    print(line, flush=True)


def cmd_story(opts: StoryOptions, env: UserEnvironment, say: Callable[[str], None] = _say) -> int:
    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    lad = ladders.load(opts.ladder, quick=opts.quick, backend=opts.backend, scenario_dirs=extra)
    repos = check_driver(lad, opts)
    record = _ladder_record(lad, opts)  # --beside checked here, before anything runs
    story_dir = product_dir("story", lad.name, opts.run_dir, opts.quick)
    for ch in lad.chapters:  # every run's plan checked before anything starts
        for r in ch.runs:
            plan_chapter_run(r, story_dir / ch.slug / r.label, env, opts.swamp, repos)
    story_dir.mkdir(parents=True, exist_ok=True)
    stories.start(story_dir, record, [c.name for c in lad.chapters])
    runs = sum(len(c.runs) for c in lad.chapters)
    load_s = sum(r.duration_s for c in lad.chapters for r in c.runs)
    say(f"harness: story {lad.title} ({'quick' if lad.quick else 'full'}): {len(lad.chapters)} chapters, {runs} runs, "
        f"{_mmss(load_s)} of load (about {_mmss(load_s + runs * OVERHEAD_S)} in all) -> {story_dir}")
    stopped: dict[str, Any] | None = None
    error: HarnessError | None = None
    with signals_raise():
        try:
            for ch in lad.chapters:
                stopped = _chapter(ch, len(lad.chapters), story_dir, env, say, opts.swamp, repos)
                if stopped:
                    break
        except Interrupted as e:  # between runs (a report being built, a stand-in starting)
            stopped = {"chapter": _current(story_dir, lad), "signal": e.name}
        except HarnessError as e:
            error = e
            stopped = {"chapter": _current(story_dir, lad), "error": str(e)}
    stories.finish(story_dir, interrupted=stopped)
    signame = (stopped or {}).get("signal")
    if signame in ("SIGTERM", "SIGHUP"):  # being shut down: the record is kept, the page is not built now
        say(f"harness: story recorded in {story_dir / STORY_JSON}; build its page with "
            f"`harness report --story {story_dir}`")
    else:
        out = stories.build(story_dir, rebuild=False)
        say(f"harness: story {out / 'index.html'}")
    data = stories.read(story_dir)
    shown = sum(1 for c in data["chapters"] if c.get("shown"))
    say(f"harness: {shown} of {len(data['chapters'])} chapters showed what they expected"
        + (f" ({len(lad.chapters) - len(data['chapters'])} not run)" if len(data["chapters"]) < len(lad.chapters)
           else ""))
    if error:
        raise error
    if signame:
        return 128 + int(getattr(signal, signame))
    if opts.strict and shown < len(data["chapters"]):
        for c in data["chapters"]:
            if not c.get("shown"):
                print(f"harness: not shown: chapter {c['number']} {c['name']}: {c['sentence']}", file=sys.stderr)
        return ExitCode.CHECKS_FAILED
    return 0


def _ladder_record(lad: ladders.Ladder, opts: StoryOptions) -> dict[str, Any]:
    """The ladder as ``story.json`` keeps it: its names, quick or not, its driver, and ``--beside``'s model story
    (checked: a model story for a real-swamp ladder), so a rebuild shows the model's verdicts again."""
    beside = stories.check_beside(opts.beside, lad.driver) if opts.beside else None
    return {"name": lad.name, "title": lad.title, "description": lad.description, "source": lad.source,
            "quick": lad.quick, "backend": opts.backend, **({"driver": lad.driver} if lad.driver != "model" else {}),
            **({"beside": str(beside)} if beside else {})}


def _current(story_dir: Path, lad: ladders.Ladder) -> str | None:
    done = {c["name"] for c in stories.read(story_dir)["chapters"]}
    return next((c.name for c in lad.chapters if c.name not in done), None)


def _chapter(ch: ladders.Chapter, total: int, story_dir: Path, env: UserEnvironment,
             say: Callable[[str], None], swamp: str | None = None,
             repos: dict[str, Path] | None = None) -> dict[str, Any] | None:
    """Run one chapter and record its verdict; what stopped it if a signal did (its runs kept, not judged)."""
    head = f"harness: chapter {ch.number}/{total} {ch.name}"
    say(f"{head}: {'; '.join(ladders.run_line(r) for r in ch.runs)}")
    for i, r in enumerate(ch.runs):
        run_dir = story_dir / ch.slug / r.label
        if len(ch.runs) > 1:
            say(f"harness:   run {i + 1}/{len(ch.runs)}: {ladders.run_line(r)} -> {run_dir}")
        res = run(plan_chapter_run(r, run_dir, env, swamp, repos), quiet=True)
        for line in res.failed_checks:
            say(f"harness:   check failed: {line}")
        if res.signal:
            say(f"{head}: stopped ({res.signal}); its runs are kept in {story_dir / ch.slug}, the chapter is not "
                "judged")
            return {"chapter": ch.name, "signal": res.signal,
                    "run_dirs": [f"{ch.slug}/{x.label}" for x in ch.runs[:i + 1]]}
        if res.rows:
            build_report([run_dir])
    static = static_record(ch, story_dir)
    record = stories.judge_chapter(story_dir, static)
    stories.save_chapter(story_dir, record)
    say(f"{head}: {record['sentence']}")  # the sentence opens with its verdict: "Shown: …" or "Not shown: …"
    return None


def _mmss(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s"
