"""``harness runs --trend SCENARIO``: the rate and one step's time across a scenario's runs, as a page.

The numbers are each run's own report's (``summary.json``: its successes over its span with a Poisson
interval; the step's mean and p95 from the report's percentile table), one point per run, in the order the
runs started, one colour per backend (a DynamoDB rate beside an S3 one compares backends, not builds).
``points`` is pure; ``figure`` draws what it returns; ``build`` writes ``trend.png`` and ``index.html``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.core.errors import HarnessError  # noqa: E402
from harness.core.intervals import rate_interval  # noqa: E402
from harness.products.runs.history import Entry  # noqa: E402
from harness.report.show import details, figure, frame, save, table, verdict_box  # noqa: E402

COLORS = {"dynamodb": "#1f77b4", "s3": "#ff7f0e"}


def default_step(found: list[Entry]) -> str:
    """The step the newest run spent most of a successful iteration in (its report's dominant step)."""
    for e in found:
        step = (((e.findings or {}).get("dominant_step") or {}).get("last") or {}).get("step")
        if step:
            return step
    return "commit"


def points(found: list[Entry], step: str) -> list[dict[str, Any]]:
    """One point per reported run, oldest first: its rate and interval, the step's mean and p95 (ms)."""
    out = []
    for e in sorted((e for e in found if e.findings), key=lambda e: e.started_at.timestamp() if e.started_at else 0):
        f = e.findings or {}
        seconds, ok = float(f.get("duration_s") or 0), int(f.get("successes") or 0)
        lo, hi = rate_interval(ok, seconds) if seconds > 0 else (None, None)
        row = next((p for p in f.get("percentiles") or [] if p.get("name") == step), None)
        out.append({"path": str(e.path), "started_at": e.started_at.isoformat() if e.started_at else None,
                    "backend": e.backend, "workers": e.workers, "rate": ok / seconds if seconds else None,
                    "interval": [lo, hi], "step_mean_ms": row.get("mean") if row else None,
                    "step_p95_ms": row.get("p95") if row else None, "checks": e.checks, "verdict": e.verdict})
    return out


def figure_png(pts: list[dict[str, Any]], scenario: str, step: str, path: Path) -> Path:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    x = list(range(1, len(pts) + 1))
    for backend in sorted({p["backend"] or "?" for p in pts}):
        idx = [i for i, p in enumerate(pts) if (p["backend"] or "?") == backend and p["rate"] is not None]
        c = COLORS.get(backend, "#555555")
        rate = [pts[i]["rate"] for i in idx]
        err = [[pts[i]["rate"] - pts[i]["interval"][0] for i in idx], [pts[i]["interval"][1] - pts[i]["rate"]
                                                                        for i in idx]]
        top.errorbar([x[i] for i in idx], rate, yerr=err, fmt="o-", color=c, capsize=3, label=f"{backend}: rate")
        means = [(x[i], pts[i]["step_mean_ms"]) for i in idx if pts[i]["step_mean_ms"] is not None]
        p95 = [(x[i], pts[i]["step_p95_ms"]) for i in idx if pts[i]["step_p95_ms"] is not None]
        if means:
            bottom.plot(*zip(*means, strict=True), "o-", color=c, label=f"{backend}: {step} mean")
        if p95:
            bottom.plot(*zip(*p95, strict=True), "s--", color=c, alpha=0.6, label=f"{backend}: {step} p95")
    top.set_ylabel("successful iterations / s")
    top.set_title(f"{scenario}: the rate (95 % interval) and {step} across {len(pts)} runs")
    bottom.set_ylabel(f"{step}, ms (successful iterations)")
    bottom.set_xlabel("run, in the order they started (the table below names each)")
    bottom.set_xticks(x)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=8)
    return save(fig, path)


def build(found: list[Entry], scenario: str, step: str | None, out_dir: Path) -> Path:
    """``trend.png`` and ``index.html`` in ``out_dir`` from the scenario's reported runs."""
    runs = [e for e in found if e.scenario == scenario and e.kind in ("run", "web test")]
    if not any(e.findings for e in runs):
        raise HarnessError(f"--trend {scenario}: no reported run of that scenario here (runs without a report: "
                           f"`harness report RUN_DIR` first)")
    step = step or default_step(runs)
    pts = points(runs, step)
    out_dir.mkdir(parents=True, exist_ok=True)
    figure_png(pts, scenario, step, out_dir / "trend.png")
    rows = [[i, p["started_at"], p["backend"], p["workers"], p["rate"],
             f"{p['interval'][0]:.3g}-{p['interval'][1]:.3g}" if p["interval"][0] is not None else "",
             p["step_mean_ms"], p["step_p95_ms"], p["checks"], p["path"]] for i, p in enumerate(pts, 1)]
    lead = verdict_box([("Runs", f"{len(pts)} reported runs of {scenario}, oldest first"),
                        ("Step", f"{step}: mean and p95 of successful iterations (ms)")])
    body = table(["#", "started", "backend", "workers", "rate it/s", "95 % interval", f"{step} mean ms",
                  f"{step} p95 ms", "checks", "run"], rows)
    page = frame(f"Trend: {scenario}", [lead, figure("trend.png", f"the rate and {step} across the runs", True)],
                 [details("Which runs are these? Each point's numbers", body, open_=True)])
    (out_dir / "index.html").write_text(page)
    return out_dir
