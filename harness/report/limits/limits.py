"""The next ceiling: items on course for DynamoDB's size limit, keys on course for the per-key throughput limit.

Two hard limits no amount of capacity lifts (FACTS.md): an item holds at most
400 KB, and one partition key takes about 1,000 write and 3,000 read units a
second. swamp's bookkeeping meets both (docs/swamp-today.md): its partition
registry only grows, and every push writes ``SYNCSTATE#global``.

- **Item size**: the rows' size columns (``registry_bytes``: the registry item
  as each push that grew it saw it) against time, a least-squares line with a
  95 % interval on its slope; from the last size and the slope, when the item
  reaches the limit: in seconds, and in iterations at this fleet's rate.
- **Key throughput**: the hottest partition key of each kind (the utilization
  table's ``partition`` rows, from keys.csv) against the limit the run was
  modelled with, and against DynamoDB's own (the run's limit may be scaled
  down: ``[fidelity] scale``): the fleet multiple at which it throttles.

A forecast is **on course** when the limit falls within the horizon: the run's
own length, or the stated one (``HORIZON_S``, 24 h, unless the caller gives one).
Pure functions: numbers in, JSON-ready dicts out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.record.schema import SIZE_ITEMS
from harness.report.stats import t_quantile

ITEM_LIMIT_BYTES = 400 * 1024
KEY_LIMITS = {"write": 1000.0, "read": 3000.0}  # units/s one partition key takes (DynamoDB's, unscaled)
HORIZON_S = 24 * 3600.0
MIN_POINTS = 4
SLOWING = 0.8  # the second half's growth credibly below the first's, and by a fifth at least: "slowed"


def line(t: np.ndarray, y: np.ndarray) -> tuple[float, float, tuple[float, float]] | None:
    """Least squares y = a + b t: (a, b, 95 % interval of b); None with too few points or no spread in t."""
    n = len(t)
    if n < MIN_POINTS or float(np.ptp(t)) <= 0:
        return None
    tm, ym = float(t.mean()), float(y.mean())
    sxx = float(((t - tm) ** 2).sum())
    b = float(((t - tm) * (y - ym)).sum()) / sxx
    a = ym - b * tm
    resid = y - (a + b * t)
    se = float(np.sqrt((resid ** 2).sum() / (n - 2) / sxx))
    h = t_quantile(n - 2) * se
    return a, b, (b - h, b + h)


def _when(remaining: float, slope: float) -> float | None:
    return remaining / slope if slope > 0 else None


def item_forecast(item: str, t: np.ndarray, size: np.ndarray, *, rate: float, run_s: float,
                  horizon_s: float = HORIZON_S, limit: float = ITEM_LIMIT_BYTES) -> dict[str, Any] | None:
    """When ``item`` (sizes ``size`` seen at ``t`` seconds) reaches ``limit`` bytes, at ``rate`` iterations/s.

    An iteration that did not see the item (0: it wrote and read nothing of it)
    counts as seeing it as it was last seen: an item is the size it was until
    something changes it, and a line through only the iterations that changed
    it would miss that it stopped growing.
    """
    order = np.argsort(t, kind="stable")
    t, size = t[order], pd.Series(np.where(size[order] > 0, size[order], np.nan)).ffill().to_numpy()
    keep = np.isfinite(size)
    t, size = t[keep], size[keep]
    fit = line(t, size)
    if fit is None:
        return None
    a, slope, (lo, hi) = fit
    last = float(size[-1])
    # from the line's level at the end, not the largest size seen: with noise, the largest overshoots
    remaining = max(0.0, limit - max(a + slope * float(t[-1]), 0.0))
    eta = _when(remaining, slope)
    # the interval: the steepest slope the data allow reaches it first, the flattest last (or never)
    soonest, latest = _when(remaining, hi), _when(remaining, lo)
    per_it = slope / rate if rate > 0 else None
    # growth that slows down (a registry of long-lived models fills up) makes the straight line pessimistic
    mid = float(np.median(t))
    first, second = line(t[t <= mid], size[t <= mid]), line(t[t > mid], size[t > mid])
    slowing = bool(first and second and second[2][1] < first[2][0] and second[1] < SLOWING * first[1])
    out = {"kind": "item size", "name": item, "limit": limit, "unit": "bytes", "now": last,
           "growth_per_s": slope, "growth_per_s_interval": [lo, hi],
           "growth_per_iteration": per_it, "points": int(len(t)),
           "seconds_to_limit": eta, "seconds_to_limit_interval": [soonest, latest],
           "iterations_to_limit": eta * rate if eta is not None and rate > 0 else None,
           "growing": lo > 0, "within_run": eta is not None and eta <= run_s, "slowing": slowing,
           "halves_growth_per_s": [first[1] if first else None, second[1] if second else None],
           "within_horizon": soonest is not None and soonest <= horizon_s and lo > 0, "horizon_s": horizon_s}
    out["sentence"] = item_sentence(out)
    return out


def key_forecast(row: dict[str, Any], *, scale: float, limits: dict[str, float] = KEY_LIMITS) -> dict[str, Any]:
    """The hottest key of one kind (a utilization ``partition`` row) against the modelled and DynamoDB's limit."""
    ev = row["evidence"]
    units, used, modelled = ev["units"], float(ev["used_per_s"]), float(ev["limit_per_s"])
    real = limits[units]  # DynamoDB's own, whatever the run's model was scaled to
    iv = row.get("interval") or [row["utilization"], row["utilization"]]
    out = {"kind": "key throughput", "name": row["name"], "units": units, "table": ev.get("table"),
           "index": ev.get("index"), "used_per_s": used,
           "modelled_limit_per_s": modelled, "scale": scale, "limit_per_s": real,
           "share_of_modelled": used / modelled if modelled else None, "share_interval": list(iv),
           "share_of_limit": used / real if real else None,
           "throttles": int(ev.get("throttles") or 0),
           "fleet_multiple_to_modelled": modelled / used if used > 0 else None,
           "fleet_multiple_to_limit": real / used if used > 0 else None}
    out["within_run"] = out["throttles"] > 0 or (used >= modelled > 0)
    out["sentence"] = key_sentence(out)
    return out


def forecasts(rows_t: np.ndarray, sizes: dict[str, np.ndarray], partitions: list[dict[str, Any]], *,
              rate: float, run_s: float, scale: float, horizon_s: float = HORIZON_S) -> list[dict[str, Any]]:
    """Every forecast of a run: the growing items (by size column) and the hottest keys, soonest first."""
    out = []
    for col, size in sizes.items():
        f = item_forecast(SIZE_ITEMS.get(col, col), rows_t, size, rate=rate, run_s=run_s, horizon_s=horizon_s)
        if f is not None:
            out.append(f)
    out += [key_forecast(r, scale=scale) for r in partitions]
    return sorted(out, key=_urgency)


def _urgency(f: dict[str, Any]) -> float:
    """Sort key, soonest first: an item's seconds to its limit; a key throttling now first, else its fleet
    multiple counted as that many hours (a key at 2x is as near as an item 2 h away: a rough common scale)."""
    if f["kind"] == "item size":
        return f["seconds_to_limit"] if f["seconds_to_limit"] is not None else float("inf")
    m = f["fleet_multiple_to_limit"]
    return 0.0 if f["within_run"] else (m if m is not None else float("inf")) * 3600


# ---- words -----------------------------------------------------------------------------------


def _bytes(x: float) -> str:
    return f"{x / 1024:,.0f} KB" if x >= 10 * 1024 else f"{x:,.0f} B"


def _dur(s: float | None) -> str:
    if s is None:
        return "never"
    if s < 120:
        return f"{s:.0f} s"
    if s < 2 * 3600:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:,.0f} days"


def _count(x: float | None) -> str:
    if x is None:
        return "never"
    return f"{x:,.0f}" if x < 1e4 else f"{float(f'{x:.2g}'):,.0f}"


def item_sentence(f: dict[str, Any]) -> str:
    name, lim = f"`{f['name']}`", _bytes(f["limit"])
    if not f["growing"]:
        return (f"{name} is {_bytes(f['now'])}; its growth over the run ({f['growth_per_s']:+.1f} B/s, 95 % "
                f"interval {f['growth_per_s_interval'][0]:+.1f} to {f['growth_per_s_interval'][1]:+.1f}) is not "
                f"clearly above zero: no course for the {lim} item limit.")
    per = f"{f['growth_per_iteration']:,.1f} B an iteration" if f["growth_per_iteration"] else \
        f"{f['growth_per_s']:,.1f} B/s"
    soon, late = f["seconds_to_limit_interval"]
    eta, h = f["seconds_to_limit"], f["horizon_s"]
    where = ("within this run" if f["within_run"] else f"within {_dur(h)}" if eta is not None and eta <= h
             else f"possibly within {_dur(h)} (the interval's soonest end)" if f["within_horizon"]
             else f"beyond {_dur(h)}")
    out = (f"{name} grew {per} (now {_bytes(f['now'])}): at this fleet's rate it reaches DynamoDB's {lim} item "
           f"limit after ~{_count(f['iterations_to_limit'])} iterations (~{_dur(f['seconds_to_limit'])}; 95 %: "
           f"{_dur(soon)} to {_dur(late)}), {where}.")
    if f.get("slowing"):
        a, b = f["halves_growth_per_s"]
        out += (f" Its growth slowed over the run ({a:,.1f} B/s in the first half, {b:,.1f} in the second): if it "
                f"levels off (a registry of long-lived models is full once every model is in it), it never gets there.")
    return out


def key_sentence(f: dict[str, Any]) -> str:
    u = "WCU" if f["units"] == "write" else "RCU"
    name = f"`{f['name']}`"
    lo, hi = max(0.0, f["share_interval"][0]), f["share_interval"][1]  # a share is not below 0 (the interval can be)
    real = (f"{f['used_per_s']:,.1f} {u}/s, {f['share_of_limit'] * 100:.1f} % of one partition key's "
            f"{f['limit_per_s']:,.0f}")
    if f["scale"] != 1 and f["share_of_modelled"] is not None:
        model = (f"; the run's capacity model is scaled by {f['scale']:g} (a partition key takes "
                 f"{f['modelled_limit_per_s']:,.1f} {u}/s there), and it took {f['share_of_modelled'] * 100:.0f} % "
                 f"[{lo * 100:.0f}-{hi * 100:.0f}] of that")
    else:
        model = f" [{lo * 100:.0f}-{hi * 100:.0f} %]"
    thr = f", {f['throttles']:,} throttled attempts" if f["throttles"] else ""
    m = f["fleet_multiple_to_limit"]
    at = (f"at {m:.1f}x this fleet it throttles at DynamoDB's limit" if m is not None and m >= 1
          else "this fleet is past DynamoDB's limit")
    if f["throttles"] and m is not None and m >= 1:  # what it got is capped by the throttles: it asked for more
        at = f"at no more than {m:.1f}x this fleet it throttles at DynamoDB's limit (its throttled demand was higher)"
    return f"{name} takes {real}{model}{thr}: {at}."
