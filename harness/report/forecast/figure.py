"""forecast.png: the measured rate per window, then the forecast's point and 95 % band beyond the run's end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.report.run.figures import _fig, _finish, _scale, _x, save


def forecast(series: pd.DataFrame, fc: dict[str, Any], window: float, title: str, path: Path) -> Path:
    """``series``: the rate figure's windows (``ok_rate``, ``ok_lo``, ``ok_hi``); ``fc``: the findings' forecast."""
    c = fc["curve"]
    end = float(c["t"][-1])
    fig, ax = _fig(1, 1, 12, 3.6)
    x = _x(series.index, end) + _x([window / 2], end)[0]
    ax.fill_between(x, series["ok_lo"], series["ok_hi"], color="black", alpha=0.12, linewidth=0,
                    label="measured: 95 % interval per window")
    ax.plot(x, series["ok_rate"], color="black", linewidth=1.4, label=f"measured ({window:g} s windows)")
    t = _x(np.array(c["t"]), end)
    ax.fill_between(t, c["lo"], c["hi"], color="#ff7f0e", alpha=0.25, linewidth=0, label="forecast: 95 % band")
    r = fc["rate"]
    ax.plot(t, c["point"], color="#ff7f0e", linewidth=2, linestyle="--",
            label=f"forecast: {r['point']:.3g} it/s [{r['lo']:.3g}-{r['hi']:.3g}] at the end")
    ax.axvline(t[0], color="#555555", linewidth=0.8, linestyle=":", label="the run's end")
    start = fc.get("start_rate")
    if start:
        ax.axhline(start / 2, color="#d62728", linewidth=0.8, linestyle=":", label="half the start rate")
    why = "flat: " + fc["reason"] if fc["basis"] == "flat" else f"{fc['step_label']} against {fc['count_label']}"
    _finish(ax, f"{title}: the rate, and its forecast ({why[:80]})", "iterations/s (fleet)", end)
    ax.set_xlim(0, _x([end], end)[0])
    ax.set_xlabel(_scale(end)[1])
    return save(fig, path)
