"""Jobs as a user runs them: killed with SIGKILL, resumed, checked item by item."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import boto3
import pytest

from harness.aws.moto_server import EmbeddedMoto
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.sources import fill_body
from tests.e2e.conftest import ROOT, SCENARIOS, clean_env, harness

pytestmark = pytest.mark.e2e
ITEMS = 600  # enough to kill the job mid-way at moto speed, few enough to resume in seconds


@pytest.fixture
def moto():
    with EmbeddedMoto() as m:
        yield m


def _env(moto, tmp_path):
    return clean_env(AWS_ENDPOINT_URL=moto.url, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x",
                     AWS_DEFAULT_REGION="us-east-1", HARNESS_JOBS_DIR=str(tmp_path))


def _table(moto, name):
    ddb = boto3.client("dynamodb", endpoint_url=moto.url, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    return ddb


def _start_and_kill(env, table, tmp_path, after_items=150):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "jobs", "fill", table, "--items", str(ITEMS),
                             "--item-bytes", "400"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    journal = Journal(tmp_path / "jobs.db")
    while time.monotonic() < deadline:
        rows = journal.all()
        if rows and rows[0].done >= after_items:
            break
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    (row,) = journal.all()
    assert 0 < row.done < ITEMS, "the job must be killed mid-way"
    return row.id


def _all_items(ddb, table):
    items, kwargs = [], {"TableName": table}
    while True:
        out = ddb.scan(**kwargs)
        items += out["Items"]
        if "LastEvaluatedKey" not in out:
            return items
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def test_sigkill_then_resume_writes_every_item_exactly_once(moto, tmp_path):
    ddb = _table(moto, "crash")
    env = _env(moto, tmp_path)
    job = _start_and_kill(env, "crash", tmp_path)
    listed = harness("jobs", "list", env=env)
    assert listed.returncode == 0 and job in listed.stdout and "interrupted" in listed.stdout
    p = harness("jobs", "resume", job, env=env, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"harness: job {job} done" in p.stdout
    items = _all_items(ddb, "crash")
    idx = sorted(int(i["sk"]["S"]) for i in items)
    assert idx == list(range(ITEMS))  # none lost, none duplicated
    assert all(i["body"]["S"] == fill_body(int(i["sk"]["S"]), 400) for i in items)  # content checked
    row = Journal(tmp_path / "jobs.db").get(job)
    assert row.state == "done" and row.done == ITEMS and row.failed == 0
    assert len(Journal(tmp_path / "jobs.db").done_indexes(job)) == ITEMS


def test_resume_against_a_recreated_table_is_refused(moto, tmp_path):
    ddb = _table(moto, "recreated")
    env = _env(moto, tmp_path)
    job = _start_and_kill(env, "recreated", tmp_path, after_items=100)
    ddb.delete_table(TableName="recreated")
    _table(moto, "recreated")
    p = harness("jobs", "resume", job, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "is not the table the job started on (it was recreated" in p.stderr
    row = Journal(tmp_path / "jobs.db").get(job)
    assert row.shown_state == "interrupted" and "recreated" in row.reason  # it stays where it was, and says why
    assert _all_items(ddb, "recreated") == []  # nothing was written to the new table


def test_seeded_run_starts_in_the_degraded_regime(tmp_path):
    """Pre-aged to 10 models x 5 versions (3 orphaned), the first iteration already carries the late-run counts."""
    import hashlib
    import json

    from tests.e2e.conftest import rows
    from tests.support.spying import events, spied

    models, versions, orphans = 10, 5, 3
    seeded, fresh = tmp_path / "seeded", tmp_path / "fresh"
    p = harness("run", "namespaced", "--users", "2", "--duration", "12s", "--pre-age-models", str(models),
                "--pre-age-versions", str(versions), "--pre-age-orphans", str(orphans), "--run-dir", str(seeded),
                "--no-report", env=spied(tmp_path / "spy.log"))
    assert p.returncode == 0, p.stdout + p.stderr
    digest = hashlib.sha256((SCENARIOS / "namespaced.toml").read_text().encode()).hexdigest()
    assert [e["toml"] for e in events(tmp_path / "spy.log") if "toml" in e].count(digest) == 1  # seeding included
    assert json.loads((seeded / "plan.json").read_text())["seeding"]["preage"] == {
        "models": models, "orphans": orphans, "versions": versions, "layout": None}  # None: the model's own layout
    files = 2 * (models * versions * 3 + models * 2 - orphans)  # per namespace: raw, metadata, output per version;
    assert f"seeding {files:,} files in 2 namespace(s)" in p.stdout  # latest + definition per model, orphans' gone
    (job,) = Journal(seeded / "jobs.db").all()  # every item of the seed landed: none failed, none left
    assert (job.kind, job.state, job.done, job.failed) == ("seed", "done", job.total, 0) and job.total > 0
    p = harness("run", "namespaced", "--users", "2", "--duration", "5s", "--run-dir", str(fresh), "--no-report")
    assert p.returncode == 0, p.stdout + p.stderr
    first_seeded = rows(seeded).groupby("user").first()
    first_fresh = rows(fresh).groupby("user").first()
    assert len(first_seeded) and len(first_fresh)  # each worker's first iteration (every one that finished one)
    live = (models - orphans) * (versions * 3 + 2)  # live models x (3 files per version + latest + definition)
    assert set(first_seeded["index_entries_written"]) == {live + 5}  # the full commit of the late run
    assert set(first_seeded["catalog_rows"]) == {models * versions + 1}  # orphans' rows included
    assert set(first_fresh["index_entries_written"]) == {5} and set(first_fresh["catalog_rows"]) == {1}
    assert set(first_seeded["files_pulled"]) == {0}  # the workers start from the seeded local view


def test_harness_seed_then_the_run_it_prints_starts_from_the_seed(moto, tmp_path):
    """`harness jobs pre-age` prints the `harness run` to follow; that command runs, and its workers start seeded."""
    import re
    import shlex

    from tests.e2e.conftest import rows

    env = _env(moto, tmp_path)
    p = harness("jobs", "pre-age", "namespaced", "--models", "6", "--versions", "3", "--orphans", "2", "--users", "2",
                "--table", "seeded-table", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    hint = re.search(r"then `(harness run [^`]+)`", p.stdout)
    assert hint, p.stdout
    argv = shlex.split(hint.group(1))[1:]
    assert argv[:2] == ["run", "namespaced"] and "--pre-age-dir" in argv and "--table" in argv
    run_dir = tmp_path / "run"
    p = harness(*argv, "--users", "2", "--duration", "8s", "--run-dir", str(run_dir), "--no-report", env=env,
                cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    first = rows(run_dir).groupby("user").first()
    live = (6 - 2) * (3 * 3 + 2)  # live models x (raw, metadata, output per version + latest + definition)
    assert set(first.index) == {"w0-0", "w0-1"}
    assert set(first["index_entries_written"]) == {live + 5}  # the seeded index, committed whole
    assert set(first["catalog_rows"]) == {6 * 3 + 1}  # the seeded catalog, orphans' rows included
    assert set(first["files_pulled"]) == {0}  # the seeded local view: nothing to fetch


def test_cleanup_deletes_every_item_then_the_owned_table_and_refuses_foreign_ones(moto, tmp_path):
    env = _env(moto, tmp_path)
    ddb = boto3.client("dynamodb", endpoint_url=moto.url, region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    for name, tags in (("ours", [{"Key": "harness:owner", "Value": "harness"}]), ("theirs", [])):
        kwargs = {"Tags": tags} if tags else {}
        ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                    {"AttributeName": "sk", "KeyType": "RANGE"}],
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                               {"AttributeName": "sk", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST", **kwargs)
        p = harness("jobs", "fill", name, "--items", "300", "--item-bytes", "200", env=env)
        assert p.returncode == 0, p.stdout + p.stderr
    p = harness("jobs", "cleanup", "theirs", env=env)
    assert p.returncode == 2 and "was not created by the harness" in p.stderr
    assert len(_all_items(ddb, "theirs")) == 300  # untouched
    p = harness("jobs", "cleanup", "ours", "--prefix", "FILL#0000001", env=env)  # items 100..199 only
    assert p.returncode == 0, p.stdout + p.stderr
    assert "100 items to delete from ours" in p.stdout
    assert len(_all_items(ddb, "ours")) == 200
    p = harness("jobs", "cleanup", "ours", "--drop-table", env=env)
    assert p.returncode == 0 and "table ours deleted" in p.stdout, p.stdout + p.stderr
    assert "ours" not in ddb.list_tables()["TableNames"] and "theirs" in ddb.list_tables()["TableNames"]


def test_background_job_runs_beside_the_workers_and_pauses_with_the_run(tmp_path):
    from tests.e2e.conftest import rows

    sc = (SCENARIOS / "namespaced.toml").read_text() + "\n[background]\nitems = 1000000\nitem_bytes = 300\n"
    path = tmp_path / "noisy.toml"
    path.write_text(sc)
    run_dir = tmp_path / "run"
    p = harness("run", str(path), "--users", "2", "--duration", "10s", "--run-dir", str(run_dir), "--no-report")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "harness: background job paused" in p.stdout
    (row,) = Journal(run_dir / "jobs.db").all()
    assert row.kind == "fill" and row.reason == "Paused: the run ended" and 100 < row.done < 1_000_000
    assert row.throttled == 0 and set(rows(run_dir)["user"]) == {"w0-0", "w0-1"}  # the workers ran alongside
