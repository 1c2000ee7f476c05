"""The story's pictures: the rate of every chapter on one time axis, the bound resource per chapter, and each
chapter's own evidence. Each takes computed series (``harness/products/story/numbers.py``) and writes one PNG."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from harness.products.story.expect import COUNT_LABELS  # noqa: E402
from harness.record.schema import STEP_LABELS  # noqa: E402
from harness.report.show import MARK_COLORS, save  # noqa: E402

KIND_COLORS = {"lock": "#d62728", "step": "#1f77b4", "capacity": "#ff7f0e", "partition": "#ff7f0e",
               "generator": "#7f7f7f", "stand-in": "#9467bd", "machine": "#000000",
               None: "#bbbbbb"}
GAP = 0.04  # of the whole axis, between chapters
WIDTH = 12.0
AXIS_SHARE = 0.91  # of the figure's width, the axes' (subplots_adjust left=0.07, right=0.98)
NAME_PT = 7  # the bound's name above a run
NAME_LINES = 3
CHAR_EM = 0.62  # a character's mean width in ems (DejaVu Sans, lower case with some capitals)


def _layout(chapters: list[dict[str, Any]]) -> tuple[list[list[float]], float]:
    """Each run's offset on the shared axis (runs end to end, a gap between chapters); the axis length."""
    total = sum(r["seconds"] for c in chapters for r in c["runs"])
    gap = GAP * total
    offsets, x = [], 0.0
    for i, c in enumerate(chapters):
        if i:
            x += gap
        row = []
        for r in c["runs"]:
            row.append(x)
            x += r["seconds"]
        offsets.append(row)
    return offsets, max(x, 1e-9)


def _frame(ax: Any, chapters: list[dict[str, Any]], offsets: list[list[float]], length: float, top: bool) -> None:
    for c, offs in zip(chapters, offsets, strict=True):
        a = offs[0]
        b = offs[-1] + c["runs"][-1]["seconds"]
        ax.axvspan(a, b, color="#000000", alpha=0.03 if c["number"] % 2 else 0.0, linewidth=0)
        if top:
            ax.text((a + b) / 2, 1.01, str(c["number"]), transform=ax.get_xaxis_transform(), ha="center",
                    va="bottom", fontsize=10, fontweight="bold")
        for off in offs[1:]:
            ax.axvline(off, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_xlim(0, length)
    ax.grid(alpha=0.3)


def _run_label(ax: Any, off: float, r: dict[str, Any]) -> None:
    """Under a run of a chapter of several: what sets it apart (``12 workers``, ``pruning S3``), wrapped."""
    if r.get("short"):
        ax.text(off + r["seconds"] / 2, -0.04, textwrap.fill(r["short"], 11), transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=7, color="#555555")


def story_rate(chapters: list[dict[str, Any]], path: Path) -> Path:
    """Successful iterations per second of every run, chapter after chapter, start and floor levels marked."""
    offsets, length = _layout(chapters)
    fig, ax = plt.subplots(figsize=(WIDTH, 4.6))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.2, top=0.88)
    rates = [v for c in chapters for r in c["runs"] for v in r["ok_rate"] if v > 0]
    lows = [r["start"] for c in chapters for r in c["runs"] if r.get("start")]
    log = bool(rates) and bool(lows) and max(rates) / max(min(lows), 1e-9) > 12
    cmap = plt.get_cmap("tab10")
    for c, offs in zip(chapters, offsets, strict=True):
        color = cmap((c["number"] - 1) % 10)
        for off, r in zip(offs, c["runs"], strict=True):
            y = np.where(r["ok_rate"] > 0, r["ok_rate"], np.nan) if log else r["ok_rate"]
            ax.plot(off + r["t"], y, color=color, linewidth=1.4)
            for role, key in (("start", "start_level"), ("floor", "floor_level")):
                lv = r.get(key)
                if lv and lv["rate"] > 0:
                    ax.plot([off + lv["t0"], off + lv["t1"]], [lv["rate"], lv["rate"]], color=MARK_COLORS[role],
                            linewidth=3)
            _run_label(ax, off, r)
    if log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.plot([], [], color=MARK_COLORS["start"], linewidth=3, label="start level")
    ax.plot([], [], color=MARK_COLORS["floor"], linewidth=3, label="floor level")
    ax.legend(loc="upper right", fontsize=8)
    _frame(ax, chapters, offsets, length, top=True)
    ax.set_xticks([])
    ax.set_ylabel("successful iterations/s" + (" (log)" if log else ""))
    ax.set_title("The rate, chapter by chapter (each run on its own stretch of the axis)", pad=18)
    return save(fig, path)


def _bound_name(b: dict[str, Any], share: float) -> str:
    """The name above a run, wrapped to the run's own stretch of the axis (``share`` of it) so neighbours'
    names never overlap: a step's name without its parenthesis ("the commands' own start and exit", not
    "... (outside every step's span)"), in at most NAME_LINES lines, cut with an ellipsis past them."""
    name = b["name"] if b["kind"] == "step" else (b["kind"] or "nothing")
    name = re.sub(r"\s*\([^)]*\)\s*$", "", str(name)) or str(name)
    room_pt = share * WIDTH * AXIS_SHARE * 72 * 0.9  # 10 % spare between neighbours
    chars = max(4, int(room_pt / (NAME_PT * CHAR_EM)))
    lines = textwrap.wrap(name, chars, break_long_words=True) or [""]
    if len(lines) > NAME_LINES:
        lines = lines[:NAME_LINES]
        lines[-1] = lines[-1][: max(1, chars - 1)].rstrip() + "…"
    return "\n".join(lines)


def story_bound(chapters: list[dict[str, Any]], path: Path) -> Path:
    """The bound resource of every segment of every run, as the report found it: its utilization, coloured by
    kind and named."""
    offsets, length = _layout(chapters)
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.2, top=0.86)
    seen: set[Any] = set()
    for c, offs in zip(chapters, offsets, strict=True):
        for off, r in zip(offs, c["runs"], strict=True):
            for s in r["segments"]:
                u = s["utilization"] or 0.0
                kind = s["kind"]
                label = None if kind in seen else (kind or "nothing")
                seen.add(kind)
                ax.bar(off + s["t0"], u * 100, width=s["t1"] - s["t0"], align="edge", color=KIND_COLORS.get(kind,
                       "#bbbbbb"), alpha=0.8, edgecolor="white", linewidth=0.5, label=label)
                if s["interval"]:
                    lo, hi = s["interval"]
                    ax.plot([off + (s["t0"] + s["t1"]) / 2] * 2, [lo * 100, min(hi, 1.5) * 100], color="#333333",
                            linewidth=0.8)
            ax.text(off + r["seconds"] / 2, 103, _bound_name(r["bound"], r["seconds"] / length), ha="center",
                    va="bottom", fontsize=NAME_PT, rotation=0)
            _run_label(ax, off, r)
    ax.set_ylim(0, 125)
    ax.axhline(80, color="#555555", linestyle="--", linewidth=0.7)
    ax.legend(loc="lower right", fontsize=8, ncol=4)
    _frame(ax, chapters, offsets, length, top=True)
    ax.set_xticks([])
    ax.set_ylabel("utilization of the bound, %")
    ax.set_title("What bound the fleet, segment by segment (name above each run; 80 % saturates)", pad=18)
    return save(fig, path)


def chapter_figure(title: str, runs: list[dict[str, Any]], counts: list[str], steps: list[str], path: Path) -> Path:
    """A chapter's evidence: each run's rate, and the counts (and step time) its expectations rest on."""
    panels = 1 + len(counts) + len(steps)
    fig, axes = plt.subplots(1, panels, figsize=(max(WIDTH, 3.6 * panels), 3.6), squeeze=False)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.3, top=0.82, wspace=0.3)
    axes = axes[0]
    cmap = plt.get_cmap("tab10")
    for i, r in enumerate(runs):
        color = cmap(i % 10)
        axes[0].plot(r["t"], r["ok_rate"], color=color, linewidth=1.4, label=r["short"] or "succeeded")
        if np.any(r["failed_rate"] > 0):
            axes[0].plot(r["t"], r["failed_rate"], color=color, linewidth=0.9, linestyle="--")
        for j, c in enumerate(counts):
            axes[1 + j].plot(r["t"], r["counts"].get(c, np.full(len(r["t"]), np.nan)), color=color, marker=".",
                             markersize=3)
        for j, s in enumerate(steps):
            axes[1 + len(counts) + j].plot(r["t"], r["steps"].get(s, np.full(len(r["t"]), np.nan)), color=color,
                                           marker=".", markersize=3)
    axes[0].set_title("successful iterations/s (failed: dashed)", fontsize=9)
    for j, c in enumerate(counts):
        axes[1 + j].set_title(COUNT_LABELS.get(c, c), fontsize=9)
    for j, s in enumerate(steps):
        axes[1 + len(counts) + j].set_title(f"{STEP_LABELS.get(s, s)} ms per successful iteration", fontsize=9)
    for ax in axes:
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_xlabel("seconds since the run's load started", fontsize=8)
    if len(runs) > 1:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=min(len(runs), 4), fontsize=8,
                   bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=11)
    return save(fig, path)


