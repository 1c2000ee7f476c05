"""The run directories under ``runs/`` (or ``--runs-dir``), each as what it is, newest first.

Fast with hundreds of runs: a run is read from its ``report/summary.json`` (the findings its report
computed) and ``run.json``, never its rows; a ``--no-report`` run, which has no summary, from ``run.json``
alone (its rate is rows over the span, failures included, and its checks are not judged). The rules:

- a **run** (``run.json`` + ``iterations/``): one entry;
- a **web session** (``run.json`` with ``session``): each of its tests (``SESSION/tests/NNN``) is a run entry;
  the session itself is not one;
- a **story** (``story.json``), **sweep** (``sweep.json``) and **climb** (``climb.json``) directory: one
  entry each, with its own verdict (chapters shown, the fitted peak, where the wait grows without bound);
  the runs inside are theirs (``--runs-dir STORY_DIR`` lists them one by one);
- an **explore** directory (``runs/explore-*``, ``explore.json``): one entry, its violating schedules;
- a **suite** run (``suite-run.json``): one entry, its scenarios and phases;
- ``runs/jobs`` (the job journal: ``harness jobs list``), ``runs/seeds`` (seeded catalogs) and report folders
  (``comparison-*``, ``trend-*``) are no runs: skipped. Any other folder is looked into (four levels deep).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SKIPPED = {"jobs", "seeds", "report", "iterations", "history", "figures", "seed-state", ".ipynb_checkpoints"}
SKIPPED_PREFIXES = ("comparison-", "trend-")
DEPTH = 4


@dataclass
class Entry:
    """One line of the history."""

    path: Path
    kind: str  # run, story, sweep, climb, explore, suite
    started_at: datetime | None
    scenario: str | None = None
    backend: str | None = None
    workers: int | None = None
    rate: float | None = None  # successful iterations a second (a --no-report run: rows a second, marked)
    verdict: str = ""  # a run's: how its rate moved (or "too short to judge"); a product's own verdict
    checks: str = ""
    outcome: str = ""  # a run's: completed, interrupted, stopped early, did not complete (with when and why)
    bound: str = ""  # a run's: what bound the fleet, and where it moved
    reported: bool = True
    findings: dict[str, Any] | None = field(default=None, repr=False)  # a run's, for the trend

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "kind": self.kind,
                "started_at": self.started_at.isoformat() if self.started_at else None, "scenario": self.scenario,
                "backend": self.backend, "workers": self.workers, "rate": self.rate, "outcome": self.outcome,
                "verdict": self.verdict, "bound": self.bound, "checks": self.checks, "reported": self.reported}


def _when(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return None


def run_entry(d: Path, info: dict[str, Any], kind: str = "run", findings: bool = False) -> Entry:
    """A run from its summary.json (a --no-report run: run.json alone), in its outcome's words
    (``harness/record/outcome.py``: its report's first screen says the same). The outcome is recomputed from
    run.json and the findings, since run.json may learn more after the report (a web test's failed part)."""
    from harness.record import outcome

    e = Entry(d, kind, _when(info.get("started_at")), info.get("scenario_name"), info.get("backend"),
              (info.get("fleet") or {}).get("workers"))
    summary = _json(d / "report" / "summary.json")
    f = ((summary or {}).get("runs") or [{}])[0].get("findings") if summary else None
    o = outcome.of(info, f or None)
    e.outcome, e.checks = o.completion_short, o.checks
    if not f:
        e.reported = False
        seconds = _seconds(info)
        rows = info.get("rows_written")
        e.rate = rows / seconds if seconds and rows is not None else None
        e.verdict = f"no report: {_report_hint(d)}"
        return e
    e.rate = f["successes"] / f["duration_s"] if f.get("duration_s") else None
    sf = f.get("safety")
    e.verdict = (o.rate or "") + (f"; safety {sf.get('violations')} violations" if sf else "")
    e.bound = o.bound or ""
    if findings:
        e.findings = f
    return e


def _report_hint(d: Path) -> str:
    """The command that builds the run's report, only when it would: a run without an intact shard has none."""
    from harness.record.reader import first_intact

    if first_intact(d) is None:
        return "no intact iteration rows to report"
    return f"`harness report {d}`"


def _seconds(info: dict[str, Any]) -> float | None:
    a, b = _when(info.get("started_at")), _when(info.get("ended_at"))
    return (b - a).total_seconds() if a and b and b > a else None


def story_entry(d: Path) -> Entry:
    s = _json(d / "story.json") or {}
    chapters = s.get("chapters") or []
    shown = sum(1 for c in chapters if c.get("shown"))
    ladder = (s.get("ladder") or {}).get("name")
    verdict = f"{shown} of {len(chapters)} chapters shown" + (f", {len(s['not_run'])} not run" if s.get("not_run")
                                                                else "")
    return Entry(d, "story", _when(s.get("started_at")) or _mtime(d / "story.json"), ladder, None, None, None,
                 f"{s.get('status', '?')}: {verdict}", "")


def sweep_entry(d: Path) -> Entry:
    s = _json(d / "sweep.json") or {}
    meta, fit = s.get("sweep") or {}, s.get("fit") or {}
    sizes = s.get("sizes") or []
    peak = fit.get("peak_workers")
    verdict = (f"{len(sizes)} sizes; USL peak at {peak:.0f} workers" if peak else
               f"{len(sizes)} sizes; {fit.get('note') or 'no peak within reach'}")
    best = max((x.get("rate") or 0 for x in sizes), default=None)
    return Entry(d, "sweep", _when(meta.get("started_at")) or _mtime(d / "sweep.json"), meta.get("scenario"),
                 meta.get("backend"), None, best, verdict, "")


def climb_entry(d: Path) -> Entry:
    c = _json(d / "climb.json") or {}
    closed = _json(d / "closed" / "run.json") or {}
    return Entry(d, "climb", _when(closed.get("started_at")) or _mtime(d / "climb.json"),
                 closed.get("scenario_name"), closed.get("backend"), (closed.get("fleet") or {}).get("workers"),
                 c.get("closed_per_s"), c.get("sentence") or f"{len(c.get('steps') or [])} steps", "")


def explore_entry(d: Path) -> Entry:
    x = _json(d / "explore.json") or {}
    targets = x.get("targets") or []
    return Entry(d, "explore", _mtime(d / "explore.json"), None, ",".join(sorted({t.split("/")[0] for t in targets})),
                 None, None, f"{x.get('violating', '?')} violating of {x.get('explored', '?')} schedules",
                 "FAILED" if x.get("violating") else "passed")


def suite_entry(d: Path) -> Entry:
    info = _json(d / "suite-run.json") or {}
    s = _json(d / "suite.json") or {}
    results = s.get("results") or []
    return Entry(d, "suite", _when(info.get("started_at")) or _mtime(d / "suite-run.json"),
                 info.get("suite") or s.get("suite"), info.get("backend") or s.get("backend"), None, None,
                 f"{len({r.get('scenario') for r in results})} scenarios, {len(results)} phases measured", "")


PRODUCTS = (("story.json", story_entry), ("sweep.json", sweep_entry), ("climb.json", climb_entry),
            ("explore.json", explore_entry), ("suite-run.json", suite_entry))  # the file that marks each


def entries(root: str | Path, findings: bool = False) -> list[Entry]:
    """Every entry under ``root`` (itself included), newest first (undated ones last)."""
    out: list[Entry] = []
    _walk(Path(root), DEPTH, out, findings)
    epoch = datetime.min.replace(tzinfo=UTC)
    out.sort(key=lambda e: (e.started_at or epoch, str(e.path)), reverse=True)
    return out


def _walk(d: Path, depth: int, out: list[Entry], findings: bool) -> None:
    try:
        names = set(os.listdir(d))
    except OSError:
        return
    product = next((read for marker, read in PRODUCTS if marker in names), None)
    if product is not None:  # a story, sweep, climb, explore or suite directory: one entry, its runs its own
        out.append(product(d))
        return
    if "run.json" in names:
        info = _json(d / "run.json")
        if info is not None and info.get("session"):
            for t in info.get("tests") or []:
                td = d / t.get("dir", "")
                ti = _json(td / "run.json")
                if ti is not None:
                    out.append(run_entry(td, ti, "web test", findings))
            return
        if info is not None and "iterations" in names:
            out.append(run_entry(d, info, "run", findings))
            return
    if depth == 0:
        return
    for name in sorted(names):
        if name in SKIPPED or name.startswith(SKIPPED_PREFIXES) or name.startswith("."):
            continue
        p = d / name
        if p.is_dir():
            _walk(p, depth - 1, out, findings)


def select(found: list[Entry], scenario: str | None = None, since: datetime | None = None) -> list[Entry]:
    return [e for e in found if (scenario is None or e.scenario == scenario)
            and (since is None or (e.started_at is not None and e.started_at >= since))]


WIDEST = {"outcome": 64, "verdict": 60, "bound": 60}  # longer cells end in "…" (--json has them whole)


def lines(found: list[Entry], root: Path) -> list[str]:
    """The table ``harness runs`` prints: one line per entry, paths relative to the runs directory."""
    head = ["started (UTC)", "kind", "scenario", "backend", "workers", "rate it/s", "outcome", "verdict", "bound",
            "checks", "path"]
    rows = []
    for e in found:
        try:
            rel = str(e.path.relative_to(root))
        except ValueError:
            rel = str(e.path)
        rate = "" if e.rate is None else f"{e.rate:.3g}" + ("" if e.reported else "~")
        rows.append([e.started_at.strftime("%Y-%m-%d %H:%M") if e.started_at else "-", e.kind, e.scenario or "-",
                     e.backend or "-", "" if e.workers is None else str(e.workers), rate, e.outcome or "-",
                     e.verdict, e.bound or "-", e.checks or "-", rel or "."])
    widths = [min(max([len(h)] + [len(r[i]) for r in rows]), WIDEST.get(h, 10_000)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths[:-1]) + "  {}"
    return [fmt.format(*head), *(fmt.format(*[c if len(c) <= widths[i] or i == len(head) - 1
                                               else c[:widths[i] - 1] + "…" for i, c in enumerate(r)]) for r in rows)]
