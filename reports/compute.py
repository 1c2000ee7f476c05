"""The numbers behind the report: pure functions of iteration rows.

Everything aggregates into time windows first (a nine-hour, hundred-worker
run is a million rows; a figure needs a few hundred points), so plotting never
touches raw rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from reports.load import COUNT_COLUMNS, STEP_COLUMNS

ERROR_KINDS = ["lock_timeout", "throttled", "fenced", "conflict", "timeout", "other"]
STEP_LABELS = {"lock_wait_ms": "lock wait", "pull_ms": "pull", "method_ms": "method", "push_ms": "push",
               "commit_ms": "commit", "export_ms": "export", "delete_ms": "delete", "prune_ms": "prune"}
COUNT_LABELS = {"pull_items_read": "items read per pull", "index_entries_written": "index entries written per commit",
                "catalog_rows": "catalog rows", "files_pushed": "files pushed per sync",
                "read_units": "read units per iteration", "write_units": "write units per iteration"}
# The work count that a step's time should follow, when that step is the bottleneck.
COUNT_FOR_STEP = {"pull_ms": "pull_items_read", "commit_ms": "index_entries_written", "export_ms": "catalog_rows",
                  "push_ms": "files_pushed", "prune_ms": "catalog_rows"}
NICE_WINDOWS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600]
FALLING_TAIL = 0.3  # the share of the run, at its end, whose slope decides "still falling" vs "flat"


def pick_window(span_s: float, target_windows: int = 40) -> float:
    """A round window length giving about ``target_windows`` windows over the run."""
    want = max(span_s / target_windows, 1.0)
    return float(next((w for w in NICE_WINDOWS if w >= want), NICE_WINDOWS[-1]))


def with_windows(rows: pd.DataFrame, window: float) -> pd.DataFrame:
    """Add ``t``: the start (seconds since the run's first iteration) of each row's window, by end time."""
    t0 = rows["ts_start"].min()
    secs = (rows["ts_end"] - t0).dt.total_seconds().to_numpy()
    out = rows.copy(deep=False)
    out["t"] = np.floor(secs / window) * window
    return out


def _exposure(index: pd.Index, window: float, end_s: float) -> np.ndarray:
    """Seconds each window actually covers (the last one may be cut short by the run's end)."""
    return np.clip(end_s - index.to_numpy(dtype=float), 1e-9, window)


def _full_index(binned: pd.DataFrame, window: float) -> pd.Index:
    """Every window from the start, less a trailing one that covers under half its length.

    (A sliver of a window at the run's end would turn two iterations into a
    spike of a rate.)
    """
    end = _end_s(binned) if len(binned) else 0.0
    last = max(0.0, np.floor((end - window / 2) / window) * window)
    return pd.Index(np.arange(0.0, last + window / 2, window), name="t")


def _end_s(binned: pd.DataFrame) -> float:
    return float((binned["ts_end"].max() - binned["ts_start"].min()).total_seconds())


def fleet_rate(binned: pd.DataFrame, window: float) -> pd.Series:
    """Successful iterations per second, the whole fleet, per window."""
    idx = _full_index(binned, window)
    counts = binned.loc[binned["ok"], "t"].value_counts().reindex(idx, fill_value=0)
    return (counts / _exposure(idx, window, _end_s(binned))).rename("fleet_rate")


def worker_rates(binned: pd.DataFrame, window: float) -> pd.DataFrame:
    """Successful iterations per second per worker (columns), per window."""
    idx = _full_index(binned, window)
    table = binned[binned["ok"]].groupby(["t", "user"]).size().unstack("user", fill_value=0)
    table = table.reindex(idx, fill_value=0)
    return table.div(_exposure(idx, window, _end_s(binned)), axis=0)


def active_workers(binned: pd.DataFrame, window: float) -> pd.Series:
    """Workers running in each window: between their first start and their last end.

    (Not "workers that finished an iteration in the window": at a floor of one
    iteration per few windows that would overstate the per-worker rate.)
    """
    idx = _full_index(binned, window)
    t0 = binned["ts_start"].min()
    span = binned.groupby("user").agg(first=("ts_start", "min"), last=("ts_end", "max"))
    first = (span["first"] - t0).dt.total_seconds().to_numpy()
    last = (span["last"] - t0).dt.total_seconds().to_numpy()
    starts = idx.to_numpy(dtype=float)
    alive = (first[None, :] < starts[:, None] + window) & (last[None, :] > starts[:, None])
    return pd.Series(alive.sum(axis=1), index=idx, name="workers")


def failure_rates(binned: pd.DataFrame, window: float) -> pd.DataFrame:
    """Failures per second per window, one column per error kind (all kinds present, in order)."""
    idx = _full_index(binned, window)
    failed = binned[~binned["ok"]]
    table = failed.groupby(["t", "error_kind"]).size().unstack("error_kind", fill_value=0)
    table = table.reindex(index=idx, columns=ERROR_KINDS, fill_value=0)
    return table.div(_exposure(idx, window, _end_s(binned)), axis=0)


def step_means(binned: pd.DataFrame, window: float) -> pd.DataFrame:
    """Mean milliseconds per step per window: where an iteration's time goes."""
    return binned.groupby("t")[STEP_COLUMNS].mean().reindex(_full_index(binned, window))


def count_means(binned: pd.DataFrame, window: float) -> pd.DataFrame:
    """Mean work counts per window: the numbers that explain the steps."""
    return binned.groupby("t")[COUNT_COLUMNS + ["total_ms"]].mean().reindex(_full_index(binned, window))


def percentiles(binned: pd.DataFrame, window: float, columns: list[str],
                qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> pd.DataFrame:
    """p50/p95/p99 of each column per window; columns are (column, quantile)."""
    q = binned.groupby("t")[columns].quantile(list(qs)).unstack(level=-1)
    q.columns = pd.MultiIndex.from_tuples([(c, f"p{int(round(x * 100))}") for c, x in q.columns])
    return q.reindex(_full_index(binned, window))


# ---- findings ----------------------------------------------------------------------


def _edge(index: pd.Index, share: float = 0.1, at_end: bool = False) -> pd.Index:
    n = max(1, int(math.ceil(len(index) * share)))
    return index[-n:] if at_end else index[:n]


def step_shares(binned: pd.DataFrame, ts: pd.Index) -> pd.Series:
    means = binned.loc[binned["t"].isin(ts), STEP_COLUMNS].mean().fillna(0.0)
    total = means.sum()
    return means / total if total > 0 else means


def rate_shape(rate: pd.Series) -> dict[str, Any]:
    """Start, floor, when the floor was reached, the ratio, and whether the end is still falling."""
    n = len(rate)
    head = rate.iloc[1:max(3, n // 10 + 1)] if n >= 8 else rate.iloc[: max(1, n // 3)]
    start = float(head.median())
    # The floor is the level the run settles at, not its noisiest window: smooth
    # over a fifth of the run before taking the minimum.
    k = max(3, n // 5)
    smooth = rate.rolling(k, center=True, min_periods=k // 2 + 1).mean()
    floor = float(smooth.min())
    near = rate.rolling(3, center=True, min_periods=1).median().to_numpy() <= floor * 1.3 + 1e-12
    floor_at = float(rate.index[int(np.argmax(near))])
    tail = rate.iloc[-max(3, int(n * FALLING_TAIL)):] if n >= 6 else rate
    if len(tail) >= 3 and tail.mean() > 0:
        slope = float(np.polyfit(tail.index.to_numpy(dtype=float), tail.to_numpy(dtype=float), 1)[0])
        span = float(tail.index[-1] - tail.index[0]) or 1.0
        tail_fall = -slope * span / float(tail.mean())
        half = len(tail) // 2
        halves_fall = tail.iloc[half:].median() < tail.iloc[:half].median() * 0.95
    else:
        tail_fall, halves_fall = 0.0, False
    degradation = start / floor if floor > 0 else math.inf
    falling = tail_fall > 0.15 and halves_fall and degradation > 1.2
    return {"start_rate": start, "floor_rate": floor, "floor_reached_at_s": floor_at,
            "degradation_ratio": degradation, "tail_fall": tail_fall,
            "shape": "still falling" if falling else "flat"}


def growth(counts: pd.DataFrame) -> pd.DataFrame:
    """For each work count: growth first->last window and correlation with iteration time."""
    first, last = _edge(counts.index), _edge(counts.index, at_end=True)
    out = []
    for c in COUNT_COLUMNS:
        s = counts[c]
        a, b = float(s.loc[first].mean()), float(s.loc[last].mean())
        valid = counts[[c, "total_ms"]].dropna()
        r = float(valid[c].corr(valid["total_ms"])) if valid[c].std() > 0 and valid["total_ms"].std() > 0 else 0.0
        ratio = b / a if a > 0 else (math.inf if b > 0 else 1.0)
        out.append({"count": c, "label": COUNT_LABELS[c], "first": a, "last": b, "growth": ratio,
                    "corr_with_iteration_time": 0.0 if math.isnan(r) else r})
    return pd.DataFrame(out).set_index("count")


def _times(x: float) -> str:
    return "x∞" if not math.isfinite(x) else f"x{x:.3g}"


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def findings(rows: pd.DataFrame, window: float | None = None, probes: pd.DataFrame | None = None) -> dict[str, Any]:
    """Everything the report says in words, as numbers first."""
    span = float((rows["ts_end"].max() - rows["ts_start"].min()).total_seconds())
    window = window or pick_window(span)
    binned = with_windows(rows, window)
    rate = fleet_rate(binned, window)
    workers = active_workers(binned, window).replace(0, np.nan)
    shape = rate_shape(rate)
    per_worker = rate_shape((rate / workers).fillna(0.0))
    first, last = _edge(rate.index), _edge(rate.index, at_end=True)
    s_first, s_last = step_shares(binned, first), step_shares(binned, last)
    dom_first, dom_last = str(s_first.idxmax()), str(s_last.idxmax())
    g = growth(count_means(binned, window))
    explaining = None
    related = COUNT_FOR_STEP.get(dom_last)
    if related and g.loc[related, "growth"] > 1.2 and g.loc[related, "corr_with_iteration_time"] > 0.5:
        explaining = related
    else:
        grown = g[(g["growth"] > 1.2) & (g["corr_with_iteration_time"] > 0.5)]
        if not grown.empty:
            explaining = str(grown["corr_with_iteration_time"].idxmax())
    errors = rows.loc[~rows["ok"], "error_kind"].value_counts()
    out: dict[str, Any] = {
        "rows": int(len(rows)), "workers": int(rows["user"].nunique()), "duration_s": span, "window_s": window,
        "fleet": shape, "per_worker": {k: per_worker[k] for k in ("start_rate", "floor_rate", "degradation_ratio")},
        "failure_ratio": float((~rows["ok"]).mean()),
        "errors": {k: int(errors.get(k, 0)) for k in ERROR_KINDS},
        "dominant_step": {
            "first": {"step": STEP_LABELS[dom_first], "share": float(s_first[dom_first])},
            "last": {"step": STEP_LABELS[dom_last], "share": float(s_last[dom_last])},
            "migration": f"{STEP_LABELS[dom_first]} {_pct(s_first[dom_first])} -> "
                         f"{STEP_LABELS[dom_last]} {_pct(s_last[dom_last])}",
            "shares_first": {STEP_LABELS[k]: float(v) for k, v in s_first.items()},
            "shares_last": {STEP_LABELS[k]: float(v) for k, v in s_last.items()},
        },
        "work_counts": g.to_dict(orient="index"),
        "explained_by": explaining,
        "probe": probe_trend(probes),
    }
    out["sentences"] = sentences(out)
    return out


def probe_trend(probes: pd.DataFrame | None) -> dict[str, Any] | None:
    """Constant-cost request latency, first tenth of the run against the last: did the backend itself slow?"""
    if probes is None or len(probes) < 4:
        return None
    n = max(2, len(probes) // 10)
    first, last = float(probes["ms"].iloc[:n].median()), float(probes["ms"].iloc[-n:].median())
    ratio = last / first if first > 0 else math.inf
    return {"first_ms": first, "last_ms": last, "growth": ratio, "samples": int(len(probes)),
            "backend_slowed": bool(ratio > 1.5)}


def sentences(f: dict[str, Any]) -> list[str]:
    """The findings in words, the way the seed's author would have wanted them on day one."""
    fl = f["fleet"]
    out = [f"Fleet rate went from {fl['start_rate']:.3g} to a floor of {fl['floor_rate']:.3g} iterations/s "
           f"({_times(fl['degradation_ratio'])} slower), reached after {fl['floor_reached_at_s']:.0f} s; "
           f"at the end the curve is {fl['shape']}."]
    d = f["dominant_step"]
    if d["first"]["step"] == d["last"]["step"]:
        out.append(f"The dominant step stayed {d['last']['step']} ({d['migration']}).")
    else:
        out.append(f"The bottleneck migrated: {d['migration']} of iteration time.")
    if f["explained_by"]:
        w = f["work_counts"][f["explained_by"]]
        out.append(f"It grew with {w['label']}: {w['first']:.3g} -> {w['last']:.3g} ({_times(w['growth'])}), "
                   f"correlation with iteration time r = {w['corr_with_iteration_time']:.2f}.")
    else:
        out.append("No work count grew with iteration time: look at the backend itself (stand-in or service).")
    if f["failure_ratio"] > 0:
        kinds = ", ".join(f"{k} {v}" for k, v in f["errors"].items() if v)
        out.append(f"{f['failure_ratio']:.1%} of iterations failed ({kinds}).")
    p = f.get("probe")
    if p:
        if p["backend_slowed"]:
            out.append(f"The backend itself got slower: a constant-cost read went from {p['first_ms']:.3g} to "
                       f"{p['last_ms']:.3g} ms ({_times(p['growth'])}), so part of the slowdown is the server "
                       "(on moto, its Query scans the whole table), not only the workload.")
        else:
            out.append(f"A constant-cost read stayed near {p['last_ms']:.3g} ms ({_times(p['growth'])}): the "
                       "backend did not slow down; the workload asks for more.")
    return out


def compare(runs: list[tuple[str, dict, pd.DataFrame]]) -> dict[str, Any]:
    """Across runs: steady-state rates, fleet-size scaling and backend ratios.

    ``runs`` is (label, run info, rows). A run's steady rate is its fleet rate
    over the second half of the run.
    """
    summary = []
    for label, info, rows in runs:
        span = float((rows["ts_end"].max() - rows["ts_start"].min()).total_seconds())
        window = pick_window(span)
        rate = fleet_rate(with_windows(rows, window), window)
        steady = float(rate.iloc[len(rate) // 2:].mean())
        requests = float(rows["requests"].sum()) if "requests" in rows else 0.0
        summary.append({"label": label, "scenario": info.get("scenario_name"), "backend": info.get("backend"),
                        "workers": int(rows["user"].nunique()), "steady_rate": steady,
                        "mean_iteration_ms": float(rows["total_ms"].mean()),
                        "ms_per_request": float(rows["total_ms"].sum()) / requests if requests else math.nan,
                        "step_ms": {STEP_LABELS[c]: float(rows[c].mean()) for c in STEP_COLUMNS}})
    scaling, backends = [], []
    for i, a in enumerate(summary):
        for b in summary[i + 1:]:
            if a["scenario"] == b["scenario"] and a["backend"] == b["backend"] and a["workers"] != b["workers"]:
                small, big = sorted((a, b), key=lambda x: x["workers"])
                fleet_x = big["workers"] / small["workers"]
                rate_x = big["steady_rate"] / small["steady_rate"] if small["steady_rate"] > 0 else math.inf
                raised = rate_x >= 1 + 0.5 * (fleet_x - 1)
                scaling.append({
                    "scenario": a["scenario"], "backend": a["backend"], "workers": [small["workers"], big["workers"]],
                    "fleet_ratio": fleet_x, "rate_ratio": rate_x, "raised_rate": bool(raised),
                    "sentence": (f"{a['scenario']} on {a['backend']}: x{fleet_x:.3g} workers gave x{rate_x:.3g} "
                                 f"fleet rate: " + ("the fleet raised the rate." if raised else
                                                    "more workers did not raise the rate; the ceiling is not "
                                                    "the fleet (a shared lock, or the backend)."))})
            if a["scenario"] == b["scenario"] and a["backend"] != b["backend"] and a["workers"] == b["workers"]:
                d, s = (a, b) if a["backend"] == "dynamodb" else (b, a)
                ratio = d["steady_rate"] / s["steady_rate"] if s["steady_rate"] > 0 else math.inf
                per_op = s["ms_per_request"] / d["ms_per_request"] if d["ms_per_request"] > 0 else math.nan
                sentence = (f"{a['scenario']} with {a['workers']} workers: DynamoDB ran x{ratio:.3g} the rate of S3 "
                            f"({d['steady_rate']:.3g} vs {s['steady_rate']:.3g} it/s); an S3 operation took "
                            f"x{per_op:.3g} as long ({s['ms_per_request']:.3g} vs {d['ms_per_request']:.3g} ms "
                            "per request), so S3 workers top out lower per operation.")
                backends.append({"scenario": a["scenario"], "workers": a["workers"], "dynamodb_over_s3": ratio,
                                 "s3_ms_per_request_over_dynamodb": per_op, "sentence": sentence})
    return {"runs": summary, "fleet_scaling": scaling, "backends": backends}
