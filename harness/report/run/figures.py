"""The pictures: each takes already-computed frames and numbers and writes one PNG.

No computation here beyond what a plot needs (unit conversion, ordering).
Legends sit outside the axes so they never cover data; a window where no
iteration succeeded is a gap in per-iteration means, not a zero; panels with
nothing to show are left out by the caller.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from harness.report.run.causes import COUNT_LABELS, STEP_LABELS  # noqa: E402
from harness.report.show import MARK_COLORS, save  # noqa: E402

ERROR_COLORS = {"lock_timeout": "#d62728", "throttled": "#ff7f0e", "fenced": "#9467bd", "conflict": "#8c564b",
                "timeout": "#e377c2", "other": "#7f7f7f"}


def _scale(span_s: float) -> tuple[float, str]:
    if span_s < 300:
        return 1.0, "seconds since the load started"
    if span_s < 3 * 3600:
        return 60.0, "minutes since the load started"
    return 3600.0, "hours since the load started"


def _x(index: pd.Index | np.ndarray, span_s: float) -> np.ndarray:
    div, _ = _scale(span_s)
    return np.asarray(index, dtype=float) / div


LEGEND_CHARS = 40  # a label line that fits the 2.9 in kept right of the axes at 8 pt


def _outside_legend(ax: plt.Axes, **kw: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:  # long labels (a bound's full name) wrap rather than run off the figure
        labels = [textwrap.fill(label, LEGEND_CHARS) for label in labels]
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8, **kw)


def _finish(ax: Any, title: str, ylabel: str, span_s: float) -> None:
    """The common frame of a time-series panel: title, axes labels, zero floor, grid, legend outside."""
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(_scale(span_s)[1])
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _outside_legend(ax)

def _fig(nrows: int, ncols: int, w: float, h: float, legend: bool = True, suptitle: bool = False,
         left_in: float = 1.0, hspace: float = 0.35, wspace: float = 0.3, **kw: Any) -> tuple[plt.Figure, Any]:
    """A figure with fixed margins in inches (a layout engine costs seconds per figure on a million rows'
    report): room on the right for legends outside the axes, on top for titles."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), **kw)
    fig.subplots_adjust(left=left_in / w, right=1 - (2.9 if legend else 0.35) / w, bottom=0.62 / h,
                        top=1 - (0.75 if suptitle else 0.4) / h, hspace=hspace, wspace=wspace)
    return fig, axes


def rate(series: pd.DataFrame, levels: list[dict[str, Any]], roles: dict[int, str], users: pd.Series,
         warmup_s: float, stall: dict[str, Any] | None, span_s: float, window: float, title: str,
         path: Path) -> Path:
    """Fleet success rate per window with its interval, failures, the segment levels, users and per-user rate."""
    fig, (top, mid, bottom) = _fig(3, 1, 12, 5.4, sharex=True, hspace=0.15,
                                   gridspec_kw={"height_ratios": [3, 0.9, 1.1]})
    x = _x(series.index, span_s) + _x([window / 2], span_s)[0]
    top.fill_between(x, series["ok_lo"], series["ok_hi"], color="black", alpha=0.12, linewidth=0,
                     label="95 % interval per window")
    top.plot(x, series["ok_rate"], color="black", linewidth=1.6, label=f"succeeded ({window:g} s windows)")
    if series["failed_rate"].any():
        top.plot(x, series["failed_rate"], color="#d62728", linewidth=1.0, linestyle="--", label="failed")
    for i, lv in enumerate(levels):
        a, b = _x([lv["t0"], lv["t1"]], span_s)
        role = roles.get(i)
        color = MARK_COLORS.get((role or "").split(" = ")[-1], "#888888")
        top.add_patch(plt.Rectangle((a, lv["lo"]), b - a, lv["hi"] - lv["lo"], color=color,
                                    alpha=0.25 if role else 0.1, linewidth=0))
        top.plot([a, b], [lv["rate"], lv["rate"]], color=color, linewidth=3 if role else 1.5,
                 label=f"{role} {lv['rate']:.3g} it/s [{lv['lo']:.3g}-{lv['hi']:.3g}]" if role else None)
    if warmup_s > 0:
        top.axvspan(0, _x([warmup_s], span_s)[0], facecolor="none", edgecolor="#999999", hatch="//", linewidth=0,
                    label=f"warm-up ({warmup_s:.0f} s, not in the levels)")
    if stall:
        top.axvspan(*_x([stall["since_s"], span_s], span_s), color="#d62728", alpha=0.12, linewidth=0,
                    label=f"stalled for {stall['gap_s']:.0f} s")
    top.set_ylabel("iterations/s (fleet)")
    top.set_title(f"{title}: iteration rate")
    _outside_legend(top)
    mid.step(x, users.to_numpy(), where="mid", color="#555555", label="users running")
    mid.set_ylabel("users", fontsize=8)
    mid.yaxis.set_major_locator(plt.MaxNLocator(3, integer=True))
    _outside_legend(mid)
    per_user = series["ok_rate"] / users.replace(0, np.nan).to_numpy()
    bottom.plot(x, per_user, color="#1f77b4", linewidth=1.2, label="succeeded per user")
    bottom.set_ylabel("it/s per user", fontsize=8)
    bottom.yaxis.set_major_locator(plt.MaxNLocator(3))
    bottom.set_xlabel(_scale(span_s)[1])
    _outside_legend(bottom)
    for ax in (top, mid, bottom):
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, _x([span_s], span_s)[0])
        ax.grid(alpha=0.3)
    return save(fig, path)


def bound(b: dict[str, Any], span_s: float, title: str, path: Path) -> Path:
    """The utilization per segment of what binds the fleet (thick), the next busiest shared resources (thin),
    each with its 95 % interval, and the saturation mark."""
    fig, ax = _fig(1, 1, 7.4, 4.0)
    edges = [a for a, _ in b["segments"]] + [b["segments"][-1][1]]
    x = _x(edges, span_s)
    cmap = plt.get_cmap("tab10")
    for i, (name, vals) in enumerate(b["series"].items()):
        u, lo, hi = (np.array([v[j] for v in vals] + [vals[-1][j]], dtype=float) * 100 for j in range(3))
        main = name == b["bound"]
        color = "#d62728" if main and b["bound_binds"] else cmap(i % 10)
        ax.step(x, u, where="post", color=color, linewidth=2.6 if main else 1.2,
                label=("binds: " if main and b["bound_binds"] else "") + name)
        ax.fill_between(x, lo, hi, step="post", color=color, alpha=0.15 if main else 0.07, linewidth=0)
    mark = b["marks"].get(b["bound"], 0.8) * 100
    ax.axhline(mark, color="#555555", linestyle=":", linewidth=1, label=f"saturated ({mark:.0f} %)")
    ax.set_xlim(0, _x([span_s], span_s)[0])
    ax.set_ylim(0, 110)
    _finish(ax, f"{title}: utilization per segment", "utilization %", span_s)
    return save(fig, path)


def failures(table: pd.DataFrame, span_s: float, title: str, path: Path) -> Path:
    """Failed iterations per second per window, stacked by error kind (only kinds that occurred)."""
    fig, ax = _fig(1, 1, 12, 4)
    x = _x(table.index, span_s)
    kinds = list(table.columns)
    ax.stackplot(x, *[table[k].to_numpy() for k in kinds], labels=[k.replace("_", " ") for k in kinds],
                 colors=[ERROR_COLORS.get(k, "#7f7f7f") for k in kinds], alpha=0.85, step="post")
    _finish(ax, f"{title}: failed iterations by kind", "failed iterations/s", span_s)
    return save(fig, path)


def step_time(steps: pd.DataFrame, span_s: float, title: str, path: Path) -> Path:
    """Stacked mean ms per step over successful iterations; gaps where nothing succeeded."""
    fig, ax = _fig(1, 1, 12, 4.5)
    x = _x(steps.index, span_s)
    base = np.zeros(len(steps))
    gap = steps.isna().all(axis=1).to_numpy()
    cmap = plt.get_cmap("tab10")
    for i, c in enumerate(steps.columns):
        v = steps[c].fillna(0).to_numpy()
        top = base + v
        ax.fill_between(x, np.where(gap, np.nan, base), np.where(gap, np.nan, top), step="mid",
                        color=cmap(i % 10), alpha=0.85, linewidth=0, label=STEP_LABELS.get(c, c))
        base = top
    _finish(ax, f"{title}: where a successful iteration's time goes", "mean ms per successful iteration", span_s)
    return save(fig, path)


def work_counts(counts: pd.DataFrame, span_s: float, title: str, path: Path) -> Path:
    """One panel per work count that was ever non-zero: its mean over successful iterations per window."""
    cols = list(counts.columns)
    ncol = min(3, len(cols))
    nrow = int(np.ceil(len(cols) / ncol))
    fig, axes = _fig(nrow, ncol, max(7.0, 4 * ncol + 1.4), 2.8 * nrow + 1.0, legend=False, suptitle=True,
                     sharex=True, squeeze=False)
    x = _x(counts.index, span_s)
    for ax in axes.flat[len(cols):]:
        ax.set_visible(False)
    for ax, c in zip(axes.flat, cols, strict=False):
        ax.plot(x, counts[c].to_numpy(), color="#1f77b4", marker=".", markersize=3)
        ax.set_title(COUNT_LABELS.get(c, c), fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel(_scale(span_s)[1])
    for row in axes:
        row[0].set_ylabel("mean per successful iteration")
    fig.suptitle(f"{title}: the work counts that drive the steps")
    return save(fig, path)


def lock_wait(edges: np.ndarray, ok_counts: np.ndarray, failed_counts: np.ndarray, title: str, path: Path) -> Path:
    """Histogram of lock waits (log bins), succeeded and failed iterations."""
    fig, ax = _fig(1, 1, 10, 4)
    if ok_counts.any():
        ax.stairs(ok_counts, edges, fill=True, color="#1f77b4", alpha=0.7, label="succeeded")
    if failed_counts.any():
        ax.stairs(failed_counts, edges, fill=True, color="#d62728", alpha=0.7, label="failed")
    ax.set_xscale("log")
    ax.set_title(f"{title}: lock wait per iteration")
    ax.set_xlabel("lock wait (ms, log scale)")
    ax.set_ylabel("iterations")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _outside_legend(ax)
    return save(fig, path)


def latency_percentiles(q: pd.DataFrame, span_s: float, title: str, path: Path) -> Path:
    cols = list(dict.fromkeys(c for c, _ in q.columns))
    fig, axes = _fig(1, len(cols), max(7.0, 3.6 * len(cols) + 3.6), 4.0, suptitle=True, squeeze=False)
    x = _x(q.index, span_s)
    for ax, c in zip(axes[0], cols, strict=True):
        for p, style in (("p50", "-"), ("p95", "--"), ("p99", ":")):
            ax.plot(x, q[(c, p)].to_numpy(), style, label=p)
        ax.set_title(c.replace("_ms", "").replace("_", " ") + " (succeeded)", fontsize=9)
        ax.set_xlabel(_scale(span_s)[1])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ms")
    _outside_legend(axes[0][-1])
    fig.suptitle(f"{title}: latency percentiles per window")
    return save(fig, path)


def causes(points: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, str]], span_s: float, title: str,
           path: Path) -> Path:
    """Each step's time against the count that drives it, one dot per successful iteration, coloured by time."""
    names = list(points)
    fig, axes = _fig(1, len(names), max(7.0, 3.8 * len(names) + 3.6), 4.0, suptitle=True, squeeze=False)
    sc = None
    for ax, step in zip(axes[0], names, strict=True):
        x, y, t, xlabel = points[step]
        sc = ax.scatter(x, y, c=_x(t, span_s), s=6, cmap="viridis", alpha=0.7, linewidths=0)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_title(f"{STEP_LABELS.get(step, step)} ms", fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ms per successful iteration")
    if sc is not None:
        right = axes[0][-1].get_position()
        cax = fig.add_axes((right.x1 + 0.25 / fig.get_figwidth(), right.y0, 0.15 / fig.get_figwidth(), right.height))
        fig.colorbar(sc, cax=cax, label=_scale(span_s)[1])
    fig.suptitle(f"{title}: each step's time against the count that drives it")
    return save(fig, path)


def probe(t: np.ndarray, ms: np.ndarray, op: str, span_s: float, title: str, path: Path) -> Path:
    fig, ax = _fig(1, 1, 10, 3.6)
    ax.plot(_x(t, span_s), ms, marker=".", color="#9467bd", label=f"{op} probe")
    ax.set_title(f"{title}: the stand-in's constant-cost {op}, while the load ran")
    ax.set_xlabel(_scale(span_s)[1])
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, _x([span_s], span_s)[0])
    ax.grid(alpha=0.3)
    _outside_legend(ax)
    return save(fig, path)


def generator(series: dict[str, tuple[np.ndarray, np.ndarray]], span_s: float, title: str, path: Path) -> Path:
    fig, ax = _fig(1, 1, 11, 3.8)
    for name, (t, cpu) in series.items():
        ax.plot(_x(t, span_s), cpu, linewidth=1.2, label=name)
    ax.axhline(90, color="#d62728", linestyle=":", linewidth=1, label="90 % (saturated)")
    ax.set_title(f"{title}: the load generator's CPU per Locust process")
    ax.set_xlabel(_scale(span_s)[1])
    ax.set_ylabel("CPU %")
    ax.set_ylim(0, max(105.0, max((float(np.max(c)) for _, c in series.values()), default=0) + 5))
    ax.set_xlim(0, _x([span_s], span_s)[0])
    ax.grid(alpha=0.3)
    _outside_legend(ax)
    return save(fig, path)


def overlay_rates(series: dict[str, pd.Series], path: Path) -> Path:
    fig, ax = _fig(1, 1, 12, 4.5)
    longest = max(float(s.index.max()) if len(s) else 0.0 for s in series.values())
    for label, s in series.items():
        ax.plot(_x(s.index, longest), s.to_numpy(), linewidth=1.8, label=label)
    ax.set_title("successful iterations per second, run against run")
    ax.set_ylabel("iterations/s (fleet)")
    ax.set_xlabel(_scale(longest)[1])
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _outside_legend(ax)
    return save(fig, path)


def compare_steps(step_ms: dict[str, dict[str, float]], path: Path) -> Path:
    labels = list(step_ms)
    steps = [s for s in STEP_LABELS.values() if any(step_ms[r].get(s, 0) > 0 for r in labels)]
    fig, ax = _fig(1, 1, 13, 1.6 + 0.6 * len(labels), left_in=3.4)
    left = np.zeros(len(labels))
    for s in steps:
        vals = np.array([step_ms[r].get(s, 0.0) for r in labels])
        ax.barh(labels, vals, left=left, label=s)
        left += vals
    ax.set_title("mean time per successful iteration by step, run against run")
    ax.set_xlabel("ms per successful iteration")
    ax.grid(alpha=0.3, axis="x")
    _outside_legend(ax)
    return save(fig, path)
