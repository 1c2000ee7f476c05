"""swamp's DynamoDB extension as its code reads (docs/swamp-today.md): namespace-blind GSI partitions, the
registry's per-partition ADDs (billed by the item's size), retryable's and the batch loops' schedules."""

from __future__ import annotations

import random

import pytest
from botocore.exceptions import ClientError

from harness.core.work import Work, recording
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY, racing_adds
from harness.datastore.backends.dynamodb.items import gsi_keys, swamp_partition
from harness.datastore.backends.dynamodb.retry import (
    UNPROCESSED_TRIES,
    Retryable,
    UnprocessedError,
    retryable_delay,
)
from harness.datastore.catalog import Catalog
from harness.datastore.sync import Datastore, SyncConfig
from harness.datastore.variant import Variant
from harness.load.drivers.model import summarize
from tests.conftest import FAST_LOCK, SleepLog

TABLE = "harness-test"


def backend(aws, layout="swamp", clock=None, **knobs) -> DynamoBackend:
    """A backend built with the variant of ``knobs`` (``Variant``'s fields: fenced, bookkeeping, ...)."""
    be = DynamoBackend(aws[0], TABLE, layout, clock=clock, variant=Variant(**knobs))
    be.ensure()
    return be


def two_phase(be, namespace="w1", **kw) -> Datastore:
    cfg = SyncConfig(namespace=namespace, lock=FAST_LOCK, heartbeat=False, sync="two-phase", global_poll_s=0.05,
                     **kw)
    return Datastore(be, Catalog(), cfg, holder="w")


def gsi_pks(ddb) -> dict[str, set[str]]:
    """Every index entry's GSI key, by path."""
    out: dict[str, set[str]] = {}
    for item in ddb.scan(TableName=TABLE)["Items"]:
        if "gsi1pk" in item and "relPath" in item:
            out.setdefault(item["relPath"]["S"], set()).add(item["gsi1pk"]["S"])
    return out


def test_swamp_partition_is_gsiFilePartition_blind_to_the_namespace():
    assert swamp_partition("data/t/m0/n/1/raw") == "t/m0"
    assert swamp_partition("w1/data/t/m0/n/1/raw") == "_system/w1"
    assert swamp_partition("outputs/t/m0/r.yaml") == "_system/outputs"
    assert gsi_keys("swamp", "w1/t/m0") == ["_system/w1"] and gsi_keys("per-model", "w1/t/m0") == ["w1/t/m0"]


@pytest.mark.parametrize("fencing", [True, False])
def test_a_namespaced_run_lands_on_one_gsi_key_and_is_read_back(aws, fencing):
    ddb, _ = aws
    be = backend(aws, fenced=fencing)
    store = two_phase(be)
    for m in ("m0", "m1", "m0"):
        store.sync_run(m, "get_uptime", 100, [])
    keys = gsi_pks(ddb)
    assert keys and set().union(*keys.values()) == {"FILE#_system/w1"}  # both models, one key
    # another worker of the namespace reads both models back through the shared key (only its own items)
    other = two_phase(be)
    other.pull(Work())
    assert {r for r in other.local if "/data/" in r} == {r for r in store.local if "/data/" in r}
    scoped = two_phase(be)
    scoped.pull(Work(), partitions=["w1/system/m1"])  # a scoped pull: that model's files, none of m0's
    data = {r for r in scoped.local if "/data/" in r}
    assert data and all("/m1/" in r for r in data)


def test_without_a_namespace_a_model_spreads_over_swamps_three_keys(aws):
    ddb, _ = aws
    be = backend(aws)
    two_phase(be, namespace=None, lock_scope="datastore").sync_run("m0", "get_uptime", 100, [])
    got = set().union(*gsi_pks(ddb).values())
    assert got == {"FILE#system/m0", "FILE#_system/models", "FILE#_system/outputs"}


def registry(ddb) -> set[str]:
    item = ddb.get_item(TableName=TABLE, Key=REGISTRY).get("Item") or {}
    return set((item.get("partitions") or {}).get("SS", []))


def test_swamp_registry_adds_race_one_update_per_file_of_a_wave_with_file_values(aws):
    ddb, _ = aws
    be = backend(aws, "swamp", registry_adds="swamp", bookkeeping="swamp")
    store = two_phase(be, namespace=None, lock_scope="datastore")
    adds = []
    sent: list[dict] = []
    ddb.meta.events.register("before-parameter-build.dynamodb.UpdateItem",
                             lambda params, **_: sent.append(params) if params["Key"] == REGISTRY
                             and params["UpdateExpression"] == "ADD #p :p" else None)
    for _ in range(2):
        sent.clear()
        store.sync_run("m0", "get_uptime", 100, [])
        adds.append(len(sent))
        assert all(len(p["ExpressionAttributeValues"][":p"]["SS"]) == 1 for p in sent)
    # registerPartition marks a partition seen only after its ADD returns, and the files of a push go 10 at a
    # time: every file of the first wave sends one. The first run: definition, raw, metadata, latest, output (5);
    # then raw, metadata, latest, output (4), three of them for the one partition of the model's data
    assert registry(ddb) == {"FILE#system/m0", "FILE#_system/models", "FILE#_system/outputs"}
    assert adds == [5, 4]


def test_the_race_sends_an_add_per_file_of_the_first_wave_of_a_partition_only():
    assert racing_adds(["a"] * 4) == [True] * 4
    assert racing_adds(["a", "b"] * 7) == [True] * 10 + [False] * 4  # wave two finds both registered
    assert racing_adds(["a"] * 3 + ["b"] * 9) == [True] * 10 + [False, False]  # b registered in wave one
    assert racing_adds(["a", "a", "b"], concurrency=1) == [True, False, True]  # one at a time: no race


def test_a_namespaced_swamp_registry_holds_one_entry_per_namespace(aws):
    ddb, _ = aws
    be = backend(aws, "swamp", registry_adds="swamp", bookkeeping="swamp")
    for ns in ("w1", "w2"):
        store = two_phase(be, namespace=ns)
        for m in ("m0", "m1", "m2"):
            store.sync_run(m, "get_uptime", 100, [])
    assert registry(ddb) == {"FILE#_system/w1", "FILE#_system/w2"}  # not one per model


def test_an_update_of_a_grown_item_is_billed_by_the_items_size(aws):
    ddb, _ = aws
    be = backend(aws, "per-model", registry_adds="swamp")
    big = {"SS": [f"FILE#t/{'x' * 60}{i:04d}" for i in range(100)]}  # ~6.6 KB of values
    ddb.update_item(TableName=TABLE, Key=REGISTRY, UpdateExpression="ADD #p :p",
                    ExpressionAttributeNames={"#p": "partitions"},
                    ExpressionAttributeValues={":p": big})
    units = []
    for i in range(2):
        w = Work()
        with recording(w):
            be.client.update_item(TableName=TABLE, Key=REGISTRY, UpdateExpression="ADD #p :p",
                                  ExpressionAttributeNames={"#p": "partitions"},
                                  ExpressionAttributeValues={":p": {"SS": [f"FILE#t/new{i}"]}},
                                  ReturnValues="ALL_NEW")
        units.append(w.write_units)
    assert units[0] >= 7 and units[1] >= 7  # ceil(~6.7 KB / 1 KB), not the request's 1 unit


def throttle(code="ProvisionedThroughputExceededException"):
    return ClientError({"Error": {"Code": code, "Message": "slow down"}}, "PutItem")


def test_retryable_sleeps_500ms_times_3_to_the_n_within_25_percent_then_gives_up():
    clock = SleepLog()
    calls = []

    def op():
        calls.append(clock.now())
        raise throttle()

    with pytest.raises(ClientError):
        Retryable(clock, random.Random(1)).call(op)
    assert len(calls) == 3 and len(clock.sleeps) == 2
    for n, s in enumerate(clock.sleeps):
        assert 0.5 * 3 ** n * 0.75 <= s <= 0.5 * 3 ** n * 1.25
    assert retryable_delay(1, random.Random(1)) != retryable_delay(1, random.Random(2))  # jittered


def test_retryable_does_not_retry_a_condition_failure():
    clock = SleepLog()
    calls = []

    def op():
        calls.append(1)
        raise throttle("ConditionalCheckFailedException")

    with pytest.raises(ClientError):
        Retryable(clock).call(op)
    assert calls == [1] and clock.sleeps == []


class Unprocessing:
    """A client whose BatchWriteItem processes nothing (the rest of it is the real one)."""

    def __init__(self, client, times: int) -> None:
        self.client, self.times, self.sent = client, times, 0

    def batch_write_item(self, RequestItems):
        self.sent += 1
        if self.sent <= self.times:
            return {"UnprocessedItems": RequestItems}
        return self.client.batch_write_item(RequestItems=RequestItems)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_swamp_resends_unprocessed_items_on_its_schedule_and_gives_up_after_8_tries(aws):
    clock = SleepLog()
    be = backend(aws, "per-model", clock=clock, retries="swamp")
    be.client._client = Unprocessing(be.client._client, 3)
    item = [{"PutRequest": {"Item": {"pk": {"S": "FILE#x"}, "sk": {"S": "CHUNK#v1#0"}}}}]
    be.batch_write(item, Work())
    assert clock.sleeps == [1.0, 2.0, 4.0]  # min(500 ms x 2^n, 5 s), no jitter
    clock.sleeps.clear()
    be.client._client = Unprocessing(be.client._client.client, 99)
    with pytest.raises(UnprocessedError):
        be.batch_write(item, Work())
    assert be.client._client.sent == UNPROCESSED_TRIES and clock.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]


def test_the_harness_schedule_is_jittered_and_unbounded(aws):
    clock = SleepLog()
    be = backend(aws, "per-model", clock=clock)
    be.client = Unprocessing(be.client, 10)
    be.batch_write([{"PutRequest": {"Item": {"pk": {"S": "FILE#x"}, "sk": {"S": "CHUNK#v1#0"}}}}], Work())
    assert len(clock.sleeps) == 10 and all(s <= min(5.0, 0.05 * 2 ** (n + 1)) for n, s in enumerate(clock.sleeps))


def test_summarize_reports_the_registry_size(aws):
    be = backend(aws, "swamp", registry_adds="swamp", bookkeeping="swamp")
    steps: list = []
    two_phase(be).sync_run("m0", "get_uptime", 100, steps)
    assert summarize(steps)["registry_bytes"] > 0


def commit_writes(store, runs: int) -> list[int]:
    """Requests of each run's commit step (content, index, registry: all under the global lock on DynamoDB)."""
    out = []
    for _ in range(runs):
        steps: list = []
        store.sync_run("m0", "get_uptime", 100, steps)
        out.append(sum(next(s for s in steps if s.name == "commit").work.requests.values()))
    return out


def test_swamps_push_rewrites_every_version_of_the_data_name(aws):
    be = backend(aws, "per-model")
    changed = commit_writes(two_phase(be, namespace="w1", upload_concurrency=10), 5)
    swamp = commit_writes(two_phase(be, namespace="w2", upload_concurrency=10, push_scope="swamp"), 5)
    assert changed[1:] == [changed[1]] * 4  # the changed files only: the same writes every push
    # every earlier version's raw and metadata.yaml again: one content batch each (10 at a time), so 2 more a push
    steps = [b - a for a, b in zip(swamp[1:], swamp[2:], strict=False)]
    assert steps == [2, 2, 2] and swamp[-1] == changed[-1] + 2 * 4


def test_a_rewrite_writes_what_the_worker_holds_and_readers_see_the_same_content(aws):
    ddb, _ = aws
    be = backend(aws, "per-model")
    store = two_phase(be, push_scope="swamp")
    for _ in range(3):
        store.sync_run("m0", "get_uptime", 100, [])
    snap = be.index_snapshot(Work())
    assert all(e["content_digest"] == e["digest"] for e in snap["entries"])
    raws = [e for e in snap["entries"] if e["path"].endswith("/1/raw")]
    assert raws and raws[0]["version"] == 3  # version 1's raw written by each of the three pushes


def test_swamps_dynamodb_writes_the_export_inside_the_commit_under_the_global_lock(aws):
    ddb, _ = aws
    be = backend(aws, "per-model")
    store = two_phase(be, export_at="swamp")
    held_at_export: list[bool] = []
    key = store.lock_key()

    def on_put(params, **_):
        if params["Item"]["sk"]["S"] == "BLOB":
            from harness.core.clock import now_ms
            held_at_export.append(be.lock_store.inspect(key, now_ms(store.clock), Work()) is not None)

    ddb.meta.events.register("before-parameter-build.dynamodb.PutItem", on_put)
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)
    names = [s.name for s in steps]
    assert names[names.index("commit"):] == ["commit", "export", "release", "collect", "release"]
    assert held_at_export == [True]
    after: list = []
    held_at_export.clear()
    two_phase(be, namespace="w2").sync_run("m0", "get_uptime", 100, after)
    assert [s.name for s in after][-4:] == ["release", "collect", "export", "release"] and held_at_export == [False]


def test_swamps_retries_wrap_the_data_path_and_leave_lock_items_alone(aws):
    clock = SleepLog()
    be = backend(aws, "per-model", clock=clock, retries="swamp")
    sent: list[str] = []

    def throttle_all(params, **_):
        sent.append(params["Key"]["pk"]["S"])
        raise throttle()

    aws[0].meta.events.register("before-parameter-build.dynamodb.GetItem", throttle_all)
    with pytest.raises(ClientError):
        be.client.get_item(TableName=TABLE, Key={"pk": {"S": "FILE#x"}, "sk": {"S": "META"}})
    assert sent == ["FILE#x"] * 3 and len(clock.sleeps) == 2
    sent.clear()
    with pytest.raises(ClientError):
        be.client.get_item(TableName=TABLE, Key={"pk": {"S": "LOCK#.datastore.lock"}, "sk": {"S": "LOCK"}})
    assert sent == ["LOCK#.datastore.lock"] and len(clock.sleeps) == 2


def files_pushed_by_run(store, runs: int, methods: tuple[str, ...]) -> list[int]:
    """Files each run of one model pushed, its methods cycling as a worker's iterations do."""
    out = []
    for i in range(runs):
        steps: list = []
        store.sync_run("m0", methods[i % len(methods)], 100, steps)
        out.append(summarize(steps)["files_pushed"])
    return out


def test_swamps_data_name_is_one_per_model_so_every_run_grows_the_push(aws):
    """@webframp/system's methods all write the data name "current" (writeResource(spec, "current")), so
    swamp's push re-sends 2 more files with every run of a model whatever its method: the twin must name data
    as swamp does (data_name = "swamp"), or its push grows a quarter as fast with four methods cycling (the
    0.4 files a run measured on the twin against swamp's 2)."""
    be = backend(aws, "per-model")
    methods = ("get_uptime", "get_memory", "get_load", "get_disk")
    per_method = files_pushed_by_run(two_phase(be, namespace="w1", upload_concurrency=10, push_scope="swamp"), 9,
                                     methods)
    swamp = files_pushed_by_run(two_phase(be, namespace="w2", upload_concurrency=10, push_scope="swamp",
                                          data_name="swamp"), 9, methods)
    assert [b - a for a, b in zip(swamp[1:], swamp[2:], strict=False)] == [2] * 7
    assert per_method[8] - per_method[4] == 2  # one more version of get_uptime's data name in four runs
    from harness.config import scenario as scenarios
    for name in ("two-phase-namespaced", "two-phase-shared-lock", "two-phase-disposable", "two-phase-pruning"):
        assert scenarios.load(name).workload.data_name == "swamp", name
