"""What AWS measured: CloudWatch's figures for a run's table, its GSIs and its bucket, over the run's window.

The harness counts what its own clients saw (units by DynamoDB's rules, requests, client-side latency);
CloudWatch says what the service itself counted. Read after the load (an ``--aws`` run, with a bounded wait:
CloudWatch's data lags by minutes) or later (``harness report RUN_DIR --cloudwatch``), into
``cloudwatch.csv``, one row per datapoint:

- ``AWS/DynamoDB``: ``ConsumedReadCapacityUnits`` and ``ConsumedWriteCapacityUnits`` (Sum) of the table and
  of each GSI; ``ThrottledRequests`` (Sum) and ``SuccessfulRequestLatency`` (Average, SampleCount) of the
  table by operation;
- ``AWS/S3``: the request metrics (``AllRequests``, ``GetRequests``, ... Sum; ``FirstByteLatency``,
  ``TotalRequestLatency`` Average) of each of the bucket's metrics configurations (FilterId). A bucket with
  no configuration has no request metrics: that is said, not fetched.

One ``GetMetricData`` call per 500 queries (its limit), at a 60 s period (DynamoDB's and S3's request
metrics' resolution). Nothing here fails a run: a missing permission, an endpoint that does not answer, or
no datapoints is a note (one line) beside what could be read.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from harness.core import atomic

CSV = "cloudwatch.csv"
COLUMNS = ("namespace", "metric", "stat", "resource", "index", "operation", "filter_id", "period_start", "value",
           "unit")
PERIOD_S = 60
MAX_QUERIES = 500  # GetMetricData's limit per call
POLL_S = 30.0  # while waiting for CloudWatch's data: look again this often
DDB = "AWS/DynamoDB"
S3 = "AWS/S3"
DDB_OPERATIONS = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem",
                  "BatchWriteItem", "TransactGetItems", "TransactWriteItems")
S3_COUNTS = ("AllRequests", "GetRequests", "PutRequests", "HeadRequests", "ListRequests", "DeleteRequests",
             "4xxErrors", "5xxErrors")
S3_LATENCIES = ("FirstByteLatency", "TotalRequestLatency")
DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError")


@dataclass(frozen=True)
class Query:
    """One metric of one resource: its namespace, name, dimensions and statistic, and what it describes."""

    id: str
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    resource: str
    index: str = ""
    operation: str = ""
    filter_id: str = ""

    def as_api(self, period_s: int = PERIOD_S) -> dict[str, Any]:
        """GetMetricData's ``MetricDataQueries`` entry."""
        return {"Id": self.id, "ReturnData": True,
                "MetricStat": {"Metric": {"Namespace": self.namespace, "MetricName": self.metric,
                                          "Dimensions": [{"Name": k, "Value": v} for k, v in self.dimensions]},
                               "Period": period_s, "Stat": self.stat}}


def dynamodb_queries(table: str, gsis: list[str]) -> list[Query]:
    """The table's and each GSI's consumed units; the table's throttles and server latency by operation."""
    out: list[Query] = []
    for index in ["", *gsis]:
        dims = (("TableName", table),) + ((("GlobalSecondaryIndexName", index),) if index else ())
        for metric in ("ConsumedReadCapacityUnits", "ConsumedWriteCapacityUnits"):
            out.append(Query(f"q{len(out)}", DDB, metric, dims, "Sum", table, index))
    for op in DDB_OPERATIONS:
        dims = (("TableName", table), ("Operation", op))
        out.append(Query(f"q{len(out)}", DDB, "ThrottledRequests", dims, "Sum", table, operation=op))
        for stat in ("Average", "SampleCount"):
            out.append(Query(f"q{len(out)}", DDB, "SuccessfulRequestLatency", dims, stat, table, operation=op))
    return out


def s3_queries(bucket: str, filter_ids: list[str]) -> list[Query]:
    """Each metrics configuration's request counts (Sum) and latencies (Average)."""
    out: list[Query] = []
    for fid in filter_ids:
        dims = (("BucketName", bucket), ("FilterId", fid))
        for metric in S3_COUNTS:
            out.append(Query(f"s{len(out)}", S3, metric, dims, "Sum", bucket, filter_id=fid))
        for metric in S3_LATENCIES:
            out.append(Query(f"s{len(out)}", S3, metric, dims, "Average", bucket, filter_id=fid))
    return out


def window(started_at: float, ended_at: float, period_s: int = PERIOD_S) -> tuple[float, float]:
    """The run's span widened to whole periods (CloudWatch's datapoints start on them)."""
    return math.floor(started_at / period_s) * period_s, math.ceil(ended_at / period_s) * period_s


@dataclass
class Reading:
    """What one read found: datapoints as ``cloudwatch.csv`` rows, and one line per thing it could not read."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False  # a permission or endpoint problem: looking again will not help
    queries: int = 0

    def covers(self, end_s: float, period_s: int = PERIOD_S) -> bool:
        """A consumed-units (or S3 request) datapoint in the window's last period: the data has caught up."""
        last = datetime.fromtimestamp(end_s - period_s, UTC).isoformat()
        return any(r["metric"] in ("ConsumedWriteCapacityUnits", "ConsumedReadCapacityUnits", "AllRequests")
                   and r["period_start"] >= last for r in self.rows)


def _problem(e: Exception, what: str) -> str:
    if isinstance(e, ClientError):
        code = e.response.get("Error", {}).get("Code", "")
        msg = e.response.get("Error", {}).get("Message", "")
        if code in DENIED:
            return f"CloudWatch: not permitted to {what} ({code}: {msg})"
        return f"CloudWatch: could not {what} ({code}: {msg})"
    return f"CloudWatch: could not {what} ({type(e).__name__}: {e})"


def fetch(cloudwatch: Any, queries: list[Query], start_s: float, end_s: float,
          period_s: int = PERIOD_S) -> list[dict[str, Any]]:
    """Every datapoint of ``queries`` in [start, end), as rows (pages through NextToken, 500 queries a call)."""
    by_id = {q.id: q for q in queries}
    out: list[dict[str, Any]] = []
    for i in range(0, len(queries), MAX_QUERIES):
        kw: dict[str, Any] = {"MetricDataQueries": [q.as_api(period_s) for q in queries[i:i + MAX_QUERIES]],
                              "StartTime": datetime.fromtimestamp(start_s, UTC),
                              "EndTime": datetime.fromtimestamp(end_s, UTC), "ScanBy": "TimestampAscending"}
        while True:
            page = cloudwatch.get_metric_data(**kw)
            for res in page.get("MetricDataResults", []):
                q = by_id[res["Id"]]
                for ts, value in zip(res.get("Timestamps", []), res.get("Values", []), strict=False):
                    out.append({"namespace": q.namespace, "metric": q.metric, "stat": q.stat, "resource": q.resource,
                                "index": q.index, "operation": q.operation, "filter_id": q.filter_id,
                                "period_start": ts.astimezone(UTC).isoformat(), "value": float(value),
                                "unit": _unit(q)})
            token = page.get("NextToken")
            if not token:
                break
            kw["NextToken"] = token
    return sorted(out, key=lambda r: (r["namespace"], r["metric"], r["stat"], r["index"], r["operation"],
                                      r["period_start"]))


def _unit(q: Query) -> str:
    if "Latency" in q.metric and q.stat != "SampleCount":
        return "Milliseconds"
    return "Count"


def read(cloudwatch: Any, start_s: float, end_s: float, *, table: str | None = None, dynamodb: Any = None,
         bucket: str | None = None, s3: Any = None) -> Reading:
    """One read of the run's resources (a DynamoDB table and its GSIs, or an S3 bucket); never raises."""
    r = Reading()
    queries: list[Query] = []
    if table:
        gsis: list[str] = []
        if dynamodb is not None:
            try:
                t = dynamodb.describe_table(TableName=table)["Table"]
                gsis = [g["IndexName"] for g in t.get("GlobalSecondaryIndexes", [])]
            except (ClientError, BotoCoreError) as e:
                r.notes.append(_problem(e, f"list the GSIs of {table} (only the table is read)").replace(
                    "CloudWatch: ", "DynamoDB: "))
        queries += dynamodb_queries(table, gsis)
    if bucket:
        ids = _filter_ids(s3, bucket, r)
        queries += s3_queries(bucket, ids)
    r.queries = len(queries)
    if not queries:
        return r
    try:
        r.rows = fetch(cloudwatch, queries, start_s, end_s)
    except (ClientError, BotoCoreError) as e:
        r.notes.append(_problem(e, "read metrics (cloudwatch:GetMetricData)"))
        r.failed = True
        return r
    if not r.rows:
        r.notes.append(f"CloudWatch: no datapoints for {table or bucket} between {_hm(start_s)} and {_hm(end_s)} "
                       "UTC (its data lags the load by minutes: `harness report RUN_DIR --cloudwatch` reads it again)")
    return r


def _filter_ids(s3: Any, bucket: str, r: Reading) -> list[str]:
    """The bucket's request-metrics configurations (S3 reports request metrics only for those)."""
    if s3 is None:
        return []
    try:
        ids = [c["Id"] for c in s3.list_bucket_metrics_configurations(Bucket=bucket).get("MetricsConfigurationList",
                                                                                          [])]
    except (ClientError, BotoCoreError) as e:
        r.notes.append(_problem(e, f"list the metrics configurations of {bucket}").replace("CloudWatch: ", "S3: "))
        return []
    if not ids:
        r.notes.append(f"S3: bucket {bucket} has no request-metrics configuration, so CloudWatch has no request "
                       "metrics for it (add one with `aws s3api put-bucket-metrics-configuration` before a run)")
    return ids


def _hm(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M")


def wait_for(read_once: Callable[[], Reading], end_s: float, wait_s: float, now: Callable[[], float],
             sleep: Callable[[float], None], say: Callable[[str], None]) -> Reading:
    """Read until the datapoints reach the window's end or ``wait_s`` is spent (bounded; said as it goes)."""
    deadline = now() + wait_s
    while True:
        r = read_once()
        left = deadline - now()
        if r.failed or r.covers(end_s) or r.queries == 0 or left <= 0:
            if not r.failed and r.queries and not r.covers(end_s) and wait_s > 0:
                r.notes.append(f"CloudWatch: after waiting {wait_s:g} s its figures do not reach the run's end "
                               f"({_hm(end_s)} UTC) yet: `harness report RUN_DIR --cloudwatch` reads them later")
            return r
        say(f"harness: CloudWatch has {len(r.rows)} datapoints so far; looking again in {min(POLL_S, left):.0f} s "
            f"(at most {left:.0f} s more)")
        sleep(min(POLL_S, left))


def write_csv(run_dir: str | Path, rows: list[dict[str, Any]]) -> Path:
    """``RUN_DIR/cloudwatch.csv`` (replaced whole: a later read has every datapoint an earlier one had)."""
    path = Path(run_dir) / CSV
    tmp = atomic.temp_beside(path)
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
    return path
