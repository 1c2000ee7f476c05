"""What AWS measured, against a real moto server over HTTP (never AWS): the GetMetricData requests, their
dimensions and window, cloudwatch.csv, the report's comparison, an empty answer, S3's metrics configurations,
a refused permission, and the bounded wait after an --aws run (on a fake clock)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import boto3
import numpy as np
import pandas as pd
import pytest
from botocore.stub import Stubber

from harness.aws.clients import DUMMY_KEYS
from harness.aws.moto_server import EmbeddedMoto
from harness.config.endpoints import AWS, ServiceEndpoint
from harness.config.plan import Resources
from harness.config.telemetry import TelemetryPlan
from harness.core.clock import FakeClock
from harness.record import runinfo
from harness.report.run.build import build_report
from harness.telemetry.cloudwatch import after_run as commands
from harness.telemetry.cloudwatch import reader as cw
from tests.e2e.conftest import clean_env
from tests.support.plans import make_plan
from tests.support.synthetic import make_run

pytestmark = pytest.mark.xdist_group("cloudwatch_moto")

T0 = float(int(time.time() // 60 * 60) - 3600)  # an hour ago, on a minute: the run's window is [T0, T0 + 120]


@pytest.fixture(scope="module")
def moto():
    server = EmbeddedMoto().start()
    yield server
    server.stop()


def _client(moto, service: str):
    return boto3.client(service, endpoint_url=moto.url, region_name="us-east-1", **DUMMY_KEYS)


def _run(tmp_path: Path, moto, name: str, backend: str = "dynamodb") -> Path:
    run_dir = make_run(tmp_path / name, workers=2, duration_s=120.0, rate=lambda t: np.full_like(t, 2.0), t0=T0 + 1,
                       backend=backend, seed=3)
    plan = make_plan("namespaced", endpoints={"AWS_ENDPOINT_URL": moto.url}, backend=backend)
    plan = replace(plan, run_dir=str(run_dir), resources=Resources(table=f"t-{name}", bucket=f"b-{name}"))
    plan.write(run_dir)
    return run_dir


def _table(moto, name: str) -> None:
    _client(moto, "dynamodb").create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "g", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[{"IndexName": "gsi1", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                 "Projection": {"ProjectionType": "ALL"}}])


def _put(moto, metric: str, dims: dict[str, str], at: float, value: float, namespace: str = "AWS/DynamoDB"):
    _client(moto, "cloudwatch").put_metric_data(Namespace=namespace, MetricData=[{
        "MetricName": metric, "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": datetime.fromtimestamp(at, UTC), "Value": value, "Unit": "Count"}])


def _capture(monkeypatch) -> list[dict]:
    """Every GetMetricData call's parameters, from the real client the command makes."""
    calls: list[dict] = []
    real = commands.cloudwatch_client

    def spying(plan, sessions):
        client = real(plan, sessions)
        client.meta.events.register("provide-client-params.cloudwatch.GetMetricData",
                                    lambda params, **_: calls.append(params))
        return client

    monkeypatch.setattr(commands, "cloudwatch_client", spying)
    return calls


def test_queries_name_the_table_its_gsis_and_each_operation():
    q = cw.dynamodb_queries("t", ["gsi1"])
    dims = {(x.metric, x.stat, x.dimensions) for x in q}
    assert ("ConsumedWriteCapacityUnits", "Sum", (("TableName", "t"),)) in dims
    assert ("ConsumedReadCapacityUnits", "Sum", (("TableName", "t"), ("GlobalSecondaryIndexName", "gsi1"))) in dims
    assert ("ThrottledRequests", "Sum", (("TableName", "t"), ("Operation", "PutItem"))) in dims
    assert ("SuccessfulRequestLatency", "SampleCount", (("TableName", "t"), ("Operation", "Query"))) in dims
    assert len(q) == 4 + 3 * len(cw.DDB_OPERATIONS) and len({x.id for x in q}) == len(q)
    s = cw.s3_queries("b", ["all"])
    assert {x.dimensions for x in s} == {(("BucketName", "b"), ("FilterId", "all"))}
    assert {x.metric for x in s} >= {"AllRequests", "4xxErrors", "FirstByteLatency"}
    assert cw.window(125.0, 185.5) == (120, 240)
    api = q[0].as_api()
    assert api["MetricStat"]["Period"] == 60 and api["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "TableName", "Value": "t"}]


def test_report_cloudwatch_reads_the_window_and_shows_aws_beside_the_harness(tmp_path, moto, monkeypatch):
    run_dir = _run(tmp_path, moto, "busy")
    _table(moto, "t-busy")
    _put(moto, "ConsumedWriteCapacityUnits", {"TableName": "t-busy"}, T0 + 30, 300.0)
    _put(moto, "ConsumedWriteCapacityUnits", {"TableName": "t-busy", "GlobalSecondaryIndexName": "gsi1"},
         T0 + 90, 120.0)
    _put(moto, "ConsumedReadCapacityUnits", {"TableName": "t-busy"}, T0 + 30, 50.0)
    _put(moto, "ThrottledRequests", {"TableName": "t-busy", "Operation": "PutItem"}, T0 + 60, 7.0)
    _put(moto, "ConsumedWriteCapacityUnits", {"TableName": "t-busy"}, T0 - 600, 9999.0)  # before the run
    _put(moto, "ConsumedWriteCapacityUnits", {"TableName": "t-other"}, T0 + 30, 5555.0)  # another table
    calls = _capture(monkeypatch)
    r = commands.for_report(run_dir, say=lambda _: None)
    assert r.notes == [] and not r.failed
    # the requests: the run's window widened to whole minutes, 60 s periods, the table and its GSI by name
    (call,) = calls
    assert call["StartTime"] == datetime.fromtimestamp(T0, UTC)
    assert call["EndTime"] == datetime.fromtimestamp(T0 + 180, UTC)
    metrics = [q["MetricStat"] for q in call["MetricDataQueries"]]
    assert {m["Period"] for m in metrics} == {60}
    assert {"Name": "GlobalSecondaryIndexName", "Value": "gsi1"} in [
        d for m in metrics for d in m["Metric"]["Dimensions"]]
    assert all({"Name": "TableName", "Value": "t-busy"} in m["Metric"]["Dimensions"] for m in metrics)
    rows = list(csv.DictReader((run_dir / "cloudwatch.csv").open()))
    got = sorted((x["metric"], x["index"], x["operation"], float(x["value"])) for x in rows)
    assert got == [("ConsumedReadCapacityUnits", "", "", 50.0), ("ConsumedWriteCapacityUnits", "", "", 300.0),
                   ("ConsumedWriteCapacityUnits", "gsi1", "", 120.0), ("ThrottledRequests", "", "PutItem", 7.0)]
    assert list(rows[0]) == list(cw.COLUMNS)
    info = runinfo.read(run_dir)
    assert info["cloudwatch"]["datapoints"] == 4 and info["cloudwatch"]["window"] == [T0, T0 + 180]
    out = build_report([run_dir])
    html = (out / "index.html").read_text()
    assert "What did AWS measure? CloudWatch beside the harness" in html
    f = json.loads((out / "summary.json").read_text())["runs"][0]["findings"]["cloudwatch"]
    mine = float(pd.read_parquet(run_dir / "iterations")["write_units"].sum())
    write = next(x for x in f["table"] if x[0] == "write capacity units")
    assert write[1:3] == [f"{mine:,.1f}", "420.0"]  # the clients' count beside table + GSI
    assert any("table 300.0, GSIs 120.0" in line for line in f["lines"])
    assert any(line.startswith("throttles: CloudWatch counted 7 throttled requests") for line in f["lines"])
    # the bill: the whole run on-demand, the clients' units and CloudWatch's (420 write, 50 read) priced by hand
    billed = json.loads((out / "summary.json").read_text())["runs"][0]["findings"]["cost"]["cloudwatch"]
    rows = pd.read_parquet(run_dir / "iterations")
    assert billed["kinds"] == ["read", "write"]
    assert billed["cloudwatch_usd"] == pytest.approx((420.0 * 0.625 + 50.0 * 0.125) / 1e6)
    assert billed["clients_usd"] == pytest.approx((rows["write_units"].sum() * 0.625
                                                   + rows["read_units"].sum() * 0.125) / 1e6)
    assert billed["ratio"] == pytest.approx(billed["clients_usd"] / billed["cloudwatch_usd"])
    assert "by CloudWatch&#x27;s consumed capacity" in html or "by CloudWatch's consumed capacity" in html


def test_an_empty_answer_is_one_line_and_the_report_still_builds(tmp_path, moto):
    run_dir = _run(tmp_path, moto, "quiet")
    _table(moto, "t-quiet")
    env = clean_env(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    p = subprocess.run([sys.executable, "-m", "harness", "report", str(run_dir), "--cloudwatch"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CloudWatch: 0 datapoints" in p.stdout and "CloudWatch: no datapoints for t-quiet" in p.stdout
    assert (run_dir / "cloudwatch.csv").read_text().strip() == ",".join(cw.COLUMNS)
    html = (run_dir / "report" / "index.html").read_text()
    assert "CloudWatch: no datapoints for t-quiet" in html


def test_s3_request_metrics_only_where_the_bucket_has_a_configuration(tmp_path, moto):
    s3 = _client(moto, "s3")
    s3.create_bucket(Bucket="b-plain")
    r = cw.read(_client(moto, "cloudwatch"), T0, T0 + 180, bucket="b-plain", s3=s3)
    assert r.queries == 0 and len(r.notes) == 1 and "has no request-metrics configuration" in r.notes[0]
    # moto keeps no bucket metrics configurations (S3's answer here is stubbed); CloudWatch is moto's own
    _put(moto, "AllRequests", {"BucketName": "b-metered", "FilterId": "EntireBucket"}, T0 + 60, 42.0, "AWS/S3")
    with Stubber(s3) as stub:
        stub.add_response("list_bucket_metrics_configurations",
                          {"MetricsConfigurationList": [{"Id": "EntireBucket"}], "IsTruncated": False},
                          {"Bucket": "b-metered"})
        r = cw.read(_client(moto, "cloudwatch"), T0, T0 + 180, bucket="b-metered", s3=s3)
    assert r.notes == [] and r.queries == len(cw.S3_COUNTS) + len(cw.S3_LATENCIES)
    assert [(x["metric"], x["filter_id"], x["value"]) for x in r.rows] == [("AllRequests", "EntireBucket", 42.0)]


def test_a_refused_permission_is_a_note_not_a_failure():
    client = boto3.client("cloudwatch", region_name="us-east-1", endpoint_url="http://127.0.0.1:9", **DUMMY_KEYS)
    with Stubber(client) as stub:
        stub.add_client_error("get_metric_data", service_error_code="AccessDenied", http_status_code=403,
                              service_message="User: x is not authorized to perform: cloudwatch:GetMetricData")
        r = cw.read(client, T0, T0 + 60, table="t")
    assert r.failed and r.rows == [] and len(r.notes) == 1
    assert r.notes[0].startswith("CloudWatch: not permitted to read metrics (cloudwatch:GetMetricData) (AccessDenied")


def test_the_wait_is_bounded_and_said_and_stops_once_the_data_reaches_the_end():
    clock, said, reads = FakeClock(1000.0), [], []
    end = 1000.0 + 120

    def once() -> cw.Reading:  # the last minute's datapoint appears on the third read
        reads.append(clock.now())
        at = end - 60 if len(reads) >= 3 else end - 120
        return cw.Reading(rows=[{"metric": "ConsumedWriteCapacityUnits", "value": 1.0,
                                 "period_start": datetime.fromtimestamp(at, UTC).isoformat()}], queries=1)

    r = cw.wait_for(once, end, 180.0, clock.now, clock.sleep, said.append)
    assert r.covers(end) and reads == [1000.0, 1030.0, 1060.0] and r.notes == []
    assert len(said) == 2 and "looking again in 30 s" in said[0]
    clock, reads[:] = FakeClock(1000.0), []

    def never() -> cw.Reading:
        reads.append(clock.now())
        return cw.Reading(queries=1)

    r = cw.wait_for(never, end, 75.0, clock.now, clock.sleep, said.append)
    assert reads == [1000.0, 1030.0, 1060.0, 1075.0]  # 30 s apart, the last at the bound
    assert "after waiting 75 s its figures do not reach the run's end" in r.notes[-1]


def test_after_run_reads_only_for_aws_and_says_a_skipped_wait(tmp_path):
    said: list[str] = []
    plan = make_plan("namespaced")
    commands.after_run(plan, [tmp_path], said.append)  # the embedded stand-in: no CloudWatch, nothing said
    assert said == [] and not (tmp_path / "cloudwatch.csv").exists()
    aws = replace(plan, connection=replace(plan.connection, cloudwatch=ServiceEndpoint(None, AWS, "--aws")),
                  telemetry=TelemetryPlan(cloudwatch_wait_s=0))
    commands.after_run(aws, [tmp_path], said.append)  # never reaches AWS: the wait is 0
    assert said == ["harness: CloudWatch not read (--cloudwatch-wait 0): `harness report RUN_DIR --cloudwatch` "
                    "reads it"]


def test_report_cloudwatch_on_a_run_without_cloudwatch_is_one_line(tmp_path):
    run_dir = make_run(tmp_path / "local", workers=1, duration_s=10.0, rate=lambda t: np.full_like(t, 1.0))
    make_plan("namespaced").write(run_dir)
    p = subprocess.run([sys.executable, "-m", "harness", "report", str(run_dir), "--cloudwatch"],
                       capture_output=True, text=True, timeout=60, env=clean_env())
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "the run named no CloudWatch" in p.stderr
