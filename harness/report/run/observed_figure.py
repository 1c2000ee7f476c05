"""The observer's figure: the datastore's own counts over time, under the fleet's rate (numbers come computed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.report.run.figures import _fig, _outside_legend, _scale, _x
from harness.report.show import save


def observed(series: pd.DataFrame, window: float, levels: dict[str, pd.Series],
             pulls: tuple[np.ndarray, np.ndarray] | None, span_s: float, title: str, path: Path) -> Path:
    """The rate on top; below it one panel per observed measure (its level at each sample). ``pulls``: the
    rows' items read per pull paired with the FILE key's samples, drawn on its panel."""
    n = len(levels)
    fig, axes = _fig(n + 1, 1, 12, 2.2 + 1.9 * n, sharex=True, hspace=0.25,
                     gridspec_kw={"height_ratios": [1.6] + [1.0] * n})
    top = axes[0]
    x = _x(series.index, span_s) + _x([window / 2], span_s)[0]
    top.plot(x, series["ok_rate"], color="black", linewidth=1.4, label=f"succeeded ({window:g} s windows)")
    top.set_title(f"{title}: what the datastore held, read from outside, under the rate")
    top.set_ylabel("iterations/s")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    _outside_legend(top)
    for ax, (label, s) in zip(axes[1:], levels.items(), strict=True):
        ax.plot(_x(s.index, span_s), s.to_numpy(), color="#1f77b4", marker=".", markersize=4, drawstyle="steps-post",
                label="observed")
        if pulls is not None and label.startswith("items under"):
            ax.plot(_x(pulls[0], span_s), pulls[1], linestyle="none", marker="x", markersize=5, color="#d62728",
                    label="items read per pull (rows, the second before)")
        ax.set_ylabel(label, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        _outside_legend(ax)
    axes[-1].set_xlabel(_scale(span_s)[1])
    return save(fig, path)
