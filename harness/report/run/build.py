"""``harness report``: run directories in, ``index.html`` + ``figures/*.png`` + ``summary.json`` out."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import HarnessError
from harness.metrics.lockuse import Intervals, intervals
from harness.record.memory import give_back
from harness.record.reader import shard_paths
from harness.report.compare.compare import compare, overlay_series
from harness.report.cost import cost
from harness.report.forecast import figure as forecast_figure
from harness.report.forecast.horizon import Horizon
from harness.report.load import COUNT_COLUMNS, STEP_COLUMNS, Run, expand, open_run
from harness.report.run import compute, figures, observed_figure, page, wait, wait_figure
from harness.report.run import observed as observing
from harness.report.run.causes import COUNT_LABELS, STEP_DRIVERS, STEP_LABELS
from harness.report.run.findings import findings
from harness.report.series import (
    count_means,
    rate_series,
    run_span,
    seconds_since,
    step_means,
    successes,
    with_windows,
)
from harness.report.show import figures_dir, json_safe
from harness.telemetry.cloudwatch import section as cloudwatch

SCATTER_POINTS = 5000


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def take_lock_intervals(run: Run) -> dict[str, Intervals] | None:
    """The run's lock events as each key's intervals; the events (millions on a long run) are let go here,
    so the events, their intervals and the timelines made from those are never held at once. Nothing after
    the findings reads the events."""
    if run.locks is None:
        return None
    locks = intervals(run.locks, run_span(run.info, run.rows).t1.timestamp())
    run.locks = None
    give_back()
    return locks


def findings_of(run: Run, locks: dict[str, Intervals] | None = None, horizon: Horizon | None = None,
                prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run's findings; its lock history from ``locks`` (``take_lock_intervals``) when given; ``horizon``:
    where the rate forecast looks (``harness forecast --at``; the run's length x10 by default); ``prices``: the
    price table (``harness report --prices``)."""
    return findings(run.rows, run.info, probes=run.probes, generator=run.generator, safety=run.safety,
                    locks=locks if locks is not None else run.locks, keys=run.keys, processes=run.processes,
                    spans=run.spans, observed=run.observed, horizon=horizon, prices=prices)


def roles(f: dict[str, Any]) -> dict[int, str]:
    """Which segment is the start, the floor and the end (one segment may be two of them)."""
    last = len(f["fleet"]["levels"]) - 1
    out: dict[int, list[str]] = {}
    for name, i in (("start", 0), ("floor", f["fleet"]["floor_index"]), ("end", last)):
        out.setdefault(i, []).append(name)
    return {i: " = ".join(v) for i, v in out.items()}


@dataclass
class _Figures:
    """One run's figures being made: what every figure reads, and the (file name, caption) pairs so far."""

    run: Run
    f: dict[str, Any]
    fig_dir: Path
    prefix: str
    span: Any
    binned: Any
    made: list[tuple[str, str]] = field(default_factory=list)

    @property
    def window(self) -> float:
        return self.f["window_s"]

    @property
    def title(self) -> str:
        return self.run.label

    def out(self, name: str, caption: str) -> Path:
        self.made.append((f"{self.prefix}{name}", caption))
        return self.fig_dir / f"{self.prefix}{name}"


def run_figures(run: Run, f: dict[str, Any], fig_dir: Path, prefix: str = "") -> list[tuple[str, str]]:
    """Every figure that has something to show for this run; (file name, caption) pairs."""
    span = run_span(run.info, run.rows)
    fg = _Figures(run, f, fig_dir, prefix, span, with_windows(run.rows, span, f["window_s"]))
    series = rate_series(fg.binned, span, fg.window)
    _rate_figures(fg, series)
    _step_figures(fg)
    _side_figures(fg)
    _observed_figure(fg, series)
    return fg.made


def _rate_figures(fg: _Figures, series: Any) -> None:
    """The rate with its segments, the forecast, what binds, and the step that grew against its driver."""
    f, span, window, title, out = fg.f, fg.span, fg.window, fg.title, fg.out
    fl = f["fleet"]
    users = compute.users_series(fg.run.rows, fg.run.users, span, window)
    figures.rate(series, fl["levels"], roles(f), users, fl["warmup_s"], fl["stall"], span.seconds, window, title,
                 out("rate.png", f"successful and failed iterations per second ({window:g} s windows, 95 % band), "
                                 f"the {len(fl['levels'])} segment levels with start, floor and end marked; "
                                 "users running; rate per user"))
    fc = f.get("forecast")
    if fc and fc.get("rate") and fc.get("curve"):
        forecast_figure.forecast(series, fc, window, title, out(
            "forecast.png", f"the measured rate, then the forecast to {fc['horizon']} with its 95 % band"))
    b = compute.bound_series(f)
    if b:
        what = "what binds the fleet" if b["bound_binds"] else "the busiest resource (nothing binds the fleet)"
        figures.bound(b, span.seconds, title, out("bound.png", f"utilization per segment of {what}, {b['bound']}, "
                                                               "beside the next busiest shared resources (95 % band)"))
    grew = _grew_points(_with_observed(fg.run, f, span), f, span)
    if grew:
        figures.causes(grew, span.seconds, title, out(
            "grew.png", f"the step that grew most, {f['grew_most']}, against its driver, "
                        f"{next(iter(grew.values()))[3]}: one dot per successful iteration (colour: time)"))


def _nonzero_columns(table: Any) -> Any:
    """The table's columns that are not all zero (or empty)."""
    return table[[c for c in table.columns if table[c].fillna(0).any()]]


def _step_figures(fg: _Figures) -> None:
    """Failures by kind, step times, work counts, lock waits, the latency percentiles and each step's causes."""
    rows, binned, span, window, title, out = fg.run.rows, fg.binned, fg.span, fg.window, fg.title, fg.out
    fails = compute.failure_series(binned, span, window)
    if fails.shape[1] and fails.to_numpy().any():
        figures.failures(fails, span.seconds, title, out("failures.png", "failed iterations per second by kind"))
    steps = _nonzero_columns(step_means(binned, span, window))
    if steps.shape[1]:
        figures.step_time(steps, span.seconds, title,
                          out("step_time.png", "mean ms per step of successful iterations (gaps: none succeeded)"))
    counts = _nonzero_columns(count_means(binned, span, window)[COUNT_COLUMNS])
    if counts.shape[1]:
        figures.work_counts(counts, span.seconds, title, out(
            "work_counts.png", "mean work counts of successful iterations (all-zero counts left out)"))
    if compute.lock_waits(rows).max() > 0:
        figures.lock_wait(*compute.lock_wait_histogram(rows), title,
                          out("lock_wait.png", "lock wait per iteration, succeeded and failed"))
    ok_rows = successes(rows, ["ts_end", "total_ms", *STEP_COLUMNS, *COUNT_COLUMNS])
    if not len(ok_rows):
        return
    busiest = ok_rows[STEP_COLUMNS].mean().sort_values(ascending=False)
    busiest = [c for c in busiest.index[:3] if busiest[c] > 0]
    q = compute.percentile_series(binned, span, window, ["total_ms", *busiest])
    figures.latency_percentiles(q, span.seconds, title,
                                out("latency_percentiles.png", "p50/p95/p99 per window, successful iterations"))
    points = _cause_points(ok_rows, span)
    if points:
        figures.causes(points, span.seconds, title,
                       out("causes.png", "each step's time against the count that drives it, one dot per "
                                         "successful iteration (colour: time)"))


def _inside(ts: Any, span: Any) -> tuple[np.ndarray, np.ndarray]:
    """Seconds since the load's start of each timestamp, and which of them fall inside the span."""
    t = seconds_since(ts, span.t0)
    return t, (t >= 0) & (t <= span.seconds)


def generator_series(g: Any, span: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each Locust process's CPU samples inside the span: name -> (seconds, percent)."""
    t, keep = _inside(g["ts"], span)
    out = {}
    for name in sorted(g["process"].unique()):
        mine = keep & (g["process"] == name).to_numpy()
        out[str(name)] = (t[mine], g["cpu_percent"].to_numpy()[mine])
    return out


def _side_figures(fg: _Figures) -> None:
    """What the side files show: the stand-in's probe, the generator's CPU, the arrivals' queue and wait."""
    run, f, span, title, out = fg.run, fg.f, fg.span, fg.title, fg.out
    if f.get("probe") and run.probes is not None:
        p = run.probes[run.probes["op"] == f["probe"]["op"]]
        t, keep = _inside(p["ts"], span)
        figures.probe(t[keep], p["ms"].to_numpy()[keep], f["probe"]["op"], span.seconds, title,
                      out("probe.png", f"the stand-in's {f['probe']['op']} probe while the load ran"))
    if f.get("generator") and run.generator is not None:
        figures.generator(generator_series(run.generator, span), span.seconds, title,
                          out("generator.png", "load generator CPU per Locust process"))
    if f.get("wait") or f.get("stages"):
        rows = run.rows
        fleet = (run.info.get("scenario") or {}).get("fleet") or {}
        ti = seconds_since(wait.intended(rows), span.t0)
        wait_figure.queue_and_wait(wait.queued_series(rows, span, fleet, fg.window), ti, wait.waits(rows).to_numpy(),
                                   fg.window, f.get("stages") or [], span.seconds, title,
                                   out("wait.png", "arrivals queued (arrived, not yet started) and the wait's p50 / "
                                                   "p99 by intended start; each stage's start dotted"))


def _observed_figure(fg: _Figures, series: Any) -> None:
    """The datastore's own counts as the observer read them, under the rate."""
    ob = fg.f.get("observed")
    lv = observed_levels(fg.run, fg.span) if ob else {}
    if not lv:
        return
    legacy = (ob.get("agreement") or {}).get("legacy") or {}
    pairs = legacy.get("series")
    observed_figure.observed(series, fg.window, lv, (np.array(pairs["t"]), np.array(pairs["pulls"])) if pairs
                             else None, fg.span.seconds, fg.title,
                             fg.out("observed.png", "the datastore's own counts over time, as the observer read "
                                                    "them (observed.csv), under the successful iterations per "
                                                    "second"))


OBSERVED_SHOWN = 4  # panels: the measures that grew first


def observed_levels(run: Run, span) -> dict[str, Any]:
    """The observed measures' levels over the load, those that grew first (at most ``OBSERVED_SHOWN``)."""
    d = observing.data(run.observed)
    found = {w: observing.level(d, w, span.t0.timestamp()) for w in observing.MEASURES}
    changes = observing.changes(run.observed, span)
    order = sorted((w for w in found if not found[w].empty), key=lambda w: not changes.get(w, {}).get("grew"))
    return {observing.MEASURES[w]: found[w] for w in order[:OBSERVED_SHOWN]}


def _with_observed(run: Run, f: dict[str, Any], span):
    """The rows, with the observer's level at each row's end when that is what explains the step that grew."""
    drv = f.get("explained_by") or ""
    if not drv.startswith("observed_") or run.observed is None:
        return run.rows
    return run.rows.join(observing.row_levels(run.observed, run.rows, span, run.info))


def _grew_points(rows, f: dict[str, Any], span) -> dict[str, tuple]:
    """The step that grew most against the count that explains it (else its own driver), when that count varies."""
    top = f.get("grew_most")
    col = next((c for c, label in STEP_LABELS.items() if label == top), None) if top else None
    drv = f.get("explained_by") or STEP_DRIVERS.get(col or "")
    if col is None or not drv or drv not in rows.columns or col not in rows.columns:
        return {}
    ok = successes(rows, ["ts_end", col, drv]).dropna()
    if ok[drv].nunique() < 2:
        return {}
    sample = ok.sample(SCATTER_POINTS, random_state=0) if len(ok) > SCATTER_POINTS else ok
    return {col: (sample[drv].to_numpy(), sample[col].to_numpy(), seconds_since(sample["ts_end"], span.t0),
                  COUNT_LABELS.get(drv, drv))}


def _cause_points(ok_rows, span) -> dict[str, tuple]:
    sample = ok_rows.sample(SCATTER_POINTS, random_state=0) if len(ok_rows) > SCATTER_POINTS else ok_rows
    t = seconds_since(sample["ts_end"], span.t0)
    total = float(sample["total_ms"].mean())
    out = {}
    for step, drv in STEP_DRIVERS.items():  # steps that take time, against drivers that vary
        if sample[step].mean() >= 0.01 * total and sample[drv].nunique() > 1:
            out[step] = (sample[drv].to_numpy(), sample[step].to_numpy(), t, COUNT_LABELS[drv])
    return out


def default_out(given: list[Path], runs: list[Run]) -> Path:
    """One run (or one session): RUN_DIR/report. Several: next to them when they share a folder, else runs/."""
    if len(given) == 1:
        return given[0] / "report"
    key = hashlib.sha1("\n".join(sorted(str(r.path.resolve()) for r in runs)).encode()).hexdigest()[:6]
    name = f"comparison-{_slug(runs[0].path.name)[:40]}-and-{len(runs) - 1}-more-{key}"
    parents = {r.path.resolve().parent for r in runs}
    return (parents.pop() if len(parents) == 1 else Path("runs").resolve()) / name


def build_report(run_dirs: list[str | Path], out: str | Path | None = None,
                 baseline: dict[str, Any] | None = None, prices: dict[str, Any] | None = None) -> Path:
    """``baseline``: one run's comparison with its baseline (``harness/report/run/baseline.py``), shown in its report;
    ``prices``: the price table the runs are priced with (``harness/report/cost/cost.py`` ``load``)."""
    given = [Path(d) for d in run_dirs]
    runs = [open_run(d) for d in expand(given)]
    for r in runs:
        if r.partial:
            print(f"harness: note: {r.path} is still being written or did not finish; reporting what it has",
                  file=sys.stderr)
        _say_skipped(r)
    out_dir = Path(out) if out else default_out(given, runs)
    fig_dir = figures_dir(out_dir)
    summary: dict[str, Any] = {"runs": []}
    first: list[str] = []
    sections: list[str] = []
    for i, run in enumerate(runs):
        f = findings_of(run, take_lock_intervals(run), prices=prices)
        aws = cloudwatch.compare(run.path, run.info, run.rows)  # what AWS measured: only a run it was read for
        if aws is not None:  # has the key (summary.json keeps its keys otherwise)
            f["cloudwatch"] = aws
            if f.get("cost") and (billed := cost.beside_cloudwatch(run.rows, aws, prices or cost.load())):
                f["cost"]["cloudwatch"] = billed
        if baseline is not None and len(runs) == 1:
            f["baseline"] = baseline
        prefix = "" if len(runs) == 1 else f"{i + 1}-{_slug(run.path.name)[:40]}-"
        figs = run_figures(run, f, fig_dir, prefix)
        if len(runs) == 1:
            first, sections = page.first_screen(run, f, figs), page.sections(run, f, figs)
        else:
            sections.append(page.run_section(run, f, figs))
        summary["runs"].append({"run_dir": str(run.path), "label": run.label, "partial": run.partial,
                                "scenario": run.info.get("scenario_name"), "backend": run.info.get("backend"),
                                "endpoint_kind": run.info.get("endpoint_kind"), "findings": f,
                                **({"skipped_shards": run.skipped} if run.skipped else {}),
                                "figures": [n for n, _ in figs]})
    comparison, comp_figs = None, []
    if len(runs) > 1:
        triples = [(r.label, r.info, r.rows) for r in runs]
        comparison = compare(triples)
        for entry, r in zip(comparison["runs"], summary["runs"], strict=True):
            entry["checks"] = r["findings"]["checks"]
        figures.overlay_rates(overlay_series(triples), fig_dir / "compare_rate.png")
        figures.compare_steps({x["label"]: x["step_ms"] for x in comparison["runs"]}, fig_dir / "compare_steps.png")
        comp_figs = [("compare_rate.png", "successful iterations per second, run against run"),
                     ("compare_steps.png", "time per step of a successful iteration, run against run")]
        summary["comparison"] = comparison
    summary["figures"] = sorted(p.name for p in fig_dir.glob("*.png"))
    title = runs[0].label if len(runs) == 1 else f"{len(runs)} runs compared"
    (out_dir / "index.html").write_text(page.page(f"Sync-layer load test: {title}", first, sections, comparison,
                                                  comp_figs, runs))
    (out_dir / "summary.json").write_text(json.dumps(json_safe(summary), indent=2, allow_nan=False))
    return out_dir


def _say_skipped(run: Run) -> None:
    """Damaged shards the report left out, named on stderr (the intact rows are reported)."""
    if run.skipped:
        n = len(run.skipped)
        print(f"harness: note: {run.path}: skipped {n} damaged shard{'s' if n > 1 else ''}: "
              f"{'; '.join(run.skipped)}", file=sys.stderr)


def run_summary(run_dir: Path, rebuild: bool) -> dict[str, Any] | None:
    """One run's own report summary (built when missing, or always with ``rebuild``); None when the run
    recorded nothing to report. A story's chapters and a sweep's sizes read their runs through this."""
    path = run_dir / "report" / "summary.json"
    if rebuild or not path.is_file():
        if not shard_paths(run_dir) or not (run_dir / "run.json").is_file():
            return None
        try:
            build_report([run_dir])
        except HarnessError:
            return None
    return json.loads(path.read_text())
