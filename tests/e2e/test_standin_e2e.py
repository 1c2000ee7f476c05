"""The embedded stand-in as a user meets it: `harness run` processes, real dynalite / moto servers."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pandas as pd
import pytest

from harness.aws.standin.dynalite import EmbeddedDynalite, missing_runtime
from tests.e2e.conftest import clean_env, harness

pytestmark = pytest.mark.e2e
needs_node = pytest.mark.skipif(missing_runtime() is not None, reason=f"dynalite unavailable: {missing_runtime()}")
RUN = ("--duration", "10s", "--workers", "2", "--no-report")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@needs_node
def test_the_default_is_dynalite_recorded_in_run_json_with_probes_taken_while_load_ran(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *RUN, "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "embedded dynalite 4.0.0 at http://127.0.0.1:" in proc.stdout
    assert proc.stderr.count("does not implement UpdateTimeToLive") == 1 and "Traceback" not in proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["stand_in"] == {"name": "dynalite", "version": "4.0.0",
                                "services": {"dynamodb": "dynalite 4.0.0", "s3": f"moto {info['versions']['moto']}"}}
    assert info["endpoint_kind"] == "embedded"
    assert not (run_dir / "dynalite-db").exists()  # the stand-in's store is scratch, removed with it
    probes = pd.read_csv(run_dir / "probes.csv")
    assert {"Query", "GetItem"} <= set(probes["op"]) and (probes["ms"] > 0).all()
    per_op = probes.groupby("op").size()
    assert per_op.min() >= 2  # about one sample a second per operation over a 10 s load
    assert probes["ts"].min() >= _ts(info["started_at"]) - 1 and probes["ts"].max() <= _ts(info["ended_at"]) + 1


def test_stand_in_moto_is_selectable(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *RUN, "--run-dir", str(run_dir), "--stand-in", "moto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["stand_in"]["name"] == "moto" and info["stand_in"]["version"] == info["versions"]["moto"]
    assert "UpdateTimeToLive" not in proc.stderr  # moto implements it: no note


def test_missing_node_falls_back_to_moto_with_one_note(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *RUN, "--run-dir", str(run_dir), env=clean_env(PATH=str(empty)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = [ln for ln in proc.stdout.splitlines() if "unavailable" in ln]
    assert notes == ["harness: the default stand-in dynalite is unavailable (no `node` on PATH); using moto"]
    assert json.loads((run_dir / "run.json").read_text())["stand_in"]["name"] == "moto"


def test_an_unknown_stand_in_is_one_line_and_exit_2(tmp_path):
    proc = harness("run", "pruning", *RUN, "--run-dir", str(tmp_path / "run"), "--stand-in", "dynamo")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "harness: unknown stand-in 'dynamo': choose one of dynalite, dynalite-memory, moto, moto-indexed"]
    assert not (tmp_path / "run").exists()


@needs_node
def test_a_dynalite_the_user_runs_works_through_the_endpoint_variables(tmp_path):
    """TTL unsupported -> a note; CreateTable's tags dropped -> TagResource, and the table stays the harness's."""
    with EmbeddedDynalite(data_dir=tmp_path) as d:
        env = clean_env(AWS_ENDPOINT_URL_DYNAMODB=d.urls["dynamodb"], AWS_ENDPOINT_URL_S3=d.urls["s3"],
                        AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
        run_dir = tmp_path / "run"
        proc = harness("run", "pruning", *RUN, "--run-dir", str(run_dir), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "does not implement UpdateTimeToLive" in proc.stderr and "Traceback" not in proc.stderr
        info = json.loads((run_dir / "run.json").read_text())
        assert info["stand_in"] is None and info["endpoint_kind"] == "other"
        ddb = boto3.client("dynamodb", endpoint_url=d.urls["dynamodb"], region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
        arn = ddb.describe_table(TableName=info["resources"]["table"])["Table"]["TableArn"]
        tags = {t["Key"]: t["Value"] for t in ddb.list_tags_of_resource(ResourceArn=arn)["Tags"]}
        assert tags == {"harness:owner": "harness", "harness:run": info["run_id"]}


class _Lacking(BaseHTTPRequestHandler):
    """A DynamoDB-compatible endpoint that answers ListTables but knows no CreateTable."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        op = self.headers.get("X-Amz-Target", "").split(".")[-1]
        answers = {"ListTables": (200, {"TableNames": []}),
                   "DescribeTable": (400, {"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
                                           "message": "not found"})}
        status, body = answers.get(op, (400, {"__type": "com.amazon.coral.service#UnknownOperationException"}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_an_endpoint_lacking_what_the_harness_needs_is_one_line_and_exit_2(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Lacking)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        env = clean_env(AWS_ENDPOINT_URL_DYNAMODB=url, AWS_ENDPOINT_URL_S3=url, AWS_ACCESS_KEY_ID="x",
                        AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
        proc = harness("run", "pruning", *RUN, "--run-dir", str(tmp_path / "run"), env=env)
    finally:
        server.shutdown()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"harness: dynamodb at {url} cannot do CreateTable, which the harness needs: UnknownOperationException"]


def _open_iterators_after_queries(tmp_path, n: int, env: dict[str, str]) -> int:
    """Run dynalite (the harness's wrapper, on disk), make ``n`` Queries, read its open-iterator count."""
    import os
    import subprocess
    import time

    from harness.aws.standin.dynalite import SERVER_JS, node_modules

    tmp_path.mkdir(parents=True)
    log = tmp_path / "dynalite.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(["node", str(SERVER_JS), "--modules", str(node_modules()), "--path",
                                 str(tmp_path / "db"), "--memlog", "0.2"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, env=dict(os.environ, **env))
        try:
            url = proc.stdout.readline().decode().split()[1]
            c = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                             aws_secret_access_key="x")
            c.create_table(TableName="iters", BillingMode="PAY_PER_REQUEST",
                           KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                           AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
            c.get_waiter("table_exists").wait(TableName="iters", WaiterConfig={"Delay": 0.1})
            c.put_item(TableName="iters", Item={"pk": {"S": "a"}})
            for _ in range(n):
                c.query(TableName="iters", KeyConditionExpression="pk = :p",
                        ExpressionAttributeValues={":p": {"S": "a"}})
            seen = log.stat().st_size
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and log.stat().st_size == seen:  # a report after the last Query
                time.sleep(0.1)
            time.sleep(0.5)
            # read while the server is up: closing the database on shutdown closes leaked iterators too, and
            # on a slow machine a report can come after that
            lines = [ln for ln in log.read_text().splitlines() if "openIterators=" in ln]
        finally:
            proc.stdin.close()
            proc.wait(10)
    return int(lines[-1].rsplit("openIterators=", 1)[1])


@needs_node
def test_dynalite_closes_the_iterator_of_every_query(tmp_path):
    """dynalite 4 ends iterators with return(), which abstract-level 3 lacks: each Query leaked one."""
    assert _open_iterators_after_queries(tmp_path / "fixed", 60, {}) == 0
    leaked = _open_iterators_after_queries(tmp_path / "unfixed", 60, {"HARNESS_DYNALITE_NO_ITERATOR_FIX": "1"})
    assert leaked >= 60  # the cause, shown with the fix switched off
