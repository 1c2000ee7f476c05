"""A run that is swamp's own (``fencing = false`` with ``bookkeeping = "swamp"``) makes swamp's requests: its locks'
(S3: If-None-Match PUT, GET + HEAD on refusal, GET + PUT heartbeat, GET + DELETE release), its reads
(DynamoDB: eventually consistent, on swamp's own items), its commit; a fenced run counts what fencing adds apart
(docs/swamp-today.md names each source)."""

from __future__ import annotations

import json
import time

import pytest

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.backends.s3.index import entries_of, shard_doc
from harness.datastore.catalog import Catalog
from harness.datastore.lock import Lock, LockConfig
from harness.datastore.sync import Datastore, SyncConfig
from harness.datastore.variant import Variant
from harness.load.drivers.model import summarize
from tests.conftest import SleepLog

TABLE, BUCKET = "harness-test", "harness-test"
LOCK = LockConfig(ttl_s=3.0, wait_s=2.0, retry_s=0.05, retry_cap_s=0.1)


def ddb_backend(aws, *, fencing=False, clock=None, **kw) -> DynamoBackend:
    """swamp's GSI, registry adds and bookkeeping: a run that is swamp's own, unless fenced."""
    variant = Variant(fenced=fencing, bookkeeping="swamp", registry_adds="swamp")
    be = DynamoBackend(aws[0], TABLE, "swamp", clock=clock or FakeClock(), variant=variant, **kw)
    be.ensure()
    return be


def s3_backend(aws, *, fencing=False, clock=None) -> S3Backend:
    """swamp's shards, commit and bookkeeping: a run that is swamp's own, unless fenced."""
    variant = Variant(fenced=fencing, bookkeeping="swamp", s3_shards="swamp", s3_commit="swamp")
    be = S3Backend(aws[1], BUCKET, "sharded", clock=clock or FakeClock(time.time()), variant=variant)
    be.ensure()
    return be


def store(be, namespace="w1", *, holder="w", **kw) -> Datastore:
    cfg = SyncConfig(namespace=namespace, lock=LOCK, heartbeat=False, sync="two-phase", global_poll_s=0.05,
                     upload_concurrency=10, **kw)
    return Datastore(be, Catalog(), cfg, clock=be.clock, holder=holder)


class Sent:
    """Every request a client sends: (operation, its parameters)."""

    def __init__(self, client) -> None:
        self.calls: list[tuple[str, dict]] = []
        client.meta.events.register("before-parameter-build", self._on)

    def _on(self, params, model, **_):
        self.calls.append((model.name, dict(params)))

    def ops(self) -> list[str]:
        return [op for op, _ in self.calls]


def test_swamps_s3_lock_refusal_costs_put_get_head_its_heartbeat_get_put_its_release_get_delete(aws):
    be = s3_backend(aws)
    sent = Sent(aws[1])
    lock = Lock(be.lock_store, ".locks/w1.lock", be.clock, LOCK, "a")
    grant = lock.acquire(Work())
    assert sent.ops() == ["PutObject"] and sent.calls[0][1].get("IfNoneMatch") == "*"
    body = json.loads(be.objects.get(".locks/w1.lock", Work())[0])
    assert set(body) == {"holder", "hostname", "pid", "acquiredAt", "ttlMs", "nonce"}  # buildLockInfo's fields
    sent.calls.clear()
    w = Work()
    assert be.lock_store.try_acquire(".locks/w1.lock", lock._record("other", 0), 0, w) is None
    assert sent.ops() == ["PutObject", "GetObject", "HeadObject"] and w.total_requests == 3
    sent.calls.clear()
    lock.heartbeat(grant, Work())
    assert sent.ops() == ["GetObject", "PutObject"] and "IfMatch" not in sent.calls[1][1]  # unconditional
    sent.calls.clear()
    assert lock.release(grant, Work())
    assert sent.ops() == ["GetObject", "DeleteObject"]
    assert be.objects.get(".locks/w1.lock", Work()) is None  # deleted: no fencing counter survives


def test_swamps_s3_lock_steals_a_stale_lock_after_200_to_500_ms(aws):
    clock = SleepLog()
    clock.advance(time.time() - clock.now())  # swamp compares the object's LastModified with its own clock
    be = s3_backend(aws, clock=clock)
    Lock(be.lock_store, ".locks/w1.lock", clock, LOCK, "crashed").acquire(Work())
    clock.advance(LOCK.ttl_s + 1)  # the holder never renewed: LastModified + ttlMs < now
    sent = Sent(aws[1])
    grant = Lock(be.lock_store, ".locks/w1.lock", clock, LOCK, "b").acquire(Work())
    assert sent.ops() == ["PutObject", "GetObject", "HeadObject", "DeleteObject", "PutObject"]
    assert len(clock.sleeps) == 1 and 0.2 <= clock.sleeps[0] < 0.5
    assert be.lock_store.inspect(".locks/w1.lock", grant.granted_at_ms, Work())["nonce"] == grant.nonce


def test_swamps_dynamodb_lock_puts_updates_and_deletes_its_item_and_inspects_eventually(aws):
    be = ddb_backend(aws)
    sent = Sent(aws[0])
    lock = Lock(be.lock_store, ".locks/w1.lock", be.clock, LOCK, "a")
    grant = lock.acquire(Work())
    lock.heartbeat(grant, Work())
    be.lock_store.inspect(".locks/w1.lock", 0, Work())
    lock.release(grant, Work())
    assert sent.ops() == ["PutItem", "UpdateItem", "GetItem", "DeleteItem"]
    put, inspect = sent.calls[0][1], sent.calls[2][1]
    assert put["ConditionExpression"] == "attribute_not_exists(pk) OR expiresAtMs < :now"
    assert not inspect.get("ConsistentRead")  # eventually consistent
    assert "Item" not in aws[0].get_item(TableName=TABLE, Key={"pk": {"S": "LOCK#.locks/w1.lock"},
                                                                "sk": {"S": "LOCK"}})


def reads(sent: Sent) -> list[dict]:
    return [p for op, p in sent.calls if op in ("GetItem", "Query", "BatchGetItem")]


def consistent(p: dict) -> bool:
    if "RequestItems" in p:
        return all(v.get("ConsistentRead") for v in p["RequestItems"].values())
    return bool(p.get("ConsistentRead"))


def test_a_swamp_own_run_reads_nothing_strongly_consistently_a_fenced_one_keeps_its_checks(aws):
    own = ddb_backend(aws)
    a = store(own)
    a.sync_run("m0", "get_uptime", 100, [])
    sent = Sent(aws[0])
    a.sync_run("m0", "get_uptime", 100, [])
    b = store(own, holder="b")
    b.pull(Work())  # an unscoped pull: SEQ, the 13 system partitions, the registry, what it lists
    assert reads(sent) and not any(consistent(p) for p in reads(sent))
    assert {r: m.digest for r, m in b.local.items()} == {r: m.digest for r, m in a.local.items()}  # read back whole


def test_an_unscoped_swamp_pull_reads_seq_then_the_system_partitions_and_the_registry_or_stops_at_seq(aws):
    be = ddb_backend(aws)
    store(be).sync_run("m0", "get_uptime", 100, [])
    b = store(be, holder="b")
    sent = Sent(aws[0])
    w = Work()
    b.pull(w)
    gets = [p["Key"]["pk"]["S"] + "/" + p["Key"]["sk"]["S"] for op, p in sent.calls if op == "GetItem"]
    assert gets == ["SYNCSTATE#global/SEQ", "PARTITIONS#registry/LIST"]
    gsi = [p["ExpressionAttributeValues"][":p"]["S"] for op, p in sent.calls if op == "Query" and "IndexName" in p]
    assert len(gsi) == 13 + 1 and "FILE#_system/w1" in gsi and "FILE#_system/definitions-evaluated" in gsi
    sent.calls.clear()
    b.pull(Work())  # nothing pushed since: SEQ alone
    assert sent.ops() == ["GetItem"]


def test_a_fenced_run_counts_what_fencing_adds_and_a_swamp_own_run_adds_nothing(aws):
    own_steps: list = []
    a = store(ddb_backend(aws))
    a.sync_run("m0", "get_uptime", 100, [])
    a.sync_run("m0", "get_uptime", 100, own_steps)
    assert summarize(own_steps)["fencing_requests"] == 0
    fenced_steps: list = []
    f = store(ddb_backend(aws, fencing=True), namespace="w2")
    f.sync_run("m0", "get_uptime", 100, [])
    f.sync_run("m0", "get_uptime", 100, fenced_steps)
    row = summarize(fenced_steps)
    # the model fence, the pull's registry and second look at the lock item, the commit's registry, its seal and
    # the superseded versions' deletes
    assert row["fencing_requests"] >= 6 and 0 < row["fencing_write_units"] <= row["write_units"]
    assert row["write_requests"] < row["requests"]


def test_the_harnesss_registry_stays_off_swamps_so_its_size_is_swamps_alone(aws):
    ddb, _ = aws
    steps: list = []
    f = store(ddb_backend(aws, fencing=True), namespace=None, lock_scope="datastore")
    f.sync_run("m0", "get_uptime", 100, steps)
    item = ddb.get_item(TableName=TABLE, Key=REGISTRY)["Item"]
    assert set(item) == {"pk", "sk", "partitions"}  # no c:/b:/k: attributes of the harness's
    assert ddb.get_item(TableName=TABLE, Key={"pk": {"S": "PARTITIONS#harness"}, "sk": {"S": "LIST"}}).get("Item")


def test_swamps_shard_entries_are_about_two_and_a_half_times_the_harnesss_and_read_back_the_same():
    rel = "w1-0/data/system/m0/uptime/12/raw"
    entries = {rel: FileMeta(rel, 512, FileMeta.digest_of(b"x"), 1_700_000_000_123, 12)}
    own, swamp = shard_doc(entries), shard_doc(entries, "swamp")
    assert 2.2 <= len(swamp) / len(own) <= 3.0
    doc = json.loads(swamp)["entries"][rel]
    assert set(doc) == {"key", "size", "lastModified", "localMtime", "sha256", "v"} and len(doc["sha256"]) == 64
    assert doc["lastModified"] == "2023-11-14T22:13:20.123Z"  # new Date(1700000000123).toISOString()
    assert entries_of(json.loads(swamp)) == entries_of(json.loads(own)) == entries


@pytest.mark.parametrize("fencing", [False, True])
def test_an_s3_run_with_swamps_shards_writes_swamps_entries_and_reads_them_back(aws, fencing):
    be = s3_backend(aws, fencing=fencing)
    a = store(be)
    a.sync_run("m0", "get_uptime", 100, [])
    head = be.objects.get_json("w1/_index/_meta.json", Work())[0]
    shard = be.objects.get_json(head["shards"]["w1/data--system--m0"], Work())[0]
    assert all(set(e) >= {"key", "sha256"} for e in shard["entries"].values())
    b = store(be, holder="b")
    b.pull(Work())
    assert {r: m.digest for r, m in b.local.items()} == {r: m.digest for r, m in a.local.items()}


def test_swamps_catalog_export_has_the_23_columns_of_todays_catalog_table_a_stored_copys_28_on_request():
    cat = Catalog()
    cat.add_model("w1", "system", "m0")
    cat.add_data("w1", "system", "m0", "uptime", 1, "w1/data/system/m0/uptime/1/raw", 100)
    today, stored = (json.loads(cat.export("w1", style)) for style in ("swamp", "stored-28"))
    assert list(today[0]) == ["namespace", "type_normalized", "model_id", "data_name", "id", "version", "is_latest",
                              "model_name", "spec_name", "data_type", "content_type", "lifetime", "owner_type",
                              "streaming", "size", "created_at", "tags", "owner_ref", "workflow_run_id",
                              "workflow_name", "job_name", "step_name", "source"]
    assert today[0]["workflow_run_id"] == "" and len(stored[0]) == 28 and stored[0]["workflow_run_id"] is None


@pytest.mark.parametrize("kind", ["dynamodb", "s3"])
def test_swamps_lock_goes_only_with_an_unfenced_run_never_mixed_with_fencing(aws, kind):
    """Which system runs is the backend's variant: swamp's bookkeeping unfenced is swamp's own run (its lock,
    nothing fenced); the same bookkeeping fenced is the harness's lock and fence (choose.py)."""
    from harness.datastore.backends.dynamodb.swamp_lock import SwampDynamoLockStore
    from harness.datastore.backends.s3.swamp_lock import SwampS3LockStore

    make, swamps = (ddb_backend, SwampDynamoLockStore) if kind == "dynamodb" else (s3_backend, SwampS3LockStore)
    own, fenced = make(aws), make(aws, fencing=True)
    assert isinstance(own.lock_store, swamps) and own.own and store(own).fence_hook() is None
    assert not isinstance(fenced.lock_store, swamps) and not fenced.own and store(fenced).fence_hook() is not None


def test_pre_ageing_a_swamp_own_run_is_refused_while_planning():
    from harness.config.plan import PreAge
    from harness.core.errors import HarnessError
    from tests.support.plans import make_plan

    with pytest.raises(HarnessError, match="--pre-age-models writes the harness's fenced items"):
        make_plan("two-phase-namespaced", preage=PreAge(2, 2))


@pytest.mark.parametrize("argv", [["run", "two-phase-namespaced", "--pre-age-models", "2"],
                                  ["jobs", "pre-age", "two-phase-namespaced", "--table", "t-own", "--models", "2",
                                   "--versions", "1"]])
def test_seeding_a_swamp_own_scenario_is_one_line_and_exit_2(capsys, monkeypatch, argv):
    from harness.cli.main import main

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # (never reached: refused before)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fenced items, which a run that is swamp's own" in err, err
