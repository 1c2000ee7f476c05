"""The run plan end to end: real `harness run` and Locust processes, watched by a spy in every Python process.

The spy (tests/support/spy/sitecustomize.py, on PYTHONPATH) logs every host name lookup, refusing AWS's, and
every TOML parse, in the harness, its Locust master and workers, the stand-ins and the probe.
"""

from __future__ import annotations

import hashlib
import json

import boto3
import pytest

from harness.aws.moto_server import EmbeddedMoto
from tests.e2e.conftest import ROOT, SCENARIOS, harness, rows
from tests.support.run_keys import changes, run_json_keys
from tests.support.spying import aws_lookups, events, spied

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("plan_e2e")]
BEFORE = json.loads((ROOT / "tests" / "fixtures" / "run_keys_before.json").read_text())


@pytest.fixture(scope="module")
def users_moto():
    """An S3 (and DynamoDB) server the user runs: it outlives each run."""
    with EmbeddedMoto() as m:
        yield m


def _s3(url: str):  # noqa: ANN202 - a boto3 client
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x")


def test_a_run_parses_its_scenario_once_and_every_process_runs_its_plan(tmp_path):
    """Master + 2 worker processes: the scenario's TOML is parsed once (by `harness run`), the workers take
    each test's plan from the master, and run.json keeps every key it had before the plan existed."""
    log, run_dir = tmp_path / "spy.log", tmp_path / "run"
    p = harness("run", "namespaced", "--processes", "2", "--users", "4", "--duration", "8s", "--run-dir",
                str(run_dir), "--no-report", env=spied(log))
    assert p.returncode == 0, p.stdout + p.stderr
    text = (SCENARIOS / "namespaced.toml").read_text()
    parses = [e for e in events(log) if e.get("toml") == hashlib.sha256(text.encode()).hexdigest()]
    pids = {e["pid"] for e in events(log)}
    assert len(parses) == 1, parses  # one parse in all the run's processes ...
    assert len(pids) >= 4, pids  # ... which were harness run, Locust's master, its 2 workers (and the servers)
    assert set(rows(run_dir)["worker"]) == {"worker-0", "worker-1"}
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["scenario"]["fleet"]["workers"] == 4 and plan["connection"]["dynamodb"]["kind"] == "embedded"
    info = json.loads((run_dir / "run.json").read_text())
    assert info["endpoint"]["dynamodb"] == plan["connection"]["dynamodb"]["url"]
    assert changes(run_json_keys(info), BEFORE["processes"]["run_json"]) == {"lost": [], "added": []}
    assert aws_lookups(log) == []


def test_with_only_the_s3_variable_dynamodb_is_the_embedded_stand_in_not_aws(tmp_path, users_moto):
    """The bug this fixes: with only AWS_ENDPOINT_URL_S3 set, DynamoDB went to AWS itself without --aws."""
    log, run_dir = tmp_path / "spy.log", tmp_path / "run"
    env = spied(log, AWS_ENDPOINT_URL_S3=users_moto.url)
    p = harness("run", "namespaced", "--users", "2", "--duration", "5s", "--run-dir", str(run_dir), "--no-report",
                env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "(embedded dynalite" in p.stdout or "(embedded moto" in p.stdout
    plan = json.loads((run_dir / "plan.json").read_text())
    ddb, s3 = plan["connection"]["dynamodb"], plan["connection"]["s3"]
    assert (ddb["kind"], ddb["source"]) == ("embedded", "stand-in") and ddb["url"].startswith("http://127.0.0.1:")
    assert (s3["kind"], s3["source"], s3["url"]) == ("other", "AWS_ENDPOINT_URL_S3", users_moto.url)
    assert len(rows(run_dir)) > 0
    gone = harness("jobs", "cleanup", str(run_dir), env=env)  # its table went with the stand-in: nothing to clean
    assert gone.returncode == 2 and "was on the embedded stand-in, which ended with the run" in gone.stderr
    assert aws_lookups(log) == []


def test_cleanup_empties_an_s3_runs_bucket_and_deletes_it(tmp_path, users_moto):
    log, run_dir = tmp_path / "spy.log", tmp_path / "run"
    env = spied(log, AWS_ENDPOINT_URL_S3=users_moto.url, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    p = harness("run", "namespaced", "--backend", "s3", "--users", "2", "--duration", "5s", "--run-dir",
                str(run_dir), "--no-report", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["connection"]["dynamodb"]["kind"] == "unused"  # an S3 run needs no DynamoDB: no stand-in started
    bucket = plan["resources"]["bucket"]
    s3 = _s3(users_moto.url)
    keys = s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0)
    assert keys > 0
    later = spied(log, AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    p = harness("jobs", "cleanup", str(run_dir), env=later)  # the endpoint the run recorded, not today's variable
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"objects deleted from {bucket}" in p.stdout and f"bucket {bucket} deleted" in p.stdout
    assert bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert aws_lookups(log) == []
