"""``harness report``: run directories in, ``index.html`` + ``figures/*.png`` + ``summary.json`` out."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from reports import compute, figures, html
from reports.load import STEP_COLUMNS, Run, open_run


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_figures(run: Run, f: dict, fig_dir: Path, prefix: str) -> list[tuple[str, str]]:
    window = f["window_s"]
    binned = compute.with_windows(run.rows, window)
    title = run.label
    made = []

    def out(name: str) -> Path:
        made.append((f"{prefix}{name}", f"{title}: {name.removesuffix('.png').replace('_', ' ')}"))
        return fig_dir / f"{prefix}{name}"

    figures.rate(compute.fleet_rate(binned, window), compute.worker_rates(binned, window), window, title,
                 out("rate.png"))
    figures.failures(compute.failure_rates(binned, window), title, out("failures.png"))
    figures.step_time(compute.step_means(binned, window), title, out("step_time.png"))
    figures.work_counts(compute.count_means(binned, window), title, out("work_counts.png"))
    figures.lock_wait(run.rows["lock_wait_ms"], title, out("lock_wait.png"))
    busiest = run.rows[STEP_COLUMNS].mean().sort_values(ascending=False).index[:3].tolist()
    figures.latency_percentiles(compute.percentiles(binned, window, ["total_ms", *busiest]), title,
                                out("latency_percentiles.png"))
    return made


def build_report(run_dirs: list[str | Path], out: str | Path | None = None) -> Path:
    runs = [open_run(d) for d in run_dirs]
    for r in runs:
        if r.partial:
            print(f"harness: note: {r.path} is still being written or did not finish; reporting what it has",
                  file=sys.stderr)
    out_dir = Path(out) if out else (runs[0].path / "report" if len(runs) == 1 else Path("comparison-report"))
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    summary: dict = {"runs": []}
    sections = []
    for i, run in enumerate(runs):
        f = compute.findings(run.rows, probes=run.probes)
        prefix = "" if len(runs) == 1 else f"{i + 1}-{_slug(run.path.name)[:40]}-"
        figs = run_figures(run, f, fig_dir, prefix)
        sections.append(html.run_section(run.label, run.info, f, figs, run.partial))
        summary["runs"].append({"run_dir": str(run.path), "label": run.label, "partial": run.partial,
                                "scenario": run.info.get("scenario_name"), "backend": run.info.get("backend"),
                                "endpoint_kind": run.info.get("endpoint_kind"), "findings": f,
                                "figures": [n for n, _ in figs]})
    comparison, comp_figs = None, []
    if len(runs) > 1:
        comparison = compute.compare([(r.label, r.info, r.rows) for r in runs])
        series = {}
        for r in runs:
            w = compute.pick_window(float((r.rows["ts_end"].max() - r.rows["ts_start"].min()).total_seconds()))
            series[r.label] = compute.fleet_rate(compute.with_windows(r.rows, w), w)
        figures.overlay_rates(series, fig_dir / "compare_rate.png")
        figures.compare_steps({x["label"]: x["step_ms"] for x in comparison["runs"]}, fig_dir / "compare_steps.png")
        comp_figs = [("compare_rate.png", "fleet rate, run against run"),
                     ("compare_steps.png", "time per step, run against run")]
        summary["comparison"] = comparison
    summary["figures"] = sorted(p.name for p in fig_dir.glob("*.png"))
    title = runs[0].label if len(runs) == 1 else f"{len(runs)} runs compared"
    (out_dir / "index.html").write_text(html.page(f"Sync-layer load test: {title}", sections, comparison, comp_figs))
    (out_dir / "summary.json").write_text(json.dumps(json_safe(summary), indent=2, allow_nan=False))
    return out_dir


def json_safe(o: object) -> object:
    """Plain JSON: numpy scalars unwrapped, inf/NaN (an unbounded ratio, a missing value) as null."""
    if isinstance(o, dict):
        return {str(k): json_safe(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [json_safe(v) for v in o]
    if hasattr(o, "item"):
        o = o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o
