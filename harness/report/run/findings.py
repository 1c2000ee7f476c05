"""Everything the report says about one run, as numbers first (``summary.json``'s ``findings``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.core.intervals import wilson_interval
from harness.metrics import bound as bounds
from harness.metrics import numbers
from harness.metrics.lockuse import Intervals
from harness.record import outcome
from harness.record.schema import QUERY_COLUMNS, SIZE_COLUMNS
from harness.report.changes import changes
from harness.report.cost import cost
from harness.report.forecast.forecast import forecast
from harness.report.forecast.horizon import DEFAULT_MULTIPLE, Horizon
from harness.report.forecast.inputs import inputs_of
from harness.report.limits import limits
from harness.report.load import COUNT_COLUMNS, REQUEST_COLUMNS, STEP_COLUMNS
from harness.report.run import observed as observing
from harness.report.run import words
from harness.report.run.causes import (
    STEP_DRIVERS,
    STEP_LABELS,
    Stretch,
    between,
    count_changes,
    generator_load,
    probe_trend,
    step_causes,
)
from harness.report.run.compute import ERROR_KINDS, failure_table, lock_waits, percentile_table, step_shares
from harness.report.run.own_time import own_time
from harness.report.run.spans import span_findings
from harness.report.run.utilization import Usage, table_rows
from harness.report.run.verdict import Level, fleet_verdict
from harness.report.run.wait import stage_rows, wait_findings
from harness.report.series import compared_windows, pick_window, run_span, seconds_since, user_spans
from harness.report.stats import rate_interval

SAFETY_KEYS = ("acknowledged", "lost", "phantom", "overlaps", "violations")


def findings(rows: pd.DataFrame, info: dict | None = None, *, probes: pd.DataFrame | None = None,
             generator: pd.DataFrame | None = None, safety: dict | None = None,
             window: float | None = None, locks: pd.DataFrame | dict[str, Intervals] | None = None,
             keys: pd.DataFrame | None = None, processes: pd.DataFrame | None = None,
             spans: dict[str, int] | None = None, observed: pd.DataFrame | None = None,
             horizon: Horizon | None = None, prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """The findings of one run from its rows and side files (all optional but the rows); ``horizon``: where
    the rate forecast looks (the run's length x10 unless given); ``prices``: the price table the run is priced
    with (``harness/report/cost/prices.toml`` unless given)."""
    info = info or {}
    span = run_span(info, rows)
    ok_mask = rows["ok"].to_numpy(dtype=bool)
    window = window or pick_window(span.seconds, int(ok_mask.sum()))
    fleet = fleet_verdict(rows, span, window)
    lv = [Level(**{k: v for k, v in d.items() if k != "per_user"}) for d in fleet["levels"]]
    start, end, floor = lv[0], lv[-1], lv[fleet["floor_index"]]
    # what grew between the start and the floor explains a fall; with nothing succeeding there, the end
    late = floor if fleet["degraded"] and fleet["floor_index"] != 0 and floor.successes >= 2 else end
    # the resources first: their lock timelines are let go before the compared stretches are copied below
    usage = Usage(rows, info, span, window, locks=locks, keys=keys, generator=generator, probes=probes,
                  processes=processes)
    bound = _bottlenecks(usage, fleet, span.seconds)
    shares = _lock_shares(usage, info)  # for utilization(lock) thresholds, before the timelines are let go
    del usage
    t = seconds_since(rows["ts_end"], span.t0)
    extra = [c for c in (*REQUEST_COLUMNS, *QUERY_COLUMNS) if c in rows.columns and rows[c].notna().any()]
    t_ok = t[ok_mask]
    # the compared stretches are taken from the rows as they are needed, successes only (a failure's end
    # is NaN here, so no stretch holds it): a copy of every success would be the report's largest frame
    t_succ = np.where(ok_mask, t, np.nan)
    ok = rows[["ts_end", *STEP_COLUMNS, *COUNT_COLUMNS, *extra, "total_ms"]]  # copied on write only
    seen = _observed_drivers(observed, rows, span, info)
    if seen.shape[1]:  # rows without a step's count (the command driver's): the observer's level drives it
        ok = ok.join(seen)
    first, last = compared_windows(t_ok, (start.t0, start.t1), (late.t0, late.t1))
    first, final = compared_windows(t_ok, (start.t0, start.t1), (end.t0, end.t1))
    early_rows = between(ok, t_succ, *first)
    end_rows = between(ok, t_succ, *final)
    cause = step_causes(Stretch(ok, t_succ, first, last), observing.OBSERVED_DRIVERS)
    s_first, s_last = step_shares(early_rows), step_shares(end_rows)
    failed = int((~ok_mask).sum())
    out: dict[str, Any] = {
        "rows": int(len(rows)), "successes": int(ok_mask.sum()), "failures": failed,
        "workers": int(rows["user"].nunique()),
        "span": {"start": span.t0.isoformat(), "end": span.t1.isoformat(), "seconds": span.seconds,
                 "start_from": span.start_from, "end_from": span.end_from, "note": span.note()},
        "duration_s": span.seconds, "window_s": window,
        "fleet": fleet,
        "per_worker": _per_worker(start, floor, end),
        **_failure_fields(rows, ok_mask, span, start, end),
        "dominant_step": _dominant(s_first, s_last),
        "compared": {"early_s": list(first), "late_s": list(last),
                     "late_is": "floor" if late is floor and late is not end else "end"},
        "steps": {STEP_LABELS[k]: v for k, v in cause["steps"].items()},
        "grew_most": STEP_LABELS[cause["grew_most"]] if cause["grew_most"] else None,
        "explained_by": cause["explained_by"],
        "work_counts": count_changes(Stretch(ok, t_succ, first, final)),
        "percentiles": percentile_table(rows),
        "probe": probe_trend(probes, span),
        "generator": generator_load(generator, span),
        "safety": _safety(safety),
        **_run_parts(info),
        "checks": _checks(rows, info, shares),
        "observed": observing.findings(observed, rows, span, info),
    }
    out.update(bound)
    out["wait"], out["stages"] = wait_findings(rows, info, span, window), stage_rows(rows, info, span)
    out["limits"] = _limits(rows, t, ok_mask, info, out, span.seconds)
    out["failure_story"] = _failure_story(rows, ok_mask, out)
    out["spans"] = span_findings(rows, spans)
    out["own_time"] = own_time(rows, early_rows, end_rows, fleet)  # command runs: the datastore's time, not the rate's
    k_s = None if keys is None or not len(keys) else keys.assign(t=seconds_since(keys["ts"], span.t0))
    _ahead(out, rows, ok, t, t_succ, info, horizon, prices, k_s)
    out["changes"] = _changes(rows, ok_mask, t, out, span, window)
    _backend_evidence(out)
    queue = [out["wait"]["sentence"]] if out["wait"] else []
    out["sentences"] = words.sentences(out) + queue + [x["sentence"] for x in out["limits"]
                                                       if worth_saying(x, span.seconds - float(fleet["warmup_s"]))]
    out["outcome"] = outcome.of(info, out).as_dict()  # how it ended, the rate, the bound, the checks: once
    out["verdict"] = words.verdict(out)
    return out


def _per_worker(start: Level, floor: Level, end: Level) -> dict[str, float | None]:
    """The rate per worker at the start, the floor and the end (None where no worker ran)."""
    return {k: (x.rate / x.users if x.users > 0 else None)
            for k, x in (("start_rate", start), ("floor_rate", floor), ("end_rate", end))}


def _failure_fields(rows: pd.DataFrame, ok_mask: np.ndarray, span: Any, start: Level, end: Level) -> dict[str, Any]:
    """The failures: their ratio with its interval, their rates at the start and the end, per kind, and the
    table of messages."""
    failed, n = int((~ok_mask).sum()), len(rows)
    errors = rows.loc[~ok_mask, "error_kind"].value_counts()
    table, left_out = failure_table(rows, span)
    return {
        "failure_ratio": numbers.failure_ratio(failed, n), "failure_interval": list(wilson_interval(failed, n)),
        "failure_rates": _failure_levels(start, end),
        "errors": {k: int(errors.get(k, 0)) for k in [*ERROR_KINDS, *sorted(set(errors.index) - set(ERROR_KINDS))]},
        "failures_table": table, "failure_messages_left_out": left_out,
    }


def _run_parts(info: dict) -> dict[str, Any]:
    """What run.json says of the run's parts: those that did not finish, those that failed, the stand-in."""
    return {"incomplete": [p for p in info.get("incomplete") or [] if isinstance(p, dict)],
            "failed_parts": [p for p in info.get("failed_parts") or [] if isinstance(p, dict)],
            "stand_in": info.get("stand_in")}


def _ahead(out: dict[str, Any], rows: pd.DataFrame, ok: pd.DataFrame, t: np.ndarray, t_succ: np.ndarray,
           info: dict, horizon: Horizon | None, prices: dict[str, Any] | None,
           keys: pd.DataFrame | None = None) -> None:
    """The rate forecast at ``horizon`` (the run's length x10 unless given), then the run priced with it;
    ``keys``: keys.csv with ``t`` in seconds since the load's start (the forecast's capacity bound)."""
    out["forecast"] = forecast(inputs_of(out, ok, t_succ, rows["user"], info, keys),
                               horizon or Horizon("multiple", DEFAULT_MULTIPLE))
    out["cost"] = cost.run_cost(rows, t, info, out, prices or cost.load())


def _changes(rows: pd.DataFrame, ok_mask: np.ndarray, t: np.ndarray, out: dict[str, Any], span: Any,
             window: float) -> dict[str, Any]:
    """Change points of the rate and each step's time after the warm-up, each annotated with what was near it."""
    fleet = out["fleet"]
    steps = {c: STEP_LABELS[c] for c in STEP_COLUMNS if c in rows.columns}
    ch = changes.find(t[ok_mask], rows.loc[ok_mask, list(steps)], steps, float(fleet["warmup_s"]), span.seconds,
                      window, float(fleet["dispersion"]))
    changes.annotate(ch, out, rows, t, user_spans(rows, span))
    return ch


def _observed_drivers(observed: pd.DataFrame | None, rows: pd.DataFrame, span: Any, info: dict) -> pd.DataFrame:
    """The observer's level at each row's end, for the steps whose own count the rows never carry."""
    missing = [lvl for step, lvl in observing.OBSERVED_DRIVERS.items()
               if not (STEP_DRIVERS[step] in rows.columns and rows[STEP_DRIVERS[step]].notna().any())]
    if observed is None or not missing:
        return pd.DataFrame(index=rows.index)
    levels = observing.row_levels(observed, rows, span, info)
    return levels[[c for c in dict.fromkeys(missing) if c in levels.columns]]


def _limits(rows: pd.DataFrame, t: np.ndarray, ok_mask: np.ndarray, info: dict, out: dict[str, Any],
            run_s: float) -> list[dict[str, Any]]:
    """The next ceilings (``harness/report/limits/``): growing items, the hottest keys, at this fleet's rate."""
    a = float(out["fleet"]["warmup_s"])
    after = ok_mask & (t >= a)
    rate = float(after.sum()) / (run_s - a) if run_s > a else 0.0
    sizes = {c: rows[c].to_numpy(dtype=float)[ok_mask] for c in SIZE_COLUMNS
             if c in rows.columns and rows[c].notna().any()}
    parts = [u for u in out.get("utilization") or [] if u["kind"] == "partition"
             and "model_partition" not in u["evidence"]]  # a key's own ceiling; the model's partitions are the bound's
    ddb = (((info.get("scenario") or {}).get("fidelity") or {}).get("config") or {}).get("dynamodb") or {}
    return limits.forecasts(t[ok_mask], sizes, parts, rate=rate, run_s=run_s,
                            scale=float(ddb.get("scale", 1.0) or 1.0))


LEAD_FLEET_MULTIPLE = 10  # a key forecast to throttle only past this many times the fleet stays in its table
LEAD_MIN_S = 30.0  # a forecast from less of the load than this stays in its table


def worth_saying(x: dict[str, Any], data_s: float) -> bool:
    """A forecast for the findings' sentences: an item that grows, a key that throttles or takes half its limit;
    never one from under 30 s of the load, nor a key that would throttle only past 10x this fleet."""
    if x.get("within_run") and x["kind"] != "item size":
        return True  # it throttled in this run: a fact, not a forecast
    if data_s < LEAD_MIN_S:
        return False
    if x["kind"] == "item size":
        return bool(x["growing"] and not x["slowing"])  # one that slowed may never get there: the table has it
    m = x.get("fleet_multiple_to_limit")
    if m is not None and m > LEAD_FLEET_MULTIPLE:
        return False
    return bool((x["share_of_modelled"] or 0) >= 0.5)


def _bottlenecks(usage: Usage, fleet: dict[str, Any], end_s: float) -> dict[str, Any]:
    """The bound over the load after its warm-up, and per segment; every resource's utilization beside it."""
    a = float(fleet["warmup_s"])
    overall = usage.resources(a, end_s)
    bound = bounds.choose(overall)
    per = []
    for i, lv in enumerate(fleet["levels"]):
        res = usage.resources(lv["t0"], lv["t1"])
        b = bounds.choose(res)
        d = bounds.as_dict(b, res, (lv["t0"], lv["t1"]), where=f"in segment {i + 1} ({lv['t0']:.0f}-{lv['t1']:.0f} s)")
        d["segment"] = i
        d["utilization_table"] = table_rows(res)
        per.append(d)
    names = [(d["kind"], d["name"]) for d in per]
    moved = len(set(names)) > 1
    return {"bottleneck": bounds.as_dict(bound, overall, (a, end_s)), "bottlenecks": per,
            "bottleneck_moved": moved, "utilization": table_rows(overall)}


LOCK_KEY = " on key: "
DOMINANT_FAILURE = 0.8  # one error message's share of the failed iterations ...
MATERIAL_FAILURES = 0.1  # ... when at least this share of iterations failed


def _failure_story(rows: pd.DataFrame, ok: np.ndarray, f: dict[str, Any]) -> dict[str, Any] | None:
    """When one error dominates the failed iterations: it, the resource behind it, and the waits on both sides."""
    if not f["failures"] or f["failure_ratio"] < MATERIAL_FAILURES or not f["failures_table"]:
        return None
    top = f["failures_table"][0]
    share = top["count"] / f["failures"]
    kind_share = f["errors"].get(top["kind"], 0) / f["failures"]
    if kind_share < DOMINANT_FAILURE:
        return None
    story: dict[str, Any] = {"kind": top["kind"], "message": top["message"], "count": top["count"],
                             "share_of_failures": share, "kind_share_of_failures": kind_share,
                             "failure_ratio": f["failure_ratio"], "resource": None}
    if top["kind"] == "lock_timeout":
        waits = lock_waits(rows)  # the commit lock's wait too (two-phase): a timeout there waited there
        failed = waits[~ok & (rows["error_kind"] == "lock_timeout").to_numpy()]
        story["failed_wait_ms"] = float(failed.median()) if len(failed) else None
        good = waits[ok]
        story["ok_wait_ms"] = float(good.median()) if len(good) else None
        key = top["message"].split(LOCK_KEY, 1)[1].strip() if LOCK_KEY in top["message"] else None
        locks = [u for u in f["utilization"] if u["kind"] == "lock"]
        lock = next((u for u in locks if u["name"] == key), None) or (max(locks, key=lambda u: u["utilization"])
                                                                       if locks else None)
        story["resource"] = lock
        story["key"] = key
    elif top["kind"] == "throttled":
        caps = [u for u in f["utilization"] if u["kind"] in ("capacity", "partition")]
        story["resource"] = max(caps, key=lambda u: u["utilization"]) if caps else None
    return story


def _backend_evidence(f: dict[str, Any]) -> None:
    """For a step whose time per request grew: what the backend shows (throttles, the probe, a hot key)."""
    probe = f.get("probe") or {}
    hot = [u for u in f["utilization"] if u["kind"] in ("partition", "capacity") and u["saturated"]]
    throttled = f["errors"].get("throttled", 0)
    for st in f["steps"].values():
        dec = st.get("requests")
        if not dec or "time per request" not in dec["grew_by"]:
            continue
        ev = []
        if probe.get("slowed"):
            ev.append(f"the stand-in's {probe['op']} probe slowed x{probe['growth']:.3g}")
        if throttled:
            ev.append(f"{throttled:,} iterations failed throttled")
        for u in hot:
            ev.append(f"{u['kind']} {u['name']} at {u['utilization'] * 100:.0f} %")
        dec["backend"] = ev


def _failure_levels(start: Level, end: Level) -> dict[str, Any]:
    a, b = start.t1 - start.t0, end.t1 - end.t0
    s_lo, s_hi = rate_interval(start.failures, a)
    e_lo, e_hi = rate_interval(end.failures, b)
    return {"start": start.failures / a, "start_interval": [s_lo, s_hi], "end": end.failures / b,
            "end_interval": [e_lo, e_hi],
            "changed": bool(s_hi < e_lo or e_hi < s_lo)}


def _dominant(first: pd.Series, last: pd.Series) -> dict[str, Any]:
    def top(s: pd.Series) -> dict[str, Any]:
        if s.sum() <= 0:
            return {"step": None, "share": None}
        k = str(s.idxmax())
        return {"step": STEP_LABELS[k], "share": float(s[k])}

    f, la = top(first), top(last)
    migration = None
    if f["step"] and la["step"]:
        migration = f"{f['step']} {f['share'] * 100:.0f} % -> {la['step']} {la['share'] * 100:.0f} %"
    return {"first": f, "last": la, "migration": migration,
            "shares_first": {STEP_LABELS[k]: float(v) for k, v in first.items()},
            "shares_last": {STEP_LABELS[k]: float(v) for k, v in last.items()}}


def _safety(safety: dict | None) -> dict[str, Any] | None:
    if safety is None:
        return None
    out = {k: safety.get(k) for k in SAFETY_KEYS}
    out["details"] = {k: v for k, v in safety.items() if k not in SAFETY_KEYS}
    return out


def _checks(rows: pd.DataFrame, info: dict, locks: list | None = None) -> list[dict[str, Any]] | None:
    """The scenario's own checks (from run.json), evaluated by the CI gate's code."""
    scenario = info.get("scenario")
    if not isinstance(scenario, dict) or not isinstance(scenario.get("checks"), dict):
        return None
    from harness.report.run.checks import results

    return [r.as_dict() for r in results(rows, scenario["checks"], info, locks)]


def _lock_shares(usage: Usage, info: dict) -> list | None:
    """Each lock key's busy share, when one of the scenario's thresholds reads a lock's utilization."""
    from harness.report.run.checks import lock_shares, thresholds

    checks = (info.get("scenario") or {}).get("checks")
    if not isinstance(checks, dict) or not any(t.stat == "utilization" for t in thresholds(checks)):
        return None
    return lock_shares(usage)

