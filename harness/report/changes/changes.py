"""Where the rate changed, and what the run recorded then: change points on the rate and each step's time.

Detection is ``ruptures``' exact segmentation under a penalty (PELT) with the l2 cost (``KernelCPD`` with the
linear kernel: the same cost, solved in C), on per-window signals
after the warm-up, each scaled to unit noise so that one penalty means one false-alarm rate:

- the rate: successful iterations per window, Anscombe-transformed (``2 sqrt(x + 3/8)``: a Poisson count's
  variance becomes 1) and divided by the square root of the verdict's dispersion (more variable than Poisson:
  wider noise);
- each step's mean time over bins of successive successful iterations (20 a bin at least, at most 300 bins),
  divided by the noise of a bin's mean (the pooled spread within bins over sqrt(bin)): equal counts, so equal
  noise, and a change is placed at a bin's end.

The rate's window is the report's, widened until a window expects 25 successes (never fewer than 12 windows).

The penalty is ``PENALTY_C x log(windows)``: on flat Poisson series of 20-80 windows, ``PENALTY_C = 3`` finds a
change in 1-2.5 % of runs (calibrated by simulation, 200 series per size and rate; 2 finds one in 5-15 %), so the
stated false-alarm rate is at most 1 run in 20 (``FALSE_ALARM_RATE``; test_changes.py counts it over 60 flat
runs). A change is placed at a window's edge: "within one window" of the truth is its resolution.

Each change is annotated with what the run recorded within a window of it: workers joining or leaving, a stage
beginning, a kind of failure starting or bursting (throttles, lock timeouts, faults), the bound moving between
the verdict's segments, a step whose time changed at the same moment. The segments stay the verdict's levels
(the change points stand beside them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

PENALTY_C = 3.0
FALSE_ALARM_RATE = 0.05  # stated: at most this share of flat runs shows a change (measured 1-2.5 %)
MIN_SIZE = 3  # windows a segment holds at least
STEP_MIN_SIZE = 2  # bins: a bin that straddles a jump (half before, half after) may stand nearly alone
MIN_WINDOWS = 12  # fewer windows after the warm-up: no detection
MIN_SUCCESSES = 120  # nor with fewer successful iterations after it
PER_WINDOW = 25  # successes a rate window should expect: the count's noise near Gaussian after Anscombe's transform
STEP_BIN = 20  # successful iterations a step's bin holds at least (its mean near Gaussian)
MAX_BINS = 300
BURST = 3.0  # a failure kind's count in the windows after a change this many times the count before: a burst


def detect(signal: np.ndarray, min_size: int = MIN_SIZE) -> list[int]:
    """Indices (into ``signal``) where a new segment starts; the signal is scaled to unit noise."""
    import ruptures as rpt

    n = len(signal)
    if n < MIN_WINDOWS or not np.isfinite(signal).all() or np.ptp(signal) == 0:
        return []
    # the linear kernel's cost is the l2 cost (sum of squared deviations from a segment's mean), and ruptures'
    # KernelCPD solves the penalised problem in C: the same change points as Pelt(model="l2"), ~700x faster
    algo = rpt.KernelCPD(kernel="linear", min_size=min_size, jump=1).fit(signal.reshape(-1, 1))
    return [int(b) for b in algo.predict(pen=PENALTY_C * math.log(n))[:-1]]


def rate_signal(counts: np.ndarray, dispersion: float) -> np.ndarray:
    return 2 * np.sqrt(counts + 3 / 8) / math.sqrt(max(dispersion, 1.0))


def bins(t: np.ndarray, v: np.ndarray, per: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Successive successful iterations in bins of ``per`` (in time order): each bin's mean, its end time, and
    the noise of a bin's mean (the pooled spread within bins over sqrt(per)): equal counts, equal noise."""
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    k = len(v) // per
    m = v[: k * per].reshape(k, per)
    noise = float(np.sqrt(np.mean(m.var(axis=1, ddof=1)) / per)) if per > 1 else 0.0
    return m.mean(axis=1), t[per - 1: k * per: per], noise


def _segment_means(x: np.ndarray, cuts: list[int]) -> list[float]:
    edges = [0, *cuts, len(x)]
    return [float(np.nanmean(x[a:b])) if b > a else math.nan for a, b in zip(edges[:-1], edges[1:], strict=True)]


def detection_window(window: float, successes: int, seconds: float) -> float:
    """The report's window, widened until a window expects ``PER_WINDOW`` successes (a near-Gaussian count), but
    never past ``MIN_WINDOWS`` windows in the stretch: the change points' resolution."""
    rate = successes / seconds if seconds > 0 else 0.0
    wide = PER_WINDOW / rate if rate > 0 else window
    return float(max(window, min(wide, seconds / MIN_WINDOWS)))


def find(t_ok: np.ndarray, ok_rows: pd.DataFrame, steps: dict[str, str], warm: float, end: float, window: float,
         dispersion: float) -> dict[str, Any]:
    """The change points of the rate and of each step's time (``steps``: column -> label), unannotated."""
    window = detection_window(window, int(((t_ok >= warm) & (t_ok <= end)).sum()), end - warm)
    edges = np.arange(warm, end - window / 2, window)
    edges = np.append(edges, edges[-1] + window) if len(edges) else edges
    out: dict[str, Any] = {"window_s": window, "from_s": warm, "windows": max(len(edges) - 1, 0),
                           "method": "ruptures KernelCPD (linear kernel = l2 cost), penalised", "penalty": None,
                           "false_alarm_rate": FALSE_ALARM_RATE, "rate": [], "steps": {}}
    n_ok = int(((t_ok >= warm) & (t_ok <= end)).sum())
    if len(edges) - 1 < MIN_WINDOWS or n_ok < MIN_SUCCESSES:
        out["note"] = (f"{n_ok} successful iterations in {max(len(edges) - 1, 0)} windows after the warm-up: too few "
                       f"to look for changes (at least {MIN_SUCCESSES} in {MIN_WINDOWS} windows)")
        return out
    n = len(edges) - 1
    out["penalty"] = PENALTY_C * math.log(n)
    counts = np.histogram(t_ok, edges)[0].astype(float)
    cuts = detect(rate_signal(counts, dispersion))
    levels = _segment_means(counts / window, cuts)
    out["rate"] = [{"t_s": float(edges[c]), "before": levels[i], "after": levels[i + 1], "unit": "it/s"}
                   for i, c in enumerate(cuts)]
    for col, label in steps.items():
        v = ok_rows[col].to_numpy(dtype=float)
        keep = (t_ok >= warm) & (t_ok <= end) & np.isfinite(v)
        if not np.any(v[keep]):
            continue
        per = max(STEP_BIN, int(np.ceil(keep.sum() / MAX_BINS)))
        means, at, noise = bins(t_ok[keep], v[keep], per)
        if len(means) < MIN_WINDOWS or not noise > 0:
            continue
        c = detect(means / noise, STEP_MIN_SIZE)
        lv = _segment_means(means, c)
        if c:  # a change between two bins: placed at the first one's end
            out["steps"][label] = [{"t_s": float(at[k - 1]), "before": lv[i], "after": lv[i + 1], "unit": "ms",
                                    "bin_iterations": per} for i, k in enumerate(c)]
    return out


def annotate(ch: dict[str, Any], f: dict[str, Any], rows: pd.DataFrame, t_all: np.ndarray,
             users: tuple[np.ndarray, np.ndarray]) -> None:
    """Each rate change's ``near``: what the run recorded within a window of it (in place); and ``first``."""
    w = float(ch["window_s"])
    for c in ch["rate"]:
        c["near"] = near(c["t_s"], w, f, rows, t_all, users, ch["steps"])
    first = ch["rate"][0] if ch["rate"] else None
    ch["first"] = first
    ch["sentence"] = sentence(ch)


def near(t: float, w: float, f: dict[str, Any], rows: pd.DataFrame, t_all: np.ndarray,
         users: tuple[np.ndarray, np.ndarray], steps: dict[str, list[dict[str, Any]]]) -> list[str]:
    """What the run recorded within one window of ``t`` (the change's resolution)."""
    from harness.report.series import users_alive

    said: list[str] = []
    before, after = users_alive(*users, t - 2 * w, t - w), users_alive(*users, t + w, t + 2 * w)
    if abs(after - before) >= 0.5:
        said.append(f"workers {'joined' if after > before else 'left'} ({before:.3g} -> {after:.3g} running)")
    for s in f.get("stages") or []:
        if abs(float(s.get("t0", -1e9)) - t) <= w:
            said.append(f"stage {s.get('stage')} began at {float(s['t0']):.0f} s")
    kinds = rows["error_kind"].to_numpy()
    ok = rows["ok"].to_numpy(dtype=bool)
    for kind in sorted(set(kinds[~ok])):
        m = (~ok) & (kinds == kind)
        a = int((m & (t_all >= t - 2 * w) & (t_all < t)).sum())
        b = int((m & (t_all >= t) & (t_all < t + 2 * w)).sum())
        if a == 0 and b >= 2:
            said.append(f"{kind.replace('_', ' ')} failures started ({b} in the {2 * w:g} s after)")
        elif b >= BURST * max(a, 1) and b >= 3:
            said.append(f"a burst of {kind.replace('_', ' ')} failures ({a} -> {b} per {2 * w:g} s)")
    segs = f.get("bottlenecks") or []
    at = [d for d in segs if d["seconds"][0] - w <= t <= d["seconds"][1] + w]
    names = [(d.get("kind"), d.get("name")) for d in at]
    if len(set(names)) > 1:
        a, b = names[0], names[-1]
        said.append(f"the bound moved ({' '.join(x for x in a if x) or 'none'} -> "
                    f"{' '.join(x for x in b if x) or 'none'})")
    for label, cs in steps.items():
        for c in cs:
            if abs(c["t_s"] - t) <= w:
                said.append(f"the {label} step's time changed too ({c['before']:.3g} -> {c['after']:.3g} ms)")
    return said


def sentence(ch: dict[str, Any]) -> str | None:
    """The first screen's line: the first change of the rate and what was recorded near it."""
    first = ch.get("first")
    if ch.get("penalty") is None:
        return None
    if not first:
        return f"No change in the rate after the warm-up ({ch['windows']} windows of {ch['window_s']:.3g} s)."
    cause = "; ".join(first["near"][:2]) if first.get("near") else "nothing recorded within a window of it"
    return (f"The rate changed first at {first['t_s']:.0f} s ({first['before']:.3g} -> {first['after']:.3g} it/s): "
            f"{cause}.")
