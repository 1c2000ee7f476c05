"""The fleet's verdict: start, floor and end levels with intervals, degraded or not, and the shape.

The run's span is the load's own (run.json ``started_at``..``ended_at``), so a
run whose workers hang before the end reads ``stalled`` instead of ending on its
last row. After a warm-up (every user started plus one typical iteration), the
span is cut into a few equal segments, each holding enough successful
iterations for a usable Poisson interval; the intervals are widened when the
counts are more variable than Poisson (quasi-Poisson). A level is "credibly
below" another only when their 95 % intervals do not overlap and the gap is
material (15 %), so a flat run is very rarely called degraded or falling.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.report.series import Span, pick_window, seconds_since, user_spans, users_alive, warmup_s
from harness.report.stats import MATERIAL, rate_interval

MAX_SEGMENTS = 6
MIN_SEGMENTS = 3
PER_SEGMENT = 20  # successes a segment should hold before the run is cut finer
STALL_P = 1e-3  # a trailing gap this unlikely at the rate before it is a stall, not chance
SHAPES = ("flat", "still falling", "rising", "recovering", "stalled")


@dataclass(frozen=True)
class Level:
    """Successful iterations per second over one stretch of the run, with a 95 % interval."""

    t0: float
    t1: float
    successes: int
    failures: int
    rate: float
    lo: float
    hi: float
    users: float  # users running, averaged over the stretch

    def below(self, other: Level, material: float = MATERIAL) -> bool:
        """Credibly below ``other``: the intervals do not overlap and the gap is material."""
        return self.hi < other.lo and self.rate <= (1 - material) * other.rate

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["per_user"] = self.rate / self.users if self.users > 0 else None
        return d


def segment_edges(a: float, b: float, successes: int) -> np.ndarray:
    n = int(np.clip(successes // PER_SEGMENT, MIN_SEGMENTS, MAX_SEGMENTS))
    return np.linspace(a, b, n + 1)


def _counts(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(edges, times, side="right") - 1
    idx = np.where(times == edges[-1], len(edges) - 2, idx)  # the run's last instant belongs to the last segment
    inside = (idx >= 0) & (idx < len(edges) - 1)
    return np.bincount(idx[inside], minlength=len(edges) - 1)


def dispersion(ok_t: np.ndarray, edges: np.ndarray, window: float) -> float:
    """Variance over mean of the success counts in sub-windows of each segment (1 = Poisson; at least 1)."""
    chi2, df = 0.0, 0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        m = max(2, int(round((b - a) / max(window, 1e-9))))
        sub = _counts(ok_t, np.linspace(a, b, m + 1))
        e = sub.sum() / m
        if e <= 0:
            continue
        chi2 += float(((sub - e) ** 2).sum() / e)
        df += m - 1
    return max(1.0, chi2 / df) if df >= 5 else 1.0


def levels(ok_t: np.ndarray, fail_t: np.ndarray, edges: np.ndarray, phi: float,
           users: tuple[np.ndarray, np.ndarray]) -> list[Level]:
    ok_n, fail_n = _counts(ok_t, edges), _counts(fail_t, edges)
    out = []
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        lo, hi = rate_interval(float(ok_n[i]), b - a, phi)
        out.append(Level(float(a), float(b), int(ok_n[i]), int(fail_n[i]), ok_n[i] / (b - a), lo, hi,
                         users_alive(*users, a, b)))
    return out


def stall(ok_t: np.ndarray, fail_t: np.ndarray, end: float, window: float, typical_s: float,
          segment_s: float) -> dict[str, Any] | None:
    """A trailing stretch with no successful iteration that the rate before it makes implausible.

    The reference rate is the success rate over the segment-long stretch before
    the last success (the whole run when nothing succeeded in it). None when
    the run kept succeeding to its end.
    """
    if len(ok_t) == 0:
        return {"since_s": 0.0, "gap_s": end, "rate_before": None, "p": None, "failures_in_gap": int(len(fail_t))}
    last = float(ok_t.max())
    gap = end - last
    ref_start = max(0.0, last - segment_s)
    n_ref = int(((ok_t > ref_start) & (ok_t <= last)).sum())
    rate = n_ref / max(last - ref_start, 1e-9)
    p = math.exp(-rate * gap)
    if gap < max(2 * window, 2 * typical_s) or p >= STALL_P:
        return None
    return {"since_s": last, "gap_s": gap, "rate_before": rate, "p": p,
            "failures_in_gap": int((fail_t > last).sum())}


def falling_at_end(lv: list[Level]) -> bool:
    """The last segment credibly below the one before it, or below the one before that with the one between
    them in order (a steady fall over the last segments, too gentle for one step to show)."""
    if len(lv) >= 2 and lv[-1].below(lv[-2]):
        return True
    return len(lv) >= 3 and lv[-1].below(lv[-3]) and lv[-1].rate <= lv[-2].rate <= lv[-3].rate


def _typical_s(rows: pd.DataFrame) -> float:
    ok_ms = rows.loc[rows["ok"], "total_ms"]
    return float(ok_ms.median()) / 1000 if len(ok_ms) else 0.0


def find_stall(rows: pd.DataFrame, span: Span) -> dict[str, Any] | None:
    """The stall test on its own (for the CI gate): the same window, warm-up and segments as the verdict."""
    t = seconds_since(rows["ts_end"], span.t0)
    ok = rows["ok"].to_numpy(dtype=bool)
    ok_t, fail_t = t[ok], t[~ok]
    window = pick_window(span.seconds, int(ok.sum()))
    warm = warmup_s(user_spans(rows, span)[0], rows, span)
    edges = segment_edges(warm, span.seconds, int((ok_t >= warm).sum()))
    return stall(ok_t, fail_t, span.seconds, window, _typical_s(rows), float(edges[1] - edges[0]))


def fleet_verdict(rows: pd.DataFrame, span: Span, window: float) -> dict[str, Any]:
    """Start / floor / end levels with intervals, ``degraded`` and ``shape`` (one of SHAPES)."""
    t = seconds_since(rows["ts_end"], span.t0)
    ok = rows["ok"].to_numpy(dtype=bool)
    ok_t, fail_t = t[ok], t[~ok]
    end = span.seconds
    users = user_spans(rows, span)
    warm = warmup_s(users[0], rows, span)
    edges = segment_edges(warm, end, int((ok_t >= warm).sum()))
    phi = dispersion(ok_t, edges, window)
    lv = levels(ok_t, fail_t, edges, phi, users)
    start, last = lv[0], lv[-1]
    rates = np.array([x.rate for x in lv])
    floor_i = int(np.flatnonzero(rates == rates.min())[-1])  # of equal lows, the latest: a floor that holds
    floor = lv[floor_i]
    degraded = floor.below(start)
    stalled = stall(ok_t, fail_t, end, window, _typical_s(rows), float(edges[1] - edges[0]))
    if stalled is not None:
        shape = "stalled"
    elif falling_at_end(lv):
        shape = "still falling"
    elif degraded and floor_i < len(lv) - 1 and floor.below(last):
        shape = "recovering"
    elif not degraded and start.below(last):
        shape = "rising"
    else:
        shape = "flat"
    return {
        "start_rate": start.rate, "start_interval": [start.lo, start.hi],
        "floor_rate": floor.rate, "floor_interval": [floor.lo, floor.hi], "floor_at_s": [floor.t0, floor.t1],
        "end_rate": last.rate, "end_interval": [last.lo, last.hi],
        "degraded": bool(degraded), "shape": shape,
        "degradation_ratio": start.rate / floor.rate if floor.rate > 0 else None,
        "degradation_note": None if floor.rate > 0 else "no iteration succeeded in the lowest segment",
        "end_over_floor": last.rate / floor.rate if floor.rate > 0 else None,
        "end_over_start": last.rate / start.rate if start.rate > 0 else None,
        "warmup_s": warm, "dispersion": phi, "segment_s": float(edges[1] - edges[0]),
        "levels": [x.as_dict() for x in lv], "floor_index": floor_i, "stall": stalled,
    }


def rate_between(rows: pd.DataFrame, span: Span, a: float, b: float) -> tuple[int, float, float, float]:
    """Successes between a and b seconds of the span: (count, rate, interval low, interval high)."""
    t = seconds_since(rows.loc[rows["ok"], "ts_end"], span.t0)
    n = int(((t > a) & (t <= b)).sum())
    lo, hi = rate_interval(n, b - a)
    return n, n / max(b - a, 1e-9), lo, hi
