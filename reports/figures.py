"""The pictures: each takes already-aggregated frames and writes one PNG.

No computation here beyond what a plot needs (unit conversion, ordering).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from reports.compute import COUNT_LABELS, ERROR_KINDS, STEP_LABELS  # noqa: E402

ERROR_COLORS = {"lock_timeout": "#d62728", "throttled": "#ff7f0e", "fenced": "#9467bd", "conflict": "#8c564b",
                "timeout": "#e377c2", "other": "#7f7f7f"}
DPI = 100


def _time(index: pd.Index) -> tuple[np.ndarray, str]:
    """Window starts in a unit that suits the run's length, and the axis label."""
    secs = index.to_numpy(dtype=float)
    span = float(secs.max()) if len(secs) else 0.0
    if span < 300:
        return secs, "seconds since start"
    if span < 3 * 3600:
        return secs / 60.0, "minutes since start"
    return secs / 3600.0, "hours since start"


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def rate(fleet: pd.Series, workers: pd.DataFrame, window: float, title: str, path: Path) -> Path:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    x, xlabel = _time(fleet.index)
    top.plot(x, fleet.to_numpy(), color="black", linewidth=2.5, label="fleet")
    top.set_ylabel("iterations/s (fleet)")
    top.set_title(f"{title}: iteration rate ({window:g} s windows)")
    top.legend(loc="upper right")
    for col in workers.columns[:200]:  # a thousand thin lines say no more than two hundred
        bottom.plot(x, workers[col].to_numpy(), linewidth=0.7, alpha=0.5)
    bottom.plot(x, workers.mean(axis=1).to_numpy(), color="black", linewidth=2.5,
                label="mean per worker")
    bottom.set_ylabel("iterations/s per worker")
    bottom.set_xlabel(xlabel)
    bottom.legend(loc="upper right")
    for ax in (top, bottom):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    return _save(fig, path)


def _stacked(index: pd.Index, series: list[np.ndarray], labels: list[str], title: str, ylabel: str, path: Path,
             colors: list[str] | None = None, ncol: int = 3) -> Path:
    """A stacked area over time: the shape of the failure and step-time figures."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x, xlabel = _time(index)
    ax.stackplot(x, *series, labels=labels, colors=colors, alpha=0.85)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.legend(loc="upper left", ncol=ncol, fontsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def failures(table: pd.DataFrame, title: str, path: Path) -> Path:
    return _stacked(table.index, [table[k].to_numpy() for k in ERROR_KINDS], [k.replace("_", " ") for k in ERROR_KINDS],
                    f"{title}: failures by kind", "failed iterations/s", path,
                    colors=[ERROR_COLORS[k] for k in ERROR_KINDS])


def step_time(steps: pd.DataFrame, title: str, path: Path) -> Path:
    filled = steps.fillna(0.0)
    cols = [c for c in filled.columns if filled[c].sum() > 0] or list(filled.columns)
    return _stacked(filled.index, [filled[c].to_numpy() for c in cols], [STEP_LABELS[c] for c in cols],
                    f"{title}: where an iteration's time goes", "mean ms per iteration", path, ncol=4)


def work_counts(counts: pd.DataFrame, title: str, path: Path) -> Path:
    cols = list(COUNT_LABELS)
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True)
    x, xlabel = _time(counts.index)
    for ax, c in zip(axes.flat, cols, strict=True):
        ax.plot(x, counts[c].to_numpy(), color="#1f77b4")
        ax.set_title(COUNT_LABELS[c], fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel(xlabel)
    axes[0][0].set_ylabel("mean per iteration")
    axes[1][0].set_ylabel("mean per iteration")
    fig.suptitle(f"{title}: the work counts that explain it")
    return _save(fig, path)


def lock_wait(waits: pd.Series, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4))
    w = waits.dropna().to_numpy()
    w = np.clip(w, 0.1, None)
    bins = np.logspace(-1, np.log10(max(w.max(), 1.0)) + 0.01, 50)
    ax.hist(w, bins=bins, color="#d62728", alpha=0.8)
    ax.set_xscale("log")
    ax.set_title(f"{title}: lock wait distribution")
    ax.set_xlabel("lock wait per iteration (ms, log scale)")
    ax.set_ylabel("iterations")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def latency_percentiles(q: pd.DataFrame, title: str, path: Path) -> Path:
    cols = list(dict.fromkeys(c for c, _ in q.columns))
    fig, axes = plt.subplots(1, len(cols), figsize=(4 * len(cols), 3.8), squeeze=False)
    x, xlabel = _time(q.index)
    for ax, c in zip(axes[0], cols, strict=True):
        for p, style in (("p50", "-"), ("p95", "--"), ("p99", ":")):
            ax.plot(x, q[(c, p)].to_numpy(), style, label=p)
        ax.set_title(c.replace("_ms", "").replace("_", " "), fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ms")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{title}: latency percentiles per window")
    return _save(fig, path)


def overlay_rates(series: dict[str, pd.Series], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xlabel = "seconds since start"
    for label, s in series.items():
        x, xlabel = _time(s.index)
        ax.plot(x, s.to_numpy(), linewidth=2, label=label)
    ax.set_title("fleet iteration rate, run against run")
    ax.set_ylabel("iterations/s (fleet)")
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def compare_steps(step_ms: dict[str, dict[str, float]], path: Path) -> Path:
    labels = list(step_ms)
    steps = [s for s in STEP_LABELS.values() if any(step_ms[r].get(s, 0) > 0 for r in labels)]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * len(labels)))
    left = np.zeros(len(labels))
    for s in steps:
        vals = np.array([step_ms[r].get(s, 0.0) for r in labels])
        ax.barh(labels, vals, left=left, label=s)
        left += vals
    ax.set_title("mean time per iteration by step, run against run")
    ax.set_xlabel("ms per iteration")
    ax.legend(ncol=4, fontsize=8, loc="lower right")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)
