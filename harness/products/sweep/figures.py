"""The sweep's pictures: throughput against fleet size with the fitted curve, latency against fleet size, and
what bound each size. Each takes ``sweep.json``'s numbers and writes one PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from harness.products.sweep import usl  # noqa: E402
from harness.products.sweep.numbers import LATENCY  # noqa: E402
from harness.report.show import save  # noqa: E402

KIND_COLORS = {"lock": "#d62728", "step": "#1f77b4", "capacity": "#ff7f0e", "partition": "#ff7f0e",
               "generator": "#7f7f7f", "stand-in": "#9467bd", "machine": "#000000", None: "#bbbbbb"}
SIZE = (11.0, 5.0)


def _log2_axis(ax: Any, workers: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(workers))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("workers (fleet size)")
    ax.grid(alpha=0.3)


def throughput(sizes: list[dict[str, Any]], fit: dict[str, Any], title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    n = np.array([s["workers"] for s in sizes], dtype=float)
    x = np.array([s["rate"] for s in sizes])
    lo = np.array([s["interval"][0] for s in sizes])
    hi = np.array([s["interval"][1] for s in sizes])
    ax.errorbar(n, x, yerr=[np.maximum(x - lo, 0), np.maximum(hi - x, 0)], fmt="o", color="#1f77b4", capsize=4,
                label="each run: iterations/s after the warm-up (95 % interval)")
    if fit.get("sigma") is not None and len(n):
        top = max(float(n.max()), (fit.get("peak_workers") or 0) * 1.2)
        cn, cx = usl.curve(fit, top)
        ax.plot(cn, cx, color="#d62728", label=f"USL fit: σ {fit['sigma']:.2f}, κ {fit['kappa']:.2g}, "
                                               f"λ {fit['lambda']:.3g}/s")
        if fit.get("peak_workers") and fit["peak_workers"] <= usl.REACH * max(float(n.max()), 1.0):
            ax.axvline(fit["peak_workers"], color="#d62728", ls=":", label=f"peak N* {fit['peak_workers']:.3g}")
        if fit.get("kappa_zero") and fit.get("amdahl_ceiling"):
            ax.axhline(fit["amdahl_ceiling"], color="#7f7f7f", ls="--",
                       label=f"Amdahl ceiling λ/σ {fit['amdahl_ceiling']:.3g}/s")
    _log2_axis(ax, [int(v) for v in n] or [1])
    ax.set_ylabel("successful iterations per second")
    ax.set_ylim(bottom=0, top=max([*hi, *x, 1e-9]) * 1.3)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def latency(sizes: list[dict[str, Any]], title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    have = [s for s in sizes if s.get("latency_ms")]
    n = [s["workers"] for s in have]
    for q, style in zip(LATENCY, ("-o", "--s", ":^"), strict=True):
        ax.plot(n, [s["latency_ms"][q] for s in have], style, label=f"{q} of a successful iteration")
    _log2_axis(ax, n or [1])
    ax.set_ylabel("ms")
    if have and min(s["latency_ms"]["p50"] for s in have) > 0:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def bound(sizes: list[dict[str, Any]], title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(SIZE[0], 4.0))
    labels = [f"{s['workers']}w" + (f" #{s['trial']}" if s.get("trial", 1) > 1 else "") for s in sizes]
    u = [(s["bottleneck"].get("utilization") or 0.0) * 100 for s in sizes]
    kinds = [s["bottleneck"].get("kind") for s in sizes]
    bars = ax.bar(range(len(sizes)), u, color=[KIND_COLORS.get(k, "#bbbbbb") for k in kinds])
    for b, s in zip(bars, sizes, strict=True):
        bk = s["bottleneck"]
        text = (bk.get("kind") or "none") + (f"\n{bk['name']}" if bk.get("name") else "")
        ax.text(b.get_x() + b.get_width() / 2, b.get_height() + 2, text[:40], ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 130)
    ax.set_ylabel("utilization of the bound, %")
    ax.axhline(80, color="#999999", ls=":", lw=1)
    ax.set_title(title)
    fig.tight_layout()
    return save(fig, path)
