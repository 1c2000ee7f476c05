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
from harness.aws.standin.dynamodb_local import missing_runtime as dynamodb_local_missing
from harness.aws.standin.seaweedfs import missing_runtime as weed_missing
from tests.e2e.conftest import ROOT, clean_env, harness, rows

pytestmark = pytest.mark.e2e
needs_node = pytest.mark.skipif(missing_runtime() is not None, reason=f"dynalite unavailable: {missing_runtime()}")
needs_dynamodb_local = pytest.mark.skipif(dynamodb_local_missing() is not None,
                                          reason=f"DynamoDB Local unavailable: {dynamodb_local_missing()}")
needs_weed = pytest.mark.skipif(weed_missing() is not None, reason=f"seaweedfs unavailable: {weed_missing()}")
RUN = ("--duration", "10s", "--users", "2", "--no-report")
# for what a run's start decides (the stand-in chosen, its notes, run.json, the table's tags): a shorter load, long
# enough for a first iteration on a starved machine (3 s had none under two CPU hogs beside three test processes)
START = ("--duration", "6s", "--users", "2", "--no-report")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@needs_node
def test_the_default_is_dynalite_recorded_in_run_json_with_probes_taken_while_load_ran(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *RUN, "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "embedded dynalite 4.0.0 at http://127.0.0.1:" in proc.stdout
    assert proc.stderr == ""  # quiet by default: the note that TTL is missing is not a problem
    info = json.loads((run_dir / "run.json").read_text())
    assert sum("does not implement UpdateTimeToLive" in n for n in info["notes"]) == 1  # ... it is recorded once
    assert (run_dir / "harness.log").read_text().count("does not implement UpdateTimeToLive") == 1
    # a DynamoDB run uses no S3: no S3 server is started for it, and none is named
    assert info["stand_in"] == {"name": "dynalite", "version": "4.0.0",
                                "services": {"dynamodb": "dynalite 4.0.0", "s3": ""}}
    assert not (run_dir / "seaweedfs.log").exists() and info["endpoint"]["s3"] is None
    assert info["endpoint_kind"] == "embedded"
    assert not (run_dir / "dynalite-db").exists()  # the stand-in's store is scratch, removed with it
    probes = pd.read_csv(run_dir / "probes.csv")
    assert {"Query", "GetItem"} <= set(probes["op"]) and (probes["ms"] > 0).all()
    per_op = probes.groupby("op").size()
    assert per_op.min() >= 2  # about one sample a second per operation over a 10 s load
    assert probes["ts"].min() >= _ts(info["started_at"]) - 1 and probes["ts"].max() <= _ts(info["ended_at"]) + 1


def test_stand_in_moto_is_selectable_and_serves_both(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *START, "--run-dir", str(run_dir), "--dynamodb-stand-in", "moto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["stand_in"]["name"] == "moto" and info["stand_in"]["version"] == info["versions"]["moto"]
    assert info["stand_in"]["s3"] == {"name": "moto", "version": info["versions"]["moto"]}  # it serves both ...
    assert info["endpoint"]["s3"] is None  # ... but a DynamoDB run has no S3 client
    assert "UpdateTimeToLive" not in proc.stderr  # moto implements it: no note
    assert not (run_dir / "seaweedfs.log").exists()


@needs_weed
def test_s3_runs_on_seaweedfs_by_default_and_nothing_is_left_running(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", "--backend", "s3", *RUN, "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pruning on s3 (embedded seaweedfs 4.48 at http://127.0.0.1:" in proc.stdout
    assert "Traceback" not in proc.stderr and proc.stderr.strip() == ""  # nothing SeaweedFS lacks: no note
    info = json.loads((run_dir / "run.json").read_text())
    assert info["stand_in"]["s3"] == {"name": "seaweedfs", "version": "4.48"}
    assert info["stand_in"]["services"] == {"dynamodb": "", "s3": "seaweedfs 4.48"}  # and no DynamoDB server
    assert not (run_dir / "dynalite.log").exists() and info["endpoint"]["dynamodb"] is None
    # every worker synced, pruned as it went (no contention here: a failure is a fault); a loaded machine
    # decides how many iterations fit in 10 s, not whether they work
    r = rows(run_dir)
    assert set(r["user"]) == {"w0-0", "w0-1"} and len(r) >= 4 and r["ok"].mean() > 0.9, r["error"].tolist()
    assert (r.loc[r["ok"], "files_pushed"] == 5).all() and (r.loc[r["ok"], "catalog_rows"] == 0).all()
    probes = pd.read_csv(run_dir / "probes.csv")
    assert {"GetObject", "ListObjectsV2"} <= set(probes["op"])
    assert not (run_dir / "seaweedfs").exists() and (run_dir / "seaweedfs.log").stat().st_size > 0
    assert _weeds_of(run_dir) == []


@needs_weed
def test_s3_stand_in_moto_is_selectable_for_an_s3_run(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", "--backend", "s3", *START, "--run-dir", str(run_dir), "--s3-stand-in", "moto")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["stand_in"]["s3"] == {"name": "moto", "version": info["versions"]["moto"]}
    assert f"embedded moto {info['versions']['moto']} at" in proc.stdout
    assert not (run_dir / "seaweedfs.log").exists()


def test_missing_weed_falls_back_to_moto_for_s3_with_one_note(tmp_path):
    run_dir = tmp_path / "run"
    env = clean_env(HARNESS_WEED=str(tmp_path / "no-weed"))
    proc = harness("run", "pruning", "--backend", "s3", *START, "--run-dir", str(run_dir), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = [ln for ln in proc.stdout.splitlines() if "unavailable" in ln and "S3" in ln]
    assert notes == [f"harness: the default S3 stand-in seaweedfs is unavailable (no executable `weed` at "
                     f"HARNESS_WEED={tmp_path / 'no-weed'}); using moto"]
    assert json.loads((run_dir / "run.json").read_text())["stand_in"]["s3"]["name"] == "moto"
    named = harness("run", "pruning", "--backend", "s3", *START, "--run-dir", str(tmp_path / "named"),
                    "--s3-stand-in", "seaweedfs", env=env)
    assert named.returncode == 2 and named.stderr.strip().splitlines() == [
        f"harness: cannot start S3 stand-in 'seaweedfs': no executable `weed` at HARNESS_WEED={tmp_path / 'no-weed'}"]


def test_an_s3_stand_in_with_an_endpoint_set_is_refused(tmp_path):
    env = clean_env(AWS_ENDPOINT_URL="http://127.0.0.1:9")
    proc = harness("run", "pruning", *RUN, "--run-dir", str(tmp_path / "run"), "--s3-stand-in", "moto", env=env)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "harness: --s3-stand-in starts a local server, but AWS_ENDPOINT_URL names s3's endpoint: unset "
        "AWS_ENDPOINT_URL, or drop --s3-stand-in"]


@needs_weed
def test_sigterm_to_harness_run_leaves_no_weed_running(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "pruning", "--backend", "s3", "--duration",
                             "60s", "--users", "2", "--no-report", "--run-dir", str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env(), cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (run_dir / "iterations").is_dir():
            time.sleep(0.5)
        assert _weeds_of(run_dir), "no weed process while the run was going"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out
    assert _weeds_of(run_dir) == []
    assert not (run_dir / "seaweedfs").exists()


def _weeds_of(run_dir) -> list[int]:
    """``weed`` processes serving this run's data directory (live, not zombies)."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        if p.info["name"] == "weed" and p.info["status"] != psutil.STATUS_ZOMBIE and \
                any(str(run_dir) in a for a in p.info["cmdline"] or []):
            found.append(p.info["pid"])
    return found


def test_missing_node_falls_back_to_moto_with_one_note(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    run_dir = tmp_path / "run"
    proc = harness("run", "pruning", *START, "--run-dir", str(run_dir), env=clean_env(PATH=str(empty)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = [ln for ln in proc.stdout.splitlines() if "unavailable" in ln]
    assert notes == ["harness: the default stand-in dynalite is unavailable (no `node` on PATH); using moto"]
    assert json.loads((run_dir / "run.json").read_text())["stand_in"]["name"] == "moto"


def test_an_unknown_stand_in_is_one_line_and_exit_2(tmp_path):
    proc = harness("run", "pruning", *RUN, "--run-dir", str(tmp_path / "run"), "--dynamodb-stand-in", "dynamo")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "harness: unknown stand-in 'dynamo': choose one of dynalite, dynalite-memory, moto, moto-indexed, "
        "dynamodb-local"]
    assert not (tmp_path / "run").exists()


@needs_dynamodb_local
def test_lock_safety_on_dynamodb_local_names_it_in_run_json_and_has_no_violation(tmp_path):
    run_dir = tmp_path / "run"
    proc = harness("run", "lock-safety", "--dynamodb-stand-in", "dynamodb-local", "--duration", "15s", "--no-report",
                   "--run-dir", str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    version = info["stand_in"]["version"]
    assert info["stand_in"] == {"name": "dynamodb-local", "version": version,
                                "services": {"dynamodb": f"dynamodb-local {version}", "s3": ""}}
    assert version.count(".") == 2 and info["endpoint_kind"] == "embedded"
    assert f"embedded dynamodb-local {version} at http://127.0.0.1:" in proc.stdout
    assert json.loads((run_dir / "safety.json").read_text())["violations"] == 0
    check = harness("check", str(run_dir))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "Port:" in (run_dir / "dynamodb-local.log").read_text()  # its own output, in the run directory
    assert _dynamodb_locals_of(run_dir) == []  # stopped with the run


def _dynamodb_locals_of(run_dir) -> list[int]:
    """DynamoDB Local processes working in this run's directory (live, not zombies)."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        try:
            if p.info["name"] == "java" and p.info["status"] != psutil.STATUS_ZOMBIE and \
                    any("DynamoDBLocal.jar" in a for a in p.info["cmdline"] or []) and p.cwd() == str(run_dir):
                found.append(p.info["pid"])
        except psutil.Error:
            continue
    return found


def test_dynamodb_local_named_without_java_is_one_line_naming_the_extra(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = harness("run", "lock-safety", *RUN, "--run-dir", str(tmp_path / "run"), "--dynamodb-stand-in",
                   "dynamodb-local", env=clean_env(PATH=str(empty)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "harness: cannot start stand-in 'dynamodb-local': no `java` on PATH (DynamoDB Local needs Java 17 or "
        "later; then `bash .ci/install dynamodb-local`)"]


@needs_node
def test_a_dynalite_the_user_runs_works_through_the_endpoint_variables(tmp_path):
    """TTL unsupported -> a note; CreateTable's tags dropped -> TagResource, and the table stays the harness's."""
    with EmbeddedDynalite(data_dir=tmp_path) as d:
        env = clean_env(AWS_ENDPOINT_URL_DYNAMODB=d.urls["dynamodb"], AWS_ENDPOINT_URL_S3=d.urls["s3"],
                        AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
        run_dir = tmp_path / "run"
        proc = harness("run", "pruning", *START, "--run-dir", str(run_dir), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stderr == ""  # the note goes to the run's log and run.json, not stderr
        info = json.loads((run_dir / "run.json").read_text())
        assert any("does not implement UpdateTimeToLive" in n for n in info["notes"])
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
