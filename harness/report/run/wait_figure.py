"""The open fleet's picture: the number queued over time and the wait per window, stages marked.

Plots only: the numbers come from ``harness.report.run.wait`` (queued series) and the rows' waits, binned here
by intended start for the plot alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.report.run.figures import _fig, _finish, _x, plt
from harness.report.show import save


def queue_and_wait(queued: pd.DataFrame, t_intended: np.ndarray, wait_ms: np.ndarray, window: float,
                   stages: list[dict[str, Any]], span_s: float, title: str, path: Path) -> Path:
    """Top: arrivals queued (arrived, not started) at each window's end; bottom: the wait's p50 and p99 of
    the arrivals intended in each window. Each stage's start is a dotted line, its number at the top."""
    fig, (top, bottom) = _fig(2, 1, 12, 4.6, sharex=True, hspace=0.2)
    top.step(_x(queued["t"], span_s), queued["queued"], where="post", color="#d62728", label="queued")
    edges = np.arange(0.0, span_s + window, window)
    idx = np.digitize(t_intended, edges) - 1
    mids, p50, p99 = [], [], []
    for i in range(len(edges) - 1):
        w = wait_ms[idx == i]
        if len(w):
            mids.append(edges[i] + window / 2)
            p50.append(np.quantile(w, 0.5) / 1000)
            p99.append(np.quantile(w, 0.99) / 1000)
    bottom.plot(_x(mids, span_s), p50, color="black", label="wait p50")
    bottom.plot(_x(mids, span_s), p99, color="#d62728", linestyle="--", label="wait p99")
    for st in stages:
        for ax in (top, bottom):
            ax.axvline(_x([st["t0"]], span_s)[0], color="#1f77b4", linestyle=":", linewidth=1)
        top.annotate(f"stage {st['stage']}", (_x([st["t0"]], span_s)[0], 1.0), xycoords=("data", "axes fraction"),
                     fontsize=7, color="#1f77b4", va="bottom")
    _finish(top, title, "arrivals queued", span_s)
    _finish(bottom, "", "wait (s)", span_s)
    top.set_xlabel("")
    return save(fig, path)


__all__ = ["queue_and_wait", "plt"]
