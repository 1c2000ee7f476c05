"""The run report's time series and tables behind the figures: pure functions of rows, a span and a window.

The windows themselves, the rate series and the per-window means every product
uses are ``harness/report/series.py``; here are the run report's own: failures by kind,
percentiles, users running, the tables and the lock-wait histogram.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import numbers
from harness.report.load import STEP_COLUMNS
from harness.report.run.causes import STEP_LABELS
from harness.report.series import Span, exposure, seconds_since, successes, window_index

PERCENTILES = (50, 66, 75, 80, 90, 95, 98, 99, 99.9, 100)
ERROR_KINDS = ["lock_timeout", "throttled", "fenced", "conflict", "timeout", "connection", "push_failed", "other"]
MAX_FAILURE_ROWS = 20


def failure_series(binned: pd.DataFrame, span: Span, window: float) -> pd.DataFrame:
    """Failed iterations per second per window, one column per error kind that occurred."""
    idx = window_index(span, window)
    failed = binned[~binned["ok"]]
    kinds = [k for k in ERROR_KINDS if (failed["error_kind"] == k).any()]
    kinds += sorted(set(failed["error_kind"].unique()) - set(ERROR_KINDS))
    table = failed.groupby(["t", "error_kind"]).size().unstack("error_kind", fill_value=0)
    table = table.reindex(index=idx, columns=kinds, fill_value=0)
    return table.div(exposure(idx, window, span), axis=0)


def percentile_series(binned: pd.DataFrame, span: Span, window: float, columns: list[str],
                      qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> pd.DataFrame:
    """p50/p95/p99 of each column per window over successful iterations; columns are (column, pNN)."""
    ok = successes(binned, ["t", *columns])
    q = ok.groupby("t")[columns].quantile(list(qs)).unstack(level=-1)
    q.columns = pd.MultiIndex.from_tuples([(c, f"p{int(round(x * 100))}") for c, x in q.columns])
    return q.reindex(window_index(span, window))


def users_series(rows: pd.DataFrame, users: pd.DataFrame | None, span: Span, window: float) -> pd.Series:
    """Users running per window: Locust's own count when recorded, else from each user's first and last row."""
    idx = window_index(span, window)
    starts = idx.to_numpy(dtype=float)
    if users is not None and not users.empty:
        t = seconds_since(users["ts"], span.t0)
        keep = (t >= -window) & (t <= span.seconds + window)
        if keep.any():
            s = pd.Series(users["users"].to_numpy()[keep], index=t[keep]).sort_index()
            pos = np.clip(np.searchsorted(s.index.to_numpy(), starts + window / 2, side="right") - 1, 0, len(s) - 1)
            return pd.Series(s.to_numpy()[pos], index=idx, name="users")
    g = rows.groupby("user").agg(first=("ts_start", "min"), last=("ts_end", "max"))
    first, last = seconds_since(g["first"], span.t0), seconds_since(g["last"], span.t0)
    alive = (first[None, :] < starts[:, None] + window) & (last[None, :] > starts[:, None])
    return pd.Series(alive.sum(axis=1), index=idx, name="users")


def percentile_table(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Locust's response-time table, per step: successful iterations per step, then whole iterations."""
    ok = successes(rows, [*STEP_COLUMNS, "total_ms"])
    out = []
    cols = [(STEP_LABELS[c], ok[c]) for c in STEP_COLUMNS if ok[c].any()]
    cols += [("iteration (succeeded)", ok["total_ms"]), ("iteration (failed)", rows.loc[~rows["ok"], "total_ms"])]
    for label, s in cols:
        v = s.to_numpy(dtype=float)
        if len(v) == 0:
            continue
        pct = numbers.percentiles(v, PERCENTILES)
        out.append({"name": label, "count": int(len(v)), "mean": float(v.mean()), "min": float(v.min()),
                    "max": float(v.max()), **{f"p{p:g}": float(x) for p, x in zip(PERCENTILES, pct, strict=True)}})
    return out


def failure_table(rows: pd.DataFrame, span: Span) -> tuple[list[dict[str, Any]], int]:
    """Failures grouped by kind and full message, with first and last seen; (table, messages left out)."""
    failed = rows[~rows["ok"]]
    if failed.empty:
        return [], 0
    g = failed.groupby(["error_kind", "error"], sort=False)["ts_end"].agg(["size", "min", "max"])
    g = g.sort_values("size", ascending=False)
    out = []
    for (kind, msg), r in g.head(MAX_FAILURE_ROWS).iterrows():
        out.append({"kind": kind, "message": msg, "count": int(r["size"]),
                    "first_seen": r["min"].isoformat(), "last_seen": r["max"].isoformat(),
                    "first_s": float((r["min"] - span.t0).total_seconds()),
                    "last_s": float((r["max"] - span.t0).total_seconds())})
    return out, max(0, len(g) - MAX_FAILURE_ROWS)


def step_shares(ok: pd.DataFrame) -> pd.Series:
    """Share of a successful iteration's time per step (``harness.metrics.numbers.shares``)."""
    means = ok[STEP_COLUMNS].mean().fillna(0.0)
    return pd.Series(numbers.shares(means.to_dict()), index=means.index, dtype=float)


LOCK_WAIT_COLUMNS = ("lock_wait_ms", "commit_lock_ms")  # two-phase waits twice: the model lock, the global one


def lock_waits(rows: pd.DataFrame) -> pd.Series:
    """Each iteration's time waiting for locks, every lock it took: the lock step and (two-phase) the commit
    lock's, so both profiles are measured alike (a two-phase timeout of the commit acquire waited there)."""
    cols = [c for c in LOCK_WAIT_COLUMNS if c in rows.columns]
    return rows[cols].fillna(0.0).sum(axis=1) if cols else pd.Series(0.0, index=rows.index)


def lock_wait_histogram(rows: pd.DataFrame, bins: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-spaced bin edges (ms) and the counts of succeeded and failed iterations' lock waits in them."""
    waits = np.clip(lock_waits(rows).to_numpy(dtype=float), 0.1, None)
    ok = rows["ok"].to_numpy(dtype=bool)
    edges = np.logspace(-1, np.log10(max(float(waits.max()), 1.0)) + 0.01, bins + 1)
    return edges, np.histogram(waits[ok], edges)[0], np.histogram(waits[~ok], edges)[0]


def bound_series(f: dict[str, Any], others: int = 2) -> dict[str, Any] | None:
    """The utilization per segment of what binds the fleet (else the busiest resource), with the ``others``
    busiest shared resources beside it: ``{"segments": [(t0, t1)], "series": {label: [(u, lo, hi)]}, "bound":
    label, "marks": {label: saturation}}`` from the findings' per-segment utilization tables."""
    per = f.get("bottlenecks") or []
    overall = f.get("utilization") or []
    if not per or not overall:
        return None
    b = f.get("bottleneck") or {}
    key = (b["kind"], b["name"]) if b.get("kind") else (overall[0]["kind"], overall[0]["name"])
    shared = sorted((u for u in overall if u["kind"] != "step" and (u["kind"], u["name"]) != key),
                    key=lambda u: (not u["can_bind"], -u["utilization"]))  # those that could bind first
    keys = [key, *[(u["kind"], u["name"]) for u in shared[:others]]]
    cannot = {(u["kind"], u["name"]) for u in overall if not u["can_bind"]}

    def label(k: tuple[str, str]) -> str:
        said = k[1] if k[1].startswith(f"{k[0]} ") else f"{k[0]} {k[1]}".strip()  # "partition 3 of 4", said once
        return said + (" (cannot bind)" if k in cannot and k != key else "")

    series: dict[str, list[tuple[float, float, float]]] = {label(k): [] for k in keys}
    for d in per:
        rows = {(u["kind"], u["name"]): u for u in d.get("utilization_table") or []}
        for k in keys:
            u = rows.get(k)
            nan = float("nan")
            iv = (u or {}).get("interval") or [nan, nan]
            series[label(k)].append((u["utilization"], iv[0], iv[1]) if u else (nan, nan, nan))
    return {"segments": [tuple(d["seconds"]) for d in per], "series": series, "bound": label(key),
            "bound_binds": bool(b.get("kind")), "marks": {label(k): 0.9 if k[0] == "generator" else 0.8 for k in keys}}
