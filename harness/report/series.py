"""A run's time axis and its per-window series, shared by every product (the run report, the comparison, the story).

The run's span is the load's own (run.json ``started_at``..``ended_at``,
widened to cover every recorded iteration); times are seconds since its start.
Everything aggregates into windows first (a nine-hour, hundred-worker run is a
million rows; a figure needs a few hundred points), so plotting never touches
raw rows. Step times and work counts are means over successful iterations;
a window where nothing succeeded is a gap (NaN), not a zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import numbers
from harness.report.load import COUNT_COLUMNS, STEP_COLUMNS
from harness.report.stats import poisson_interval

NICE_WINDOWS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600]


@dataclass(frozen=True)
class Span:
    """The load's time range, and where it came from."""

    t0: pd.Timestamp
    t1: pd.Timestamp
    start_from: str  # "run.json" or "rows"
    end_from: str

    @property
    def seconds(self) -> float:
        return max(float((self.t1 - self.t0).total_seconds()), 1e-6)

    def note(self) -> str | None:
        missing = [w for w, src in (("started_at", self.start_from), ("ended_at", self.end_from)) if src == "rows"]
        if not missing:
            return None
        what = {1: "start is" if missing[0] == "started_at" else "end is", 2: "start and end are"}[len(missing)]
        return (f"run.json has no usable {' or '.join(missing)}: the run's {what} taken from its iterations "
                f"({self.seconds:.0f} s in all).")


def _when(value: Any) -> pd.Timestamp | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        ts = pd.Timestamp(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def run_span(info: dict, rows: pd.DataFrame) -> Span:
    """The load's span: run.json's start and end, widened to cover every recorded iteration."""
    first, last = rows["ts_start"].min(), rows["ts_end"].max()
    start, end = _when(info.get("started_at")), _when(info.get("ended_at"))
    t0 = min(start, first) if start is not None else first
    t1 = max(end, last) if end is not None else last
    return Span(t0, t1, "run.json" if start is not None else "rows", "run.json" if end is not None else "rows")


def seconds_since(ts: pd.Series, t0: pd.Timestamp) -> np.ndarray:
    return ((ts - t0).dt.total_seconds()).to_numpy(dtype=float)


MIN_COMPARED = 5  # successes on each side of an early / late comparison, at least


def compared_windows(t_ok: np.ndarray, early: tuple[float, float], late: tuple[float, float],
                     n: int = MIN_COMPARED) -> tuple[tuple[float, float], tuple[float, float]]:
    """The start and end levels' windows, each stretched inwards until it holds ``n`` successes.

    On a slow machine a level can hold one or two iterations, and one value compares with nothing: a count
    that grew on every iteration would read "too few successful iterations to compare". With fewer than
    ``2 n`` successes in all, each side takes half of them, so the two never share an iteration.
    """
    ts = np.sort(np.asarray(t_ok, dtype=float))
    k = min(n, len(ts) // 2)
    if k < 1:
        return early, late
    (a0, a1), (b0, b1) = early, late
    if int(((ts >= a0) & (ts <= a1)).sum()) < k:
        a1 = max(a1, float(ts[k - 1]))
    if int(((ts >= b0) & (ts <= b1)).sum()) < k:
        b0 = min(b0, float(ts[-k]))
    return (a0, a1), (b0, b1)


def pick_window(span_s: float, successes: int, per_window: float = 10.0) -> float:
    """A round window length for the time series: about ``per_window`` successes each, 12 to 150 windows."""
    want = span_s * per_window / max(successes, 1)
    lo, hi = span_s / 150, span_s / 12
    inside = [w for w in NICE_WINDOWS if lo <= w <= hi]
    if not inside:
        return float(min(NICE_WINDOWS, key=lambda w: abs(math.log(w / max(hi, 1e-9)))))
    return float(min(inside, key=lambda w: abs(math.log(w / max(want, 1e-9)))))


def warmup_s(first_start: np.ndarray, rows: pd.DataFrame, span: Span) -> float:
    """Seconds until every user had started and one typical iteration had passed (capped at a fifth of the run)."""
    typical = float(np.median(rows["total_ms"].to_numpy())) / 1000 if len(rows) else 0.0
    return float(min(max(first_start.max(), 0.0) + typical, span.seconds / 5))


def user_spans(rows: pd.DataFrame, span: Span) -> tuple[np.ndarray, np.ndarray]:
    """Each user's first start and last end, in seconds since the span's start."""
    g = rows.groupby("user").agg(first=("ts_start", "min"), last=("ts_end", "max"))
    return seconds_since(g["first"], span.t0), seconds_since(g["last"], span.t0)


def users_alive(first: np.ndarray, last: np.ndarray, a: float, b: float) -> float:
    """Users running between a and b seconds, averaged over the stretch."""
    overlap = np.clip(np.minimum(last, b) - np.maximum(first, a), 0, None)
    return float(overlap.sum() / max(b - a, 1e-9))


def window_index(span: Span, window: float) -> pd.Index:
    """Window starts from the load's start; a trailing sliver under half a window is dropped."""
    n = max(1, int(math.floor(span.seconds / window + 0.5)))
    return pd.Index(np.arange(n) * window, name="t")


def with_windows(rows: pd.DataFrame, span: Span, window: float) -> pd.DataFrame:
    """Add ``t``: the start of each row's window (by end time), in seconds since the load's start."""
    out = rows.copy(deep=False)
    out["t"] = np.floor(seconds_since(rows["ts_end"], span.t0) / window) * window
    return out


def exposure(idx: pd.Index, window: float, span: Span) -> np.ndarray:
    """The seconds of each window inside the span (``harness.metrics.numbers.exposure``)."""
    return numbers.exposure(idx.to_numpy(dtype=float), window, span.seconds)


def rate_series(binned: pd.DataFrame, span: Span, window: float) -> pd.DataFrame:
    """Successful and failed iterations per second per window, with the successes' 95 % interval."""
    idx = window_index(span, window)
    ok = binned.loc[binned["ok"], "t"].value_counts().reindex(idx, fill_value=0)
    bad = binned.loc[~binned["ok"], "t"].value_counts().reindex(idx, fill_value=0)
    exp = exposure(idx, window, span)
    lo, hi = poisson_interval(ok.to_numpy(dtype=float))
    return pd.DataFrame({"ok_rate": ok.to_numpy() / exp, "ok_lo": lo / exp, "ok_hi": hi / exp,
                         "failed_rate": bad.to_numpy() / exp, "successes": ok.to_numpy(),
                         "failures": bad.to_numpy()}, index=idx)


def successes(rows: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The successful rows, only the columns asked for (a million-row frame is not copied whole)."""
    ok = rows["ok"].to_numpy(dtype=bool)
    return rows.loc[ok, columns] if not ok.all() else rows[columns]


def step_means(binned: pd.DataFrame, span: Span, window: float) -> pd.DataFrame:
    """Mean ms per step per window, successful iterations only (NaN where none succeeded)."""
    ok = successes(binned, ["t", *STEP_COLUMNS])
    return ok.groupby("t")[STEP_COLUMNS].mean().reindex(window_index(span, window))


def count_means(binned: pd.DataFrame, span: Span, window: float) -> pd.DataFrame:
    """Mean work counts per window, successful iterations only (NaN where none succeeded)."""
    ok = successes(binned, ["t", *COUNT_COLUMNS, "total_ms"])
    return ok.groupby("t")[COUNT_COLUMNS + ["total_ms"]].mean().reindex(window_index(span, window))
