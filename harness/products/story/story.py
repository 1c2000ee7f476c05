"""A story directory: ``story.json``, each chapter's run directories, and the narrated page built from them.

``harness story`` records each chapter here as it finishes (``save_chapter``), and ``harness report
STORY_DIR`` rebuilds the page from the directory alone (``build``): each run's own report, each chapter's
comparison, the verdicts (``expect.py``), the figures and ``index.html``. A chapter's record keeps
what it expected and which runs it made, so a rebuilt story judges the same runs by the same expectations.

Layout (run directories relative to the story directory)::

    STORY_DIR/story.json, index.html, figures/*.png
    STORY_DIR/01-legacy-gsi/legacy-gsi-dynamodb-4w/        a run directory (run.json, iterations/, report/)
    STORY_DIR/02-.../shared-lock-dynamodb-6w/, .../shared-lock-dynamodb-12w/, .../comparison/
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError
from harness.products.story import STORY_JSON
from harness.products.story import figures as story_figures
from harness.products.story import numbers as story_numbers
from harness.products.story import page as story_page
from harness.record.reader import read_rows, shard_paths
from harness.report.load import COUNT_COLUMNS, STEP_COLUMNS
from harness.report.run.build import build_report, run_summary
from harness.report.show import figures_dir, read_record, write_record

SCHEMA = 1
STATIC_KEYS = ("number", "name", "fix", "slug", "runs", "expected", "comparison", "why_not", "model")


def is_story(path: str | Path) -> bool:
    return (Path(path) / STORY_JSON).is_file()


def read(story_dir: str | Path) -> dict[str, Any]:
    return read_record(Path(story_dir) / STORY_JSON, SCHEMA, "story")


def write(story_dir: str | Path, data: dict[str, Any]) -> Path:
    return write_record(Path(story_dir) / STORY_JSON, data)


def start(story_dir: str | Path, ladder: dict[str, Any], chapters: list[str]) -> None:
    """A new story: its ladder, and every chapter still to run."""
    write(story_dir, {"schema": SCHEMA, "ladder": ladder, "status": "running",
                      "started_at": _now(), "ended_at": None, "chapters": [], "not_run": list(chapters),
                      "interrupted": None})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def save_chapter(story_dir: str | Path, record: dict[str, Any]) -> None:
    data = read(story_dir)
    data["chapters"] = [c for c in data["chapters"] if c["number"] != record["number"]] + [record]
    data["chapters"].sort(key=lambda c: c["number"])
    data["not_run"] = [n for n in data["not_run"] if n != record["name"]]
    write(story_dir, data)


def finish(story_dir: str | Path, *, interrupted: dict[str, Any] | None = None) -> None:
    data = read(story_dir)
    data.update(status="interrupted" if interrupted else "finished", ended_at=_now(), interrupted=interrupted)
    write(story_dir, data)


# ---- judging a chapter from its runs -------------------------------------------------------------------


def _comparison(story_dir: Path, static: dict[str, Any], rebuild: bool) -> dict[str, Any] | None:
    rel = static.get("comparison")
    if not rel:
        return None
    out = story_dir / rel
    path = out / "summary.json"
    if rebuild or not path.is_file():
        build_report([story_dir / r["run_dir"] for r in static["runs"]], out)
    return json.loads(path.read_text()).get("comparison")


def judge_chapter(story_dir: str | Path, static: dict[str, Any], rebuild: bool = False) -> dict[str, Any]:
    """The chapter's record: its static part (what it ran, what it expected) and the verdict from its runs."""
    story_dir = Path(story_dir)
    findings: dict[str, dict[str, Any]] = {}
    for r in static["runs"]:
        s = run_summary(story_dir / r["run_dir"], rebuild)
        if s is not None:
            findings[r["label"]] = s["runs"][0]["findings"]
    complete = len(findings) == len(static["runs"])
    comparison = _comparison(story_dir, static, rebuild) if complete and len(static["runs"]) > 1 else None
    slopes = None
    counts = static["expected"].get("same_growth")
    if counts:
        slopes = {}
        for r in static["runs"]:
            if r["label"] in findings:
                rows = read_rows(story_dir / r["run_dir"], ["user", "iteration", "ok", *counts])
                slopes[r["label"]] = {"scenario": r["scenario"], "backend": r["backend"],
                                      **story_numbers.growth_per_iteration(rows, counts)}
    levels = None
    with_items = static["expected"].get("grew_with_items")
    if with_items:  # each run's counts per iteration at its pre-aged size
        levels = {r["label"]: {**story_numbers.size_of(r), **story_numbers.values_per_iteration(
                      read_rows(story_dir / r["run_dir"], ["ok", *with_items]), with_items)}
                  for r in static["runs"] if r["label"] in findings}
    return story_numbers.judge({k: static[k] for k in STATIC_KEYS if k in static}, findings, comparison, slopes,
                               levels)


# ---- the page --------------------------------------------------------------------------------------------


def _series(story_dir: Path, c: dict[str, Any], counts: list[str], steps: list[str]) -> list[dict[str, Any]]:
    out = []
    rates = {x["run"]: x for x in c["rates"]}
    bounds = {x["run"]: x for x in c["bound_by"]}
    for r in c["runs"]:
        d = story_dir / r["run_dir"]
        if r["label"] not in rates or not shard_paths(d):
            continue
        info = json.loads((d / "run.json").read_text())
        rows = read_rows(d, ["ts_start", "ts_end", "ok", "user", "total_ms", *COUNT_COLUMNS, *STEP_COLUMNS])
        s = story_numbers.run_series(info, rows, counts, steps)
        summary = json.loads((d / "report" / "summary.json").read_text())["runs"][0]["findings"]
        lv = summary["fleet"]["levels"]
        s.update(label=r["label"], short=story_numbers._short(r["label"], c["runs"]) if len(c["runs"]) > 1 else "",
                 start=rates[r["label"]]["start"], start_level=lv[0], floor_level=lv[summary["fleet"]["floor_index"]],
                 segments=story_numbers.bound_segments(summary), bound=bounds[r["label"]])
        out.append(s)
    return out


def build(story_dir: str | Path, out: str | Path | None = None, *, rebuild: bool = True) -> Path:
    """Judge every recorded chapter again from its runs and write ``story.json``, the figures and ``index.html``.

    ``rebuild`` rebuilds each run's own report and each comparison first (``harness report --story STORY_DIR``);
    without it, reports already there are read as they are (``harness story`` has just built them).
    """
    story_dir = Path(story_dir)
    data = read(story_dir)
    out_dir = Path(out) if out else story_dir
    fig_dir = figures_dir(out_dir)
    chapters = [judge_chapter(story_dir, c, rebuild) for c in data["chapters"]]
    data["chapters"] = chapters
    drawn, chapter_figs, links = [], {}, {}
    for c in chapters:
        counts, steps = story_numbers.figure_counts(c), story_numbers.figure_steps(c)
        series = _series(story_dir, c, counts, steps)
        if series:
            drawn.append({"number": c["number"], "runs": series})
            name = f"chapter-{c['number']:02d}.png"
            story_figures.chapter_figure(f"{c['number']}. {c['name']}", series, counts, steps, fig_dir / name)
            chapter_figs[c["number"]] = f"figures/{name}"
        links[c["number"]] = _links(story_dir, out_dir, c)
    figures: dict[str, str] = {}
    if drawn:
        story_figures.story_rate(drawn, fig_dir / "story_rate.png")
        story_figures.story_bound(drawn, fig_dir / "story_bound.png")
        figures = {"figures/story_rate.png": "successful iterations per second of every run, chapter after chapter "
                                             "(numbers on top), start and floor levels marked",
                   "figures/story_bound.png": "what bound the fleet in each segment of each run, and how busy it was "
                                              "(the report's own finding, 95 % interval as a line)"}
    beside = data["ladder"].get("beside")
    if beside:
        _beside(chapters, Path(beside), out_dir)
    rows = story_numbers.closing_rows(chapters)
    data["closing"] = rows
    data["shown"] = sum(1 for c in chapters if c["shown"])
    data["not_shown"] = [c["name"] for c in chapters if not c["shown"]]
    (out_dir / "index.html").write_text(story_page.page(data, chapters, rows, figures, chapter_figs, links))
    write(out_dir, data)
    return out_dir


def check_beside(where: str, driver: str) -> Path:
    """``--beside MODEL_STORY_DIR``: a story directory of the model's ladder, for a real-swamp ladder's page."""
    d = Path(where).expanduser()
    if driver != "swamp":
        raise HarnessError("--beside shows a real-swamp ladder's chapters beside the model's: add --driver swamp "
                           "and a real-swamp ladder")
    if not is_story(d):
        raise HarnessError(f"--beside {where}: not a story directory (no {STORY_JSON}; `harness story "
                           "migrating-bottleneck` makes one)")
    if read(d)["ladder"].get("driver", "model") != "model":
        raise HarnessError(f"--beside {where}: a real-swamp story; give a story of the model's ladder")
    return d.resolve()


def _beside(chapters: list[dict[str, Any]], model_dir: Path, out_dir: Path) -> None:
    """Each real-code chapter gets the verdict of the model's chapter it tells again (``beside``): shown or not,
    its sentence and a link to it; a chapter the model's story did not judge says so."""
    model = {c["name"]: c for c in read(model_dir)["chapters"]} if is_story(model_dir) else {}
    page = os.path.relpath(model_dir / "index.html", out_dir)
    for c in chapters:
        name = c.get("model")
        if not name:
            continue
        m = model.get(name)
        c["beside"] = ({"name": name, "judged": False, "story": str(model_dir)} if m is None else
                       {"name": name, "judged": True, "shown": bool(m.get("shown")), "sentence": m.get("sentence", ""),
                        "href": f"{page}#chapter-{m['number']}", "story": str(model_dir)})


def _links(story_dir: Path, out_dir: Path, c: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for r in c["runs"]:
        p = story_dir / r["run_dir"] / "report" / "index.html"
        if p.is_file():
            out.append((r["label"], os.path.relpath(p, out_dir)))
    if c.get("comparison") and (story_dir / c["comparison"] / "index.html").is_file():
        out.append(("comparison", os.path.relpath(story_dir / c["comparison"] / "index.html", out_dir)))
    return out
