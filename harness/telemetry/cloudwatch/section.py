"""What AWS measured beside what the harness counted: ``cloudwatch.csv`` against the run's rows.

Pure: a run directory's CloudWatch datapoints (``harness.telemetry.cloudwatch.reader``) and notes (``run.json``'s
``cloudwatch``) and the run's rows in, one comparison out, each line naming the difference and why it is
expected:

- capacity units: the clients count by DynamoDB's rules (every item's size, the GSIs it lands in); CloudWatch
  counts what the table and each GSI consumed. A difference is the rules' approximation, requests the clients
  could not see (a retried request AWS charged), or AWS's per-minute aggregation at the window's edges;
- throttles: CloudWatch counts every throttled request, retried by the SDK or not; the harness counts the
  iterations that failed throttled (the SDK retried the rest);
- latency: CloudWatch's is the service's own time; the harness's per request includes the network and the
  SDK, so it is the larger;
- requests: CloudWatch's successful requests (SuccessfulRequestLatency's SampleCount; S3's AllRequests)
  against the requests the steps made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

CSV = "cloudwatch.csv"


def _pct(a: float, b: float) -> str:
    if b == 0:
        return "n/a"
    return f"{(a - b) / b * 100:+.1f} %"


def _request_columns(rows: pd.DataFrame) -> tuple[float, float]:
    """(requests, their milliseconds) over every step, from the rows' per-step request columns."""
    n = [c for c in rows.columns if c.endswith("_requests") and c != "requests"]
    ms = [c for c in rows.columns if c.endswith("_request_ms")]
    return float(rows[n].to_numpy().sum()) if n else 0.0, float(rows[ms].to_numpy().sum()) if ms else 0.0


def compare(run_dir: str | Path, info: dict[str, Any], rows: pd.DataFrame) -> dict[str, Any] | None:
    """The comparison, or None when CloudWatch was never read for this run."""
    path = Path(run_dir) / CSV
    meta = info.get("cloudwatch")
    if meta is None and not path.is_file():
        return None
    meta = meta or {}
    out: dict[str, Any] = {"notes": list(meta.get("notes") or []), "where": meta.get("where"),
                           "window": meta.get("window"), "lines": [], "table": []}
    cw = pd.read_csv(path, dtype={"index": str, "operation": str, "filter_id": str}, keep_default_na=False) \
        if path.is_file() else pd.DataFrame()
    out["datapoints"] = int(len(cw))
    if cw.empty:
        return out
    ok = rows[rows["ok"]] if "ok" in rows else rows

    def total(metric: str, stat: str = "Sum", **match: str) -> pd.DataFrame:
        sel = (cw["metric"] == metric) & (cw["stat"] == stat)
        for k, v in match.items():
            sel &= cw[k] == v
        return cw[sel]

    for kind, metric, col in (("read", "ConsumedReadCapacityUnits", "read_units"),
                              ("write", "ConsumedWriteCapacityUnits", "write_units")):
        m = total(metric)
        if m.empty:
            continue
        aws, table = float(m["value"].sum()), float(m[m["index"] == ""]["value"].sum())
        gsis = aws - table
        out.setdefault("units", {})[kind] = aws  # AWS's own count, table and GSIs: what a bill would charge
        mine = float(rows[col].sum()) if col in rows else 0.0
        out["table"].append([f"{kind} capacity units", f"{mine:,.1f}", f"{aws:,.1f}", _pct(mine, aws)])
        out["lines"].append(f"{kind} units: the clients counted {mine:,.1f}, CloudWatch {aws:,.1f} (table {table:,.1f}"
                            f", GSIs {gsis:,.1f}): the clients' count is {_pct(mine, aws)} against AWS's (DynamoDB's "
                            "rules applied by the client, retried requests it charged, and its per-minute edges)")
    thr = total("ThrottledRequests")
    if not thr.empty:
        aws = float(thr["value"].sum())
        mine = float((rows["error_kind"] == "throttled").sum()) if "error_kind" in rows else 0.0
        out["table"].append(["throttled requests", f"{mine:,.0f} iterations", f"{aws:,.0f} requests", "-"])
        out["lines"].append(f"throttles: CloudWatch counted {aws:,.0f} throttled requests; {mine:,.0f} iterations "
                            "failed throttled (the SDK retried the others, which AWS still counts)")
    avg, cnt = total("SuccessfulRequestLatency", "Average"), total("SuccessfulRequestLatency", "SampleCount")
    n_mine, ms_mine = _request_columns(rows)
    if not cnt.empty:
        served = float(cnt["value"].sum())
        out["table"].append(["requests (successful, AWS)", f"{n_mine:,.0f}", f"{served:,.0f}", _pct(n_mine, served)])
        if not avg.empty:
            merged = avg.merge(cnt, on=["operation", "period_start"], suffixes=("_avg", "_n"))
            weight = float(merged["value_n"].sum())
            server_ms = float((merged["value_avg"] * merged["value_n"]).sum() / weight) if weight else float("nan")
            client_ms = ms_mine / n_mine if n_mine else float("nan")
            out["table"].append(["ms per request", f"{client_ms:.2f} (client)", f"{server_ms:.2f} (server)",
                                 f"{client_ms - server_ms:+.2f} ms"])
            out["lines"].append(f"latency: {client_ms:.2f} ms per request at the client, {server_ms:.2f} ms inside "
                                f"DynamoDB: {client_ms - server_ms:+.2f} ms is the network and the SDK")
            by_op = merged.groupby("operation").apply(
                lambda g: pd.Series({"requests": g["value_n"].sum(),
                                     "ms": (g["value_avg"] * g["value_n"]).sum() / max(g["value_n"].sum(), 1e-9)}),
                include_groups=False)
            out["by_operation"] = {op: {"requests": float(r["requests"]), "server_ms": float(r["ms"])}
                                   for op, r in by_op.iterrows()}
    s3 = total("AllRequests")
    if not s3.empty:
        aws = float(s3["value"].sum())
        out["table"].append(["S3 requests", f"{n_mine:,.0f}", f"{aws:,.0f}", _pct(n_mine, aws)])
        out["lines"].append(f"S3 requests: the steps made {n_mine:,.0f}, CloudWatch counted {aws:,.0f} "
                            f"({_pct(n_mine, aws)}; a metrics configuration's filter may cover only part of the "
                            "bucket)")
    out["ok_iterations"] = int(len(ok))
    return out
