"""Run against run: fleet-size scaling as an efficiency, and DynamoDB against S3, from the numbers.

A run's steady rate is its rate of successful iterations over the second half
of the load's span (after the warm-up), with a 95 % interval; ratios between
runs carry an interval too (log-ratio of two Poisson counts).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from harness.record.schema import STEP_LABELS
from harness.report.load import STEP_COLUMNS
from harness.report.series import (
    pick_window,
    rate_series,
    run_span,
    seconds_since,
    user_spans,
    warmup_s,
    with_windows,
)
from harness.report.show import g
from harness.report.stats import Z95, rate_interval

SCALES = 0.9  # efficiency at or above this: the rate scaled with the fleet


def steady(info: dict, rows: pd.DataFrame) -> dict[str, Any]:
    span = run_span(info, rows)
    warm = warmup_s(user_spans(rows, span)[0], rows, span)
    a = warm + (span.seconds - warm) / 2
    t = seconds_since(rows.loc[rows["ok"], "ts_end"], span.t0)
    n = int((t >= a).sum())
    seconds = span.seconds - a
    lo, hi = rate_interval(n, seconds)
    return {"rate": n / seconds if seconds > 0 else math.nan, "interval": [lo, hi], "successes": n,
            "from_s": a, "to_s": span.seconds}


def ratio_interval(k1: int, s1: float, k2: int, s2: float) -> tuple[float | None, list[float] | None]:
    """(rate1 / rate2, its 95 % interval) from two counts over their seconds; None when either count is 0."""
    if k1 <= 0 or k2 <= 0:
        return None, None
    r = (k1 / s1) / (k2 / s2)
    se = math.sqrt(1 / k1 + 1 / k2)
    return r, [r * math.exp(-Z95 * se), r * math.exp(Z95 * se)]


def summarize(label: str, info: dict, rows: pd.DataFrame) -> dict[str, Any]:
    ok = rows[rows["ok"]]
    requests = float(ok["requests"].sum()) if "requests" in ok else 0.0
    workers = info.get("fleet", {}).get("workers") or int(rows["user"].nunique())
    return {"label": label, "scenario": info.get("scenario_name"), "backend": info.get("backend"),
            "workers": int(workers), "steady": steady(info, rows),
            "mean_iteration_ms": float(ok["total_ms"].mean()) if len(ok) else None,
            "ms_per_request": float(ok["total_ms"].sum()) / requests if requests else None,
            "step_ms": {STEP_LABELS[c]: float(ok[c].mean()) if len(ok) else 0.0 for c in STEP_COLUMNS}}


def _k(r: dict[str, Any]) -> tuple[int, float]:
    st = r["steady"]
    return st["successes"], st["to_s"] - st["from_s"]


def scaling(small: dict[str, Any], big: dict[str, Any]) -> dict[str, Any]:
    fleet_x = big["workers"] / small["workers"]
    rate_x, iv = ratio_interval(*_k(big), *_k(small))
    head = f"{small['scenario']} on {small['backend']}: x{fleet_x:.3g} workers ({small['workers']} -> {big['workers']})"
    out = {"scenario": small["scenario"], "backend": small["backend"], "workers": [small["workers"], big["workers"]],
           "fleet_ratio": fleet_x, "rate_ratio": rate_x, "rate_interval": iv, "efficiency": None,
           "raised_rate": False}
    if rate_x is None:
        out["sentence"] = f"{head}: one of the runs had no successful iteration in its second half, so no ratio."
        return out
    eff = rate_x / fleet_x
    out.update(efficiency=eff, raised_rate=bool(iv[0] > 1))
    nums = (f"gave x{rate_x:.3g} the fleet rate [{iv[0]:.3g}-{iv[1]:.3g}] "
            f"({g(small['steady']['rate'])} -> {g(big['steady']['rate'])} it/s), {eff * 100:.0f} % scaling efficiency")
    if iv[1] < 1:
        verdict = "more workers lowered the rate"
    elif iv[0] <= 1:
        verdict = "more workers did not credibly raise the rate"
    elif eff >= SCALES or iv[1] >= fleet_x:
        verdict = "the rate scaled with the fleet"
    else:
        verdict = "the rate rose, less than the fleet did"
    out["sentence"] = f"{head} {nums}: {verdict}."
    return out


def backends(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    d, s = (a, b) if a["backend"] == "dynamodb" else (b, a)
    ratio, iv = ratio_interval(*_k(d), *_k(s))
    per_op = (s["ms_per_request"] / d["ms_per_request"]
              if s["ms_per_request"] and d["ms_per_request"] else None)
    diffs = {k: s["step_ms"][k] - d["step_ms"][k] for k in s["step_ms"]}
    step = max(diffs, key=lambda k: abs(diffs[k])) if diffs else None
    head = f"{a['scenario']} with {a['workers']} workers"
    if ratio is None:
        sentence = f"{head}: one of the runs had no successful iteration in its second half, so no ratio."
    else:
        sentence = (f"{head}: DynamoDB ran x{ratio:.3g} the rate of S3 [{iv[0]:.3g}-{iv[1]:.3g}] "
                    f"({g(d['steady']['rate'])} vs {g(s['steady']['rate'])} it/s)")
        if per_op is not None:
            sentence += (f"; an S3 request took x{per_op:.3g} as long as a DynamoDB one ({g(s['ms_per_request'])} vs "
                         f"{g(d['ms_per_request'])} ms per request)")
        if step is not None:
            sentence += (f"; {step} differs most ({g(s['step_ms'][step])} ms on S3 vs {g(d['step_ms'][step])} ms on "
                         f"DynamoDB per iteration)")
        if iv[0] <= 1 <= iv[1]:
            sentence += ": the rates do not differ credibly."
        elif per_op is not None and (ratio > 1) == (per_op > 1):
            slower = "S3" if ratio > 1 else "DynamoDB"
            sentence += f", so {slower} workers top out lower per operation."
        else:
            sentence += "."
    return {"scenario": a["scenario"], "workers": a["workers"], "dynamodb_over_s3": ratio, "interval": iv,
            "s3_ms_per_request_over_dynamodb": per_op, "step": step, "sentence": sentence}


def compare(runs: list[tuple[str, dict, pd.DataFrame]]) -> dict[str, Any]:
    """Across runs: steady rates, fleet-size scaling and backend ratios (``runs`` is (label, info, rows))."""
    summary = [summarize(label, info, rows) for label, info, rows in runs]
    scale, back = [], []
    for i, a in enumerate(summary):
        for b in summary[i + 1:]:
            if a["scenario"] != b["scenario"]:
                continue
            if a["backend"] == b["backend"] and a["workers"] != b["workers"]:
                small, big = sorted((a, b), key=lambda x: x["workers"])
                scale.append(scaling(small, big))
            if a["backend"] != b["backend"] and a["workers"] == b["workers"] and \
                    {a["backend"], b["backend"]} == {"dynamodb", "s3"}:
                back.append(backends(a, b))
    return {"runs": summary, "fleet_scaling": scale, "backends": back}


def overlay_series(runs: list[tuple[str, dict, pd.DataFrame]]) -> dict[str, pd.Series]:
    """Each run's success rate on one common window length, for the overlay figure."""
    spans = [run_span(info, rows) for _, info, rows in runs]
    longest = max(s.seconds for s in spans)
    fewest = min(int(rows["ok"].sum()) for _, _, rows in runs)
    window = pick_window(longest, max(fewest, 1))
    out = {}
    for (label, _, rows), span in zip(runs, spans, strict=True):
        out[label] = rate_series(with_windows(rows, span, window), span, window)["ok_rate"]
    return out

