"""The forecast's band against a known truth, over many seeded simulated runs (no wall clock, no report).

A short run of a simulated closed fleet (``forecast_runs.simulate``) is turned straight into the forecast's
``Inputs`` (the columns the forecast reads, the anchor and the dispersion as ``inputs.py`` takes them), so
hundreds of forecasts take seconds; the truth is the same fleet's expected rate over a window at the horizon,
the mean over many long runs of other seeds. The coverage is the share of short runs whose band holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.report.forecast.band import Dispersion, dispersion
from harness.report.forecast.forecast import Inputs, forecast
from harness.report.forecast.horizon import Horizon
from harness.report.forecast.inputs import last_third
from tests.support.forecast_runs import simulate
from tests.support.synthetic import T0

WARMUP_S = 10.0
LEVEL_S = 20.0  # the start and end rates' windows (the forecast's halving reads them)


def inputs_of_rows(rows: list[dict[str, Any]], duration_s: float, workers: int, *,
                   quasi: bool = True) -> Inputs:
    """The forecast's inputs from a simulated run's rows: the commit against each worker's index entries.
    ``quasi`` False: the dispersion left unmeasured (the Poisson band, as before it was measured)."""
    t = np.array([r["ts_end"] - T0 for r in rows])
    keep = t >= WARMUP_S
    ok = pd.DataFrame({"commit_ms": [r["commit_ms"] for r in rows],
                       "index_entries_written": [r["index_entries_written"] for r in rows],
                       "t": t, "user": [r["user"] for r in rows]}).loc[keep].reset_index(drop=True)
    start = int(((t >= WARMUP_S) & (t < WARMUP_S + LEVEL_S)).sum())
    end = int((t >= duration_s - LEVEL_S).sum())
    a_succ, a_sec = last_third(t[keep], WARMUP_S, duration_s)
    disp = dispersion(t[keep], WARMUP_S, duration_s, a_sec) if quasi else Dispersion()
    return Inputs(ok=ok, run_s=duration_s, warmup_s=WARMUP_S, workers=float(workers), successes=len(rows),
                  start_rate=start / LEVEL_S, end_rate=end / LEVEL_S, end_successes=end, end_seconds=LEVEL_S,
                  step="commit_ms", step_label="commit", count="index_entries_written",
                  count_label="index entries written", anchor_successes=a_succ, anchor_seconds=a_sec,
                  dispersion=disp)


def truth(case: dict[str, Any], long_s: float, window: tuple[float, float], seeds: range) -> float:
    """The fleet's expected rate over ``window`` (seconds since the load's start): the mean over long runs."""
    rates = []
    for s in seeds:
        t = np.array([r["ts_end"] - T0 for r in simulate(duration_s=long_s, seed=s, **case)])
        rates.append(((t >= window[0]) & (t < window[1])).sum() / (window[1] - window[0]))
    return float(np.mean(rates))


@dataclass
class Coverage:
    """How often the band held the truth, and how wide it was (its width over its point, the median)."""

    held: int
    runs: int
    width: float
    error: float  # the points' median error against the truth (signed, a share of the truth)

    @property
    def share(self) -> float:
        return self.held / self.runs


def coverage(case: dict[str, Any], *, short_s: float, long_s: float, window: tuple[float, float],
             seeds: range, truth_seeds: range, quasi: bool = True, draws: int = 200) -> Coverage:
    """The share of short runs (one per seed) whose forecast at the window's middle holds the truth."""
    true = truth(case, long_s, window, truth_seeds)
    at = Horizon("seconds", (window[0] + window[1]) / 2)
    held, widths, errors = 0, [], []
    for s in seeds:
        x = inputs_of_rows(simulate(duration_s=short_s, seed=s, **case), short_s, case["workers"], quasi=quasi)
        r = forecast(x, at, draws=draws, seed=s)["rate"]
        held += r["lo"] <= true <= r["hi"]
        widths.append((r["hi"] - r["lo"]) / r["point"])
        errors.append((r["point"] - true) / true)
    return Coverage(held, len(seeds), float(np.median(widths)), float(np.median(errors)))
