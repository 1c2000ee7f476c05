"""The wait an open fleet's arrivals see, and the queue they build: ``findings.wait`` and its sentence.

Pure functions of the rows and run.json. An arrival's wait runs from its intended start (``ts_intended``)
to its end (``wait_ms``), failed arrivals too: what a swamp user whose CI job arrived then feels. Past
saturation the served rate stays below the arrival rate and the queue grows by the difference each
second, so an arrival ``T`` seconds in waits about ``T x growth / served``; below it the queue stays
bounded. Closed runs' rows carry wait = iteration time (their intended start is their start).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from harness.core.intervals import quantile_interval
from harness.report.series import Span, seconds_since
from harness.report.stats import rate_interval

QUANTILES = {"p50_ms": 0.50, "p95_ms": 0.95, "p99_ms": 0.99}


def waits(rows: pd.DataFrame) -> pd.Series:
    """Each arrival's wait in ms; rows without one (written before the column, or closed) count their total."""
    if "wait_ms" not in rows.columns:
        return rows["total_ms"].astype(float)
    return rows["wait_ms"].astype(float).fillna(rows["total_ms"].astype(float))


def fleet_of(info: dict) -> dict[str, Any]:
    return ((info or {}).get("scenario") or {}).get("fleet") or {}


def is_open(info: dict) -> bool:
    return fleet_of(info).get("arrival") == "open"


def rate_at(fleet: dict[str, Any], elapsed_s: float) -> float:
    """The fleet's asked arrival rate at ``elapsed_s`` (the mirror of ``Fleet.rate_at``, on run.json's dict)."""
    rate, t = float(fleet.get("rate_per_s") or 0.0), 0.0
    for st in fleet.get("stages") or []:
        rate = float(st.get("rate_per_s") or 0.0) or rate
        t += float(st["duration_s"])
        if elapsed_s < t:
            return rate
    return rate


def asked_between(fleet: dict[str, Any], a: float, b: float, step: float = 0.5) -> float:
    """Arrivals asked for between ``a`` and ``b`` seconds into the test (the rate integrated)."""
    if b <= a:
        return 0.0
    edges = np.arange(a, b, step)
    return float(sum(rate_at(fleet, x) * (min(x + step, b) - x) for x in edges))


def queue_growth(asked: float, served: int, seconds: float) -> tuple[float, float, float, bool]:
    """(arrival rate, served rate, growth per s, growing) over a stretch: growing when the served rate's 95 %
    interval lies below the arrival rate (by more than 5 %, so a fleet that keeps up never reads as growing)."""
    lam, mu = asked / seconds, served / seconds
    _, hi = rate_interval(served, seconds)
    growing = hi < lam and mu < 0.95 * lam
    return lam, mu, (lam - mu) if growing else 0.0, growing


def queued_series(rows: pd.DataFrame, span: Span, fleet: dict[str, Any], window: float) -> pd.DataFrame:
    """The number queued (arrived, not yet started) at the end of each window.

    From the rows: arrivals intended by then and started after; past the last served arrival's intended
    start the rows know nothing (those arrivals were still queued at the end), so the asked arrivals since
    are added.
    """
    ti = seconds_since(intended(rows), span.t0)
    ts = seconds_since(rows["ts_start"], span.t0)
    last = float(ti.max()) if len(ti) else 0.0
    t = np.arange(window, span.seconds + window, window)
    t[-1] = min(t[-1], span.seconds)
    counted = np.array([int(((ti <= x) & (ts > x)).sum()) for x in t])
    tail = np.array([asked_between(fleet, last, x) if x > last else 0.0 for x in t])
    return pd.DataFrame({"t": t, "queued": counted + np.round(tail)})


def intended(rows: pd.DataFrame) -> pd.Series:
    if "ts_intended" not in rows.columns:
        return rows["ts_start"]
    return rows["ts_intended"].fillna(rows["ts_start"])


def wait_findings(rows: pd.DataFrame, info: dict, span: Span, window: float) -> dict[str, Any] | None:
    """``findings.wait``: the wait's percentiles and intervals, the queue's growth, and its sentence (open
    runs only: a closed fleet's wait is its iteration time, reported as such already)."""
    if not is_open(info) or rows.empty:
        return None
    fleet = fleet_of(info)
    w = waits(rows).to_numpy()
    out: dict[str, Any] = {k: float(np.quantile(w, p)) for k, p in QUANTILES.items()}
    out["intervals"] = {k: list(quantile_interval(w, p)) for k, p in QUANTILES.items()}
    a, b = span.seconds / 2, span.seconds  # the second half: past the start, where a growing queue shows
    t_end = seconds_since(rows["ts_end"], span.t0)
    served = int(((t_end > a) & (t_end <= b)).sum())
    lam, mu, growth, growing = queue_growth(asked_between(fleet, a, b), served, b - a)
    out.update(arrivals_per_s=lam, served_per_s=mu, queue_growth_per_s=growth, growing=growing,
               arrivals=int(len(w)))
    q = queued_series(rows, span, fleet, window)
    out["queued_end"] = float(q["queued"].iloc[-1]) if len(q) else 0.0
    out["sentence"] = sentence(out)
    return out


def sentence(w: dict[str, Any]) -> str:
    """The report's sentence on the queue: bounded, or growing and how fast."""
    lam, mu, g = w["arrivals_per_s"], w["served_per_s"], w["queue_growth_per_s"]
    if g > 0:
        ten = 600 * g / mu if mu > 0 else math.inf
        return (f"arrivals {lam:.1f}/s, served {mu:.1f}/s: the queue grows {g:.1f} a second; a run arriving "
                f"at minute 10 waits about {_human(ten)}.")
    return (f"arrivals {lam:.1f}/s, served {mu:.1f}/s: the queue stays bounded (the wait's p50 "
            f"{_human(w['p50_ms'] / 1000)}, p99 {_human(w['p99_ms'] / 1000)}).")


def _human(s: float) -> str:
    if not math.isfinite(s):
        return "forever (nothing is served)"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 90:
        return f"{s:.1f} s"
    return f"{s / 60:.0f} min"


def stage_rows(rows: pd.DataFrame, info: dict, span: Span) -> list[dict[str, Any]]:
    """Each ``[[fleet.stages]]`` stage: its span, asked rate and users, served rate, wait p50 / p99 and bound
    (growing or bounded), from the arrivals that started in it."""
    fleet = fleet_of(info)
    out, t0 = [], 0.0
    ti = seconds_since(intended(rows), span.t0)
    t_end = seconds_since(rows["ts_end"], span.t0)
    w = waits(rows).to_numpy()
    for i, st in enumerate(fleet.get("stages") or []):
        t1 = t0 + float(st["duration_s"])
        mine = (ti >= t0) & (ti < t1)
        b = min(t1, span.seconds)
        served = int(((t_end >= t0) & (t_end < b)).sum())
        asked = asked_between(fleet, t0, b) if is_open(info) else 0.0
        row: dict[str, Any] = {"stage": i + 1, "t0": t0, "t1": t1, "workers": st.get("workers") or None,
                               "rate_per_s": rate_at(fleet, t0) if is_open(info) else None,
                               "served_per_s": served / (b - t0) if b > t0 else None,
                               "p50_ms": float(np.quantile(w[mine], 0.5)) if mine.any() else None,
                               "p99_ms": float(np.quantile(w[mine], 0.99)) if mine.any() else None}
        row["bound"] = ("growing" if queue_growth(asked, served, b - t0)[3] else "bounded") \
            if asked and b > t0 else None
        out.append(row)
        t0 = t1
    return out


def saturation(steps: list[dict[str, Any]], closed_per_s: float | None) -> dict[str, Any]:
    """Where the wait starts growing without bound, from a climb's steps (each ``rate_per_s`` and its run's
    ``findings.wait``), beside the closed fleet's rate: the last bounded rate, the first growing one."""
    ordered = sorted((s for s in steps if s["wait"]), key=lambda s: s["rate_per_s"])  # a step with no rows: silent
    growing = [s for s in ordered if s["wait"]["growing"]]
    first = growing[0] if growing else None
    bounded = [s for s in ordered if not s["wait"]["growing"]
               and (first is None or s["rate_per_s"] < first["rate_per_s"])]
    last = bounded[-1] if bounded else None
    closed = f"; the closed fleet's rate {closed_per_s:.2f}/s" if closed_per_s is not None else ""
    if not ordered:
        said = f"no step finished an iteration, so none says where the wait grows{closed}: lengthen --duration"
    elif first is None:
        said = f"the queue stayed bounded up to {ordered[-1]['rate_per_s']:.2f}/s{closed}: climb higher to find " \
               "where it grows"
    else:
        served = first["wait"]["served_per_s"]
        below = f"bounded up to {last['rate_per_s']:.2f}/s" if last else "no lower rate was seen bounded"
        said = (f"the wait grows without bound from {first['rate_per_s']:.2f}/s (served {served:.2f}/s, the queue "
                f"grows {first['wait']['queue_growth_per_s']:.2f} a second); {below}{closed}")
    return {"bounded_up_to_per_s": last["rate_per_s"] if last else None,
            "grows_from_per_s": first["rate_per_s"] if first else None,
            "served_at_saturation_per_s": first["wait"]["served_per_s"] if first else None,
            "closed_per_s": closed_per_s, "sentence": said + "."}
