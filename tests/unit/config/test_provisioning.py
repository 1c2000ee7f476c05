"""Provisioning through the plan's factory: ownership, teardown, names; scenario validation (in-process moto)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from botocore.exceptions import ClientError

from harness.aws.clients import Clients
from harness.aws.endpoints import Endpoints
from harness.config import scenario as scenarios
from harness.config.factory import Factory
from harness.config.plan import Resources, new_run_id
from harness.core.errors import HarnessError
from tests.support.plans import make_plan


def _clients(aws):
    return Clients(dynamodb=aws[0], s3=aws[1], endpoints=Endpoints(None, None, "moto"))


def _factory(backend: str, resources: Resources, run_id: str) -> Factory:
    return Factory(replace(make_plan("namespaced", backend=backend), run_id=run_id, resources=resources))


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
def test_refuses_foreign_resources_and_deletes_only_its_own(aws, backend):
    clients = _clients(aws)
    foreign = Resources(table="someone-table", bucket="someone-bucket")
    if backend == "dynamodb":
        aws[0].create_table(TableName="someone-table", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                                  {"AttributeName": "sk", "KeyType": "RANGE"}],
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                                  {"AttributeName": "sk", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
    else:
        aws[1].create_bucket(Bucket="someone-bucket")
    theirs = _factory(backend, foreign, "run-1")
    be = theirs.backend(clients)
    with pytest.raises(HarnessError, match="was not created by the harness"):
        theirs.provision(clients, be)
    assert theirs.teardown(clients, be) is False  # never deletes what it did not create

    mine = _factory(backend, Resources.for_run("run-2"), "run-2")
    ours = mine.backend(clients)
    mine.provision(clients, ours)
    mine.provision(clients, ours)  # idempotent for its own
    if backend == "s3":  # a bucket with objects in it is emptied first
        aws[1].put_object(Bucket=ours.bucket, Key="data/x", Body=b"x")
    assert mine.teardown(clients, ours) is True
    if backend == "dynamodb":
        assert "someone-table" in aws[0].list_tables()["TableNames"]
        assert ours.describe() is None
    else:
        # by HeadBucket, not ListBuckets: SeaweedFS lists no bucket to a caller it has no identity for
        assert aws[1].head_bucket(Bucket="someone-bucket")["ResponseMetadata"]["HTTPStatusCode"] == 200
        with pytest.raises(ClientError) as gone:
            aws[1].head_bucket(Bucket=ours.bucket)
        assert gone.value.response["Error"]["Code"] in ("404", "NoSuchBucket")


def test_resource_names_are_valid_for_both_services():
    r = Resources.for_run(new_run_id("Legacy-GSI", "dynamodb") + "-" + "x" * 80)
    assert len(r.bucket) <= 63 and r.bucket == r.bucket.lower() and not r.bucket.endswith("-")


@pytest.mark.parametrize("toml,message", [
    ("bogus = 1", "bogus is not a known key"),
    ("[fleet]\nworkerz = 2", "fleet.workerz is not a known key"),
    ("[fleet]\nworkers = \"ten\"", "fleet.workers must be an integer, got 'ten'"),
    ("[fleet]\nduration = \"soon\"", "fleet.duration must be a duration"),
    ("[lock]\nwait = \"100ms\"\nretry = \"1s\"", "lock.wait (0.1s) is shorter than lock.retry (1s)"),
    ("[datastore]\ngsi = \"hash\"", "datastore.gsi must be one of legacy, per-model, swamp, got 'hash'"),
    ("[workload]\npayload_bytes = [0]", "workload.payload_bytes must be a list of sizes"),
    ("[workload]\nkind = \"disposable\"\nlifecycle = \"long-lived\"", "workload.lifecycle must be \"disposable\""),
    ("[datastore]\nprune_every = 1", "datastore.prune_every only makes sense with disposable models"),
    ("[datastore]\nnamespaces = \"shared\"\nlock_scope = \"namespace\"", "datastore.lock_scope"),
    ("[checks]\nmax_failure_ratio = 2", "checks.max_failure_ratio must be between 0 and 1"),
    ("[fidelity]\nlatency = \"warp\"", "fidelity.latency unknown latency profile 'warp'"),
    ("[fidelity]\nenabled = \"maybe\"", "fidelity.enabled must be true, false or \"auto\""),
    ("[fidelity.faults.PutItem]\nerror_5xx = 0.7\ndrop = 0.5", "rates add up to more than 1"),
    ("[fidelity.faults.PutItem]\nexplode = 1", "fidelity.faults.PutItem.explode is not a known key"),
    ("backend = \"s3\"\n[background]\nitems = 10", "background.items needs backend = \"dynamodb\""),
])
def test_scenario_validation_names_file_and_key(tmp_path, toml, message):
    path = tmp_path / "s.toml"
    path.write_text(toml)
    with pytest.raises(HarnessError) as e:
        scenarios.load(str(path))
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value) and "\n" not in str(e.value)


def test_every_shipped_scenario_loads_and_scales_lock_down():
    names = scenarios.available()
    assert {"legacy-gsi", "shared-lock", "namespaced", "disposable", "pruning", "write-stress"} <= set(names)
    for name in names:
        sc = scenarios.load(name)
        assert sc.lock.ttl_s < 30 and sc.lock.wait_s < 60  # scaled down for short local runs


def test_the_documented_scenario_reference_parses(tmp_path):
    """scenarios/README.md's reference block is a valid scenario, with every default it shows."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "harness" / "config" / "scenarios" / "README.md").read_text()
    block = re.search(r"```toml\n(.*?)```", doc, re.S).group(1).replace('"<file name>"', '"reference"')
    path = tmp_path / "reference.toml"
    path.write_text(block)
    sc = scenarios.load(str(path))
    assert sc.fidelity.mode == "auto" and sc.fidelity.config.faults["*"].error_5xx == 0.0
    assert sc.fidelity.config.dynamodb.partition_write == 1000 and sc.background.items == 0
    assert sc.lock.wait_s == 60 and sc.fleet.max_iterations == 100_000


def test_each_web_test_is_checked_with_the_scenario_it_ran(tmp_path):
    """A session's tests keep their own scenario's checks (the form may have chosen another scenario)."""
    import time

    from harness.record import runinfo
    from harness.record.writer import ShardWriter
    from harness.supervisor.run import _results

    runinfo.write(tmp_path, {"session": True, "tests": []})
    entries = []
    for name, max_failures in (("lenient", 1.0), ("strict", 0.1)):
        n, d = runinfo.new_test_dir(tmp_path)
        sc = scenarios.load("namespaced").to_dict()
        sc["name"], sc["checks"]["max_failure_ratio"] = name, max_failures
        runinfo.write(d, {"scenario": sc, "scenario_name": name, "status": "finished"})
        w = ShardWriter(d)
        t = time.time()
        w.add([{"ts_start": t, "ts_end": t + 1, "user": "w0-0", "iteration": i, "ok": i % 2 == 0, "worker": "local"}
               for i in range(10)])
        w.flush()
        entries.append({"number": n, "dir": str(d.relative_to(tmp_path))})
    runinfo.update(tmp_path, tests=entries)
    res = _results(tmp_path, 0, None)
    assert res.session and res.rows == 20
    (line,) = res.failed_checks
    assert line.startswith("test 002: failure ratio 50.0% (5 of 10;") and line.endswith("above the allowed 10.0%")
    assert [p.name for p in res.to_report] == ["001", "002"]


def test_a_run_with_a_lost_worker_is_not_safety_checked_against_its_partial_history(tmp_path):
    """The lost worker's acknowledged commits are in the table but not in the history: checking would call
    them phantom writes and blame the datastore. The run says it could not check instead."""
    import json

    from harness.supervisor.run import _check_safety

    (tmp_path / "run.json").write_text(json.dumps({
        "scenario": {"checks": {"safety": True}},
        "incomplete": [{"process": "worker-1", "reason": "killed or lost"}]}))
    assert _check_safety(tmp_path, backend=None) == [
        "safety: could not check: the history is incomplete (worker-1 lost before its last report)"]
    (tmp_path / "run.json").write_text(json.dumps({"scenario": {"checks": {"safety": False}}, "incomplete": []}))
    assert _check_safety(tmp_path, backend=None) == []
