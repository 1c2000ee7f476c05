"""The S3 swamp-layout pre-age against what the real swamp wrote (tests/fixtures/swamp/s3-c25ec91.objects.json).

The fixture is one ``swamp model create`` + ``method run get_uptime`` of swamp 06b6147 on swamp-club's S3
datastore extension at c25ec91 (how: that folder's README), every object in the bucket. The writer must index
a file exactly as that version did (the monolithic index, the shards, the partition list, byte for byte), and
leave a bucket a fresh swamp pull reads whole, paced by requests.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.core.virtual_time import VirtualClock
from harness.core.work import Work
from harness.jobs.pacing.budget import Budgets
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.swamp_layout import SwampFile, layout_named, model_files
from harness.jobs.pacing.swamp_s3_layout import (
    INDEX,
    META,
    REQUEST_CEILING,
    S3Target,
    SwampS3LayoutSource,
    _json,
    index_objects,
    partition_key,
    run_layout_job,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "swamp" / "s3-c25ec91.objects.json"


def recorded() -> dict[str, bytes]:
    return {o["key"]: o["body"].encode() for o in json.loads(FIXTURE.read_text())["objects"]}


def recorded_files() -> list[SwampFile]:
    """The data objects, each pushed at its index entry's ``lastModified``."""
    objs = recorded()
    entries = json.loads(objs[INDEX])["entries"]
    return [SwampFile(rel, objs[rel], e["lastModified"]) for rel, e in entries.items()]


def test_the_fixture_is_five_files_and_their_commit():
    objs = recorded()
    assert len(recorded_files()) == 5  # definition, raw, metadata, latest, output
    assert set(objs) - {f.rel for f in recorded_files()} == {
        INDEX, META, "_index/data--@webframp--system.json", "_index/definitions-evaluated--@webframp--system.json",
        "_index/outputs--@webframp--system--get_uptime.json",
        next(k for k in objs if k.startswith("_index/data--@webframp--system--"))}


def test_the_commit_is_written_byte_for_byte_as_the_extension_wrote_it():
    objs, files = recorded(), recorded_files()
    want_index = json.loads(objs[INDEX])
    mine = index_objects(files, want_index["lastPulled"])
    assert set(mine) == set(objs) - {f.rel for f in files}
    assert mine[META] == objs[META]  # the partition list: no times in it, so every byte

    def local_times_as_recorded(body: bytes) -> bytes:
        """localMtime is the recording machine's write time (before the push): taken from the recording; every
        other byte (fields, their order, sizes, hashes, the push times, the form of the JSON) must be ours."""
        doc = json.loads(body)
        for rel, e in doc["entries"].items():
            e["localMtime"] = want_index["entries"][rel]["localMtime"]
        return _json(doc)

    for rel in mine:
        if rel != META:
            assert local_times_as_recorded(mine[rel]) == objs[rel], rel
    for f in files:  # and our localMtime is a moment before the push, in swamp's form
        entry = json.loads(mine[INDEX])["entries"][f.rel]
        assert entry["localMtime"] < entry["lastModified"] and entry["localMtime"].endswith("Z")
        assert entry["sha256"] == hashlib.sha256(f.content).hexdigest()


def test_partitions_are_the_extensions():
    for shard, body in recorded().items():
        if shard.startswith("_index/") and shard != META:
            for rel in json.loads(body)["entries"]:
                assert partition_key(rel) == shard[len("_index/"):-len(".json")]
    assert partition_key(".datastore-index.json") == "_root"
    assert partition_key("workflow-runs/w1/run.yaml") == "workflow-runs--w1"
    assert partition_key("audit/2026/x.json") == "audit"
    assert partition_key("data/a/b") is None and partition_key("elsewhere/x") is None


def test_a_models_own_shard_goes_with_it_and_the_shared_ones_with_the_commit():
    source = SwampS3LayoutSource(None, S3Target("b", "team/p"), models=4, versions=3, epoch=1.8e9)
    assert source.total == 4 and source.files() == 4 * (2 + 3 * 3)
    keys = [k for k, _ in source.objects(2)]
    model_id = source.model_ids[2]
    assert keys[-1] == f"team/p/_index/data--@webframp--system--{model_id}.json"  # its shard after its files
    assert all(k.startswith("team/p/") for k in keys) and len(keys) == 2 + 3 * 3 + 1
    assert source.cost(2) == len(keys)
    shard = json.loads(dict(source.objects(2))[keys[-1]])
    assert sorted(shard["entries"]) == sorted(f.rel for f in model_files(1.8e9, 2, 3, 4) if "/current/" in f.rel
                                              and not f.rel.endswith("/latest"))
    assert sorted(source.shared_objects()) == sorted([
        INDEX, META, "_index/data--@webframp--system.json", "_index/definitions-evaluated--@webframp--system.json",
        "_index/outputs--@webframp--system--get_uptime.json"])
    meta = json.loads(source.shared_objects()[META])
    assert len(meta["partitions"]) == 4 + 3 and meta["version"] == 1


def test_layout_named_answers_for_either_backend():
    assert layout_named("swamp-s3@c25ec91").backend == "s3"
    assert layout_named("swamp-dynamodb@a929b7a").backend == "dynamodb"
    with pytest.raises(HarnessError, match="swamp-dynamodb@a929b7a, swamp-dynamodb@bc36088a, swamp-s3@c25ec91"):
        layout_named("swamp-s3@0000000")


def _fresh_pull(s3, bucket: str, prefix: str) -> dict[str, bytes]:
    """What an unscoped pull of c25ec91 on a bucket with no _meta.json v2 reads: the index, then every entry."""
    meta = json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/{META}")["Body"].read())
    assert meta["version"] == 1  # not v2: a pull reads the monolith
    index = json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/{INDEX}")["Body"].read())
    out = {rel: s3.get_object(Bucket=bucket, Key=f"{prefix}/{rel}")["Body"].read() for rel in index["entries"]}
    for rel, e in index["entries"].items():
        assert (len(out[rel]), hashlib.sha256(out[rel]).hexdigest()) == (e["size"], e["sha256"])
    # and a scoped pull (a model's run) finds the same entries in the shards the partition list names
    sharded: dict[str, dict] = {}
    for part in meta["partitions"]:
        sharded.update(json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/_index/{part}.json")["Body"].read())
                       ["entries"])
    assert sharded == index["entries"]
    return out


def test_a_pre_aged_bucket_holds_every_models_files_where_a_fresh_pull_looks(aws):
    _, s3 = aws
    s3.create_bucket(Bucket="swamp-s3")
    source = SwampS3LayoutSource(s3, S3Target("swamp-s3", "p"), models=6, versions=2, epoch=1.8e9)
    for idx in range(source.total):
        work = Work()
        source.run(idx, work)
        source.run(idx, Work())  # a redone item lands the same objects
        assert work.total_requests == source.cost(idx)  # the cost is the requests
    source.finish()
    pulled = _fresh_pull(s3, "swamp-s3", "p")
    want = {f.rel: f.content for m in range(6) for f in model_files(1.8e9, m, 2, 6)}
    assert pulled == want


def test_the_index_goes_last_so_it_never_names_a_missing_file():
    puts: list[str] = []

    class Recorder:
        def put_object(self, Bucket: str, Key: str, Body: bytes) -> None:  # noqa: N803 - boto3's names
            puts.append(Key)

    SwampS3LayoutSource(Recorder(), S3Target("b"), models=3, versions=1, epoch=1.8e9).finish()
    assert puts[-2:] == [META, INDEX] and len(puts) == 5


def test_the_job_is_paced_by_requests_and_its_commit_waits_for_it(aws, tmp_path):
    """On virtual time: the job's requests a second stay at its ceiling, and it ends done."""
    _, s3 = aws
    s3.create_bucket(Bucket="paced")
    ceiling = 50.0  # requests a second (S3's is 70 % of 3,500 PUTs/s per prefix)
    assert REQUEST_CEILING == pytest.approx(2450)
    source = SwampS3LayoutSource(s3, S3Target("paced"), models=40, versions=2, epoch=1.8e9)
    requests = sum(source.cost(i) for i in range(source.total))
    assert requests == 40 * 9
    journal = Journal(tmp_path / "jobs.db")
    with VirtualClock().running() as vc:
        state = run_layout_job("seed-s3", {"bucket": "paced", "layout": "swamp-s3@c25ec91"}, source, None, journal,
                               ceiling=ceiling, clock=vc, threads=vc, budgets=Budgets(), rng=random.Random(1),
                               period_s=0.25)
        elapsed = vc.elapsed()
    assert state == "done"
    row = journal.get("seed-s3")
    assert (row.done, row.failed, row.total, row.table_name) == (40, 0, 40, None)
    # 360 requests at 50/s: at least 7.2 s less one second of burst; the AIMD ramp (a quarter of the ceiling,
    # +10 % a period) adds at most a couple of seconds
    assert requests / ceiling - 1.0 <= elapsed <= requests / ceiling + 3.0, elapsed
    assert s3.list_objects_v2(Bucket="paced").get("KeyCount", 0) == 40 * (8 + 1)  # no commit before finish


@pytest.mark.parametrize("argv,endpoint,message", [
    (["--bucket", "b"], None, "harness: jobs need an endpoint that outlives them: set AWS_ENDPOINT_URL_S3"),
    ([], "http://127.0.0.1:9", "harness: --layout swamp-s3@c25ec91 needs --bucket"),
    (["--bucket", "b", "--prefix", "/p"], "http://127.0.0.1:9", "harness: --prefix '/p': give it as the extension"),
    (["--bucket", "b", "--table", "t"], "http://127.0.0.1:9", "harness: --layout swamp-s3@c25ec91 writes a bucket"),
    (["--bucket", "b", "--orphans", "1"], "http://127.0.0.1:9", "harness: --layout takes --models and --versions"),
])
def test_the_s3_layouts_bad_input_is_one_line(capsys, monkeypatch, tmp_path, argv, endpoint, message):
    from harness.cli.main import main

    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(var, raising=False)
    if endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.setenv("HARNESS_JOBS_DIR", str(tmp_path))
    code = main(["jobs", "pre-age", "legacy-gsi", "--models", "3", "--versions", "1", "--layout", "swamp-s3@c25ec91",
                 *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(message), err


def test_a_bucket_without_an_s3_layout_is_refused(capsys, monkeypatch, tmp_path):
    from harness.cli.main import main

    monkeypatch.setenv("HARNESS_JOBS_DIR", str(tmp_path))
    assert main(["jobs", "pre-age", "legacy-gsi", "--models", "3", "--versions", "1", "--bucket", "b"]) == 2
    assert capsys.readouterr().err.startswith("harness: harness jobs pre-age needs --table")
    assert main(["jobs", "pre-age", "legacy-gsi", "--models", "3", "--versions", "1", "--table", "t", "--prefix",
                 "p"]) == 2
    assert capsys.readouterr().err.startswith("harness: --bucket and --prefix go with an S3 --layout")


def test_a_runs_pre_age_in_the_s3_layout_writes_the_bucket_and_prefix_its_repositories_name(aws, tmp_path,
                                                                                          monkeypatch):
    """`harness run` / a story chapter with seed.layout = swamp-s3@c25ec91: the run's own bucket, under its prefix
    (what the swamp driver's .swamp.yaml names: bucket, prefix), read whole by a fresh pull."""
    from dataclasses import replace
    from types import SimpleNamespace

    from harness.config import scenario as scenarios
    from harness.config.build import RunOptions, plan_run
    from harness.config.plan import PreAge
    from harness.core.environment import UserEnvironment
    from harness.jobs import background, bulk

    _, s3 = aws
    exe = tmp_path / "swamp"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    (tmp_path / "s3" / "extensions" / "datastores" / "s3").mkdir(parents=True)
    sc = scenarios.with_swamp(scenarios.twin_for(scenarios.load("disposable"), "swamp"), str(exe),
                              str(tmp_path / "s3"))
    plan = plan_run(RunOptions(scenario="disposable", backend="s3", run_dir=str(tmp_path / "run"),
                               preage=PreAge(5, 2, 0, "swamp-s3@c25ec91")), UserEnvironment(), scenario=sc)
    plan = replace(plan, resources=replace(plan.resources, bucket="the-runs-bucket", prefix="team/a"))
    (tmp_path / "run").mkdir(exist_ok=True)
    s3.create_bucket(Bucket="the-runs-bucket")  # the run's provisioning made it
    clients = SimpleNamespace(s3=s3, endpoints=SimpleNamespace(s3=None))
    monkeypatch.setattr(bulk, "paced_clients", lambda factory: clients)
    said: list[str] = []
    background.preage(SimpleNamespace(plan=plan), said.append, quiet=True)
    assert said == ["harness: seeding 40 files of 5 models in swamp-s3@c25ec91's layout at "
                    "s3://the-runs-bucket/team/a/"]
    pulled = _fresh_pull(s3, "the-runs-bucket", "team/a")
    assert pulled == {f.rel: f.content for m in range(5) for f in model_files(_epoch(tmp_path / "run"), m, 2, 5)}


def _epoch(run_dir: Path) -> float:
    """The job's epoch, as its journal keeps it (a model's ids and times derive from it)."""
    return Journal(run_dir / "jobs.db").all()[0].params["epoch"]
