"""swamp's S3 extension as its code reads (``[datastore] s3_shards``, ``s3_commit``, ``prepare_index_read``,
``s3_command_requests``, ``retries``; docs/swamp-today.md): each behaviour, by the requests it sends.

In-process moto; every request the backend makes is logged by a botocore hook (operation and key), so
the tests assert on the sequence and the count of requests, never on time.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.backends.s3.swamp import S3Swamp, model_shards, swamp_shard
from harness.datastore.backends.swamp_retry import SwampRetry, delay_s
from harness.datastore.catalog import Catalog
from harness.datastore.errors import ConfigError
from harness.datastore.paths import Paths
from harness.datastore.sync import MODEL_TYPE, Datastore, SyncConfig
from harness.datastore.variant import Variant
from tests.conftest import FAST_LOCK, SleepLog, step

SWAMP = S3Swamp(shards="swamp", commit="swamp", prepare_read="all", command_requests="swamp", retries="swamp")
T = MODEL_TYPE


class Calls:
    """Every S3 request the client sends: (operation, key relative to the bucket or None)."""

    def __init__(self, client) -> None:
        self.log: list[tuple[str, str | None]] = []
        client.meta.events.register("before-parameter-build.s3", self._seen)

    def _seen(self, params, model, **_kw) -> None:
        self.log.append((model.name, params.get("Key")))

    def during(self, fn):
        """The requests ``fn`` makes."""
        start = len(self.log)
        fn()
        return self.log[start:]


def variant_of(swamp: S3Swamp, fencing: bool = True) -> Variant:
    """The variant whose S3 behaviours are ``swamp``'s (fenced or not)."""
    return Variant(fenced=fencing, s3_shards=swamp.shards, s3_commit=swamp.commit,
                   prepare_index_read=swamp.prepare_read, s3_command_requests=swamp.command_requests,
                   retries=swamp.retries)


def backend(aws, swamp: S3Swamp, clock=None, *, fencing: bool = True) -> S3Backend:
    be = S3Backend(aws[1], "harness-test", "sharded", clock=clock, variant=variant_of(swamp, fencing))
    be.ensure()
    return be


def two_phase(be, namespace="w1", *, holder="w") -> Datastore:
    cfg = SyncConfig(namespace=namespace, lock=FAST_LOCK, heartbeat=False, sync="two-phase",
                     global_poll_s=0.05)
    return Datastore(be, Catalog(), cfg, clock=FakeClock(), holder=holder)


def ops(calls) -> list[str]:
    return [op for op, _ in calls]


def kind(key: str | None) -> str:
    """What an S3 key is to the index: the head, a shard (by its swamp name), the monolith, or content."""
    if key is None:
        return "-"
    if key.endswith("_index/_meta.json"):
        return "meta"
    if "/_index/" in key or key.startswith("_index/"):
        return key.split("_index/", 1)[1].split(".", 1)[0]
    return "monolith" if key.endswith(".datastore-index.json") else "content"


def test_swamp_puts_a_runs_files_in_its_data_latest_outputs_and_root_shards():
    p = Paths("w1")
    rels = [p.data_raw(T, "m0", "uptime", 3), p.data_metadata(T, "m0", "uptime", 3), p.data_latest(T, "m0", "uptime"),
            p.output_record(T, "m0", "r1"), p.catalog_export(), p.definition(T, "m0")]
    assert [swamp_shard(r, "w1") for r in rels] == [
        f"w1/data--{T}--m0", f"w1/data--{T}--m0", f"w1/data--{T}--m0--uptime", f"w1/outputs--{T}--m0", "w1/_root",
        f"w1/models--{T}--m0"]  # (swamp has no models/ case: the harness keys its definitions per model too)
    # without a namespace: the same keys, unprefixed; the scoped pull's three shards of a model
    assert swamp_shard(Paths().data_latest(T, "m0", "n"), None) == f"data--{T}--m0--n"
    assert model_shards(f"w1/{T}/m0", "w1") == (f"w1/data--{T}--m0", f"w1/outputs--{T}--m0", f"w1/models--{T}--m0")


def test_a_run_under_swamps_shards_writes_one_shard_per_key_and_reads_back_whole(aws):
    be = backend(aws, replace(SWAMP, retries="harness"))
    store = two_phase(be)
    store.sync_run("m0", "get_uptime", 100, [])
    head = be.objects.get_json("w1/_index/_meta.json", Work())[0]
    assert sorted(head["shards"]) == sorted([f"w1/data--{T}--m0", f"w1/data--{T}--m0--uptime",
                                             f"w1/outputs--{T}--m0", f"w1/models--{T}--m0"])
    other = two_phase(be, holder="v")  # another worker's scoped pull of the model sees every file of the run
    other.pull(Work(), partitions=[f"w1/{T}/m0"])
    assert sorted(other.local) == sorted(store.local)


@pytest.mark.parametrize("fencing", [True, False])
def test_swamps_commit_reads_the_meta_then_gets_and_puts_each_dirty_shard_in_turn_under_the_lock(aws, fencing):
    be = backend(aws, replace(SWAMP, prepare_read="none", command_requests="none", retries="harness"),
                 fencing=fencing)
    calls = Calls(aws[1])
    store = two_phase(be)
    store.sync_run("m0", "get_uptime", 100, [])  # the model's shards exist now, and this worker holds them
    under: list = []
    real = be.commit

    def spy(*a, **k):
        under.extend(calls.during(lambda: out.append(real(*a, **k))))
        return out[-1]

    out: list = []
    be.commit = spy
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)
    commit = step(steps, "commit").work
    shards = [f"data--{T}--m0", f"data--{T}--m0--uptime", f"outputs--{T}--m0"]
    pairs = [x for s in shards for x in (("GetObject", s), ("PutObject", s))]
    # GET _meta.json; GET + PUT of each dirty shard, one after another; PUT _meta.json; then the harness's one
    # DeleteObjects of what the swap superseded: unfenced in the commit step (2 x 3 + 3 = 9 requests), fenced
    # after the release, in the step "collect" (no key it deletes can be live: docs/safety.md)
    tail = [] if fencing else [("DeleteObjects", "-")]
    assert [(op, kind(k)) for op, k in under] == [("GetObject", "meta"), *pairs, ("PutObject", "meta"), *tail]
    assert commit.total_requests == len(under) == 9 - fencing
    if fencing:
        assert step(steps, "collect").work.requests == {"DeleteObjects": 1}


def test_the_harness_commit_trusts_what_it_holds_swamps_does_not(aws):
    """The same second run, fenced: the harness's commit writes the 3 shards and swaps the head (its fence
    write made the head current), 4 requests under the lock; swamp's reads the head and the shards again, 8
    (what the swap superseded is deleted after the release)."""
    counts = {}
    for commit in ("harness", "swamp"):
        be = S3Backend(aws[1], f"harness-{commit}", "sharded", variant=Variant(s3_shards="swamp", s3_commit=commit))
        be.ensure()
        store = two_phase(be)
        store.sync_run("m0", "get_uptime", 100, [])
        steps: list = []
        store.sync_run("m0", "get_uptime", 100, steps)
        counts[commit] = step(steps, "commit").work.total_requests
    assert counts == {"harness": 4, "swamp": 8}


def _seed(be, models: int) -> Datastore:
    store = two_phase(be, holder="seed")
    for i in range(models):
        store.sync_run(f"m{i}", "get_uptime", 100, [])
    return store


@pytest.mark.parametrize("mode, shard_gets", [("none", 0), ("all", 3 * 4), ("dirty", 4)])
def test_the_prepare_reads_the_meta_and_every_shard_or_only_the_dirty_ones(aws, mode, shard_gets):
    be = backend(aws, S3Swamp(shards="swamp", prepare_read=mode))
    seed = _seed(be, 3)  # 3 models: 12 shards in the namespace's head
    store = two_phase(be, holder="w")
    store.run_method_locally(T, "m0", "get_uptime", 100, Work())
    calls = Calls(aws[1])
    w = Work()
    got = calls.during(lambda: be.prepare_reads("w1", list(store.dirty), w, lock_key=store.lock_key()))
    metas = [k for op, k in got if kind(k) == "meta"]
    assert len(metas) == (0 if mode == "none" else 1) and len(got) == len(metas) + shard_gets
    assert all(op == "GetObject" for op, _ in got)
    if mode == "dirty":  # the shards of the run's dirty paths: its data, latest, outputs and definition
        assert {kind(k) for _, k in got[1:]} == {f"data--{T}--m0", f"data--{T}--m0--uptime", f"outputs--{T}--m0",
                                                 f"models--{T}--m0"}
    del seed


def test_the_prepare_reads_the_shards_ten_at_a_time(aws):
    """assembleIndexFromShards: 10 shards a batch, each batch waited for; the batches one after another."""
    be = backend(aws, S3Swamp(shards="swamp", prepare_read="all"))
    _seed(be, 3)  # 12 shards: a batch of 10, then one of 2
    batches: list[int] = []
    real = be._batches
    be._batches = lambda fn, items, work, n: (batches.append((len(items), n)), real(fn, items, work, n))[1]
    be.prepare_reads("w1", [], Work(), lock_key="w1/.datastore.lock")
    assert batches == [(12, 10)]


def test_swamps_scoped_pull_makes_the_commands_fixed_requests(aws):
    be = backend(aws, S3Swamp(shards="swamp", command_requests="swamp"))
    calls = Calls(aws[1])
    store = two_phase(be)
    part = f"w1/{T}/m0"
    store.sync_run("m0", "get_uptime", 100, [])
    # a new model's first pull: HeadBucket, the meta, its data shard (404), then the monolith (404): a LIST of
    # the namespace and a PUT of the monolith made of it; its outputs and definition shards (404)
    new = calls.during(lambda: store.pull(Work(), partitions=[f"w1/{T}/m1"]))
    assert [(op, kind(k)) for op, k in new] == [
        ("HeadBucket", "-"), ("GetObject", "meta"), ("GetObject", f"data--{T}--m1"), ("GetObject", "monolith"),
        ("ListObjectsV2", "-"), ("PutObject", "monolith"), ("GetObject", f"outputs--{T}--m1"),
        ("GetObject", f"models--{T}--m1")]
    # the next new model finds the monolith: no LIST
    assert ("ListObjectsV2", None) not in calls.during(lambda: store.pull(Work(), partitions=[f"w1/{T}/m2"]))
    # a model that exists: HeadBucket, the meta and its three shards by GET, though this worker holds them
    again = calls.during(lambda: store.pull(Work(), partitions=[part]))
    assert [(op, kind(k)) for op, k in again] == [
        ("HeadBucket", "-"), ("GetObject", "meta"), ("GetObject", f"data--{T}--m0"),
        ("GetObject", f"outputs--{T}--m0"), ("GetObject", f"models--{T}--m0")]
    # the harness's own pull of the same: the meta, nothing it already holds
    plain = backend(aws, S3Swamp(shards="swamp"))
    view = two_phase(plain, holder="v")
    view.pull(Work(), partitions=[part])
    assert [op for op, _ in calls.during(lambda: view.pull(Work(), partitions=[part]))] == ["GetObject"]


class Flaky:
    """An operation that fails ``n`` times with ``error`` and then answers."""

    def __init__(self, n: int, error: Exception) -> None:
        self.n, self.error, self.calls = n, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.n:
            raise self.error
        return "ok"


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


def test_swamps_sync_layer_retries_three_times_at_500ms_times_3_to_the_n_with_a_quarter_jitter():
    clock = SleepLog()
    retry = SwampRetry(clock, random.Random(7))
    op = Flaky(2, _client_error("SlowDown", 503))
    assert retry(op) == "ok" and op.calls == 3
    assert len(clock.sleeps) == 2 and 0.375 <= clock.sleeps[0] <= 0.625 and 1.125 <= clock.sleeps[1] <= 1.875
    # the jitter spans +-25 % (in whole milliseconds)
    spread = [delay_s(0, random.Random(s)) for s in range(200)]
    assert 0.375 <= min(spread) < 0.4 and 0.6 < max(spread) <= 0.625
    # the third failure is the caller's; a timeout is retried; a refused condition or a 404 never is
    with pytest.raises(ClientError):
        SwampRetry(SleepLog())(Flaky(3, _client_error("InternalError", 500)))
    assert SwampRetry(SleepLog())(Flaky(1, ReadTimeoutError(endpoint_url="http://x"))) == "ok"
    for code, status in (("PreconditionFailed", 412), ("NoSuchKey", 404)):
        op, log = Flaky(1, _client_error(code, status)), SleepLog()
        with pytest.raises(ClientError):
            SwampRetry(log)(op)
        assert op.calls == 1 and log.sleeps == []


def test_swamps_retries_wrap_the_index_and_content_never_the_lock(aws):
    be = backend(aws, S3Swamp(retries="swamp"))
    assert isinstance(be.objects.retry, SwampRetry) and be.lock_store.o.retry is None
    assert backend(aws, S3Swamp()).objects.retry is None


def test_swamps_s3_client_makes_one_attempt(aws):
    from harness.aws.clients import make_clients
    from harness.aws.endpoints import Endpoints

    clients = make_clients(Endpoints("http://127.0.0.1:1", "http://127.0.0.1:2", "other"), attempts={"s3": 1},
                           total_attempts=4)
    assert clients.s3.meta.config.retries["total_max_attempts"] == 1
    assert clients.dynamodb.meta.config.retries["total_max_attempts"] == 4


def test_the_factory_gives_the_s3_client_one_attempt_and_the_backend_swamps_choices_when_the_scenario_says_so():
    from harness.config.factory import Factory
    from tests.support.plans import make_plan

    plan = make_plan("two-phase-namespaced", backend="s3")
    seen: dict = {}

    def fake_make_clients(endpoints, **kw):
        seen.update(kw)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        Factory(plan, make_clients=fake_make_clients).clients()
    assert seen.get("attempts") == {"s3": 1}


def test_bad_choices_say_what_to_choose():
    with pytest.raises(ConfigError, match="unknown S3 prepare_read 'some'.*none, all, dirty"):
        S3Swamp(prepare_read="some")


def test_the_scenario_keys_read_swamps_values_and_refuse_what_cannot_go_together():
    from harness.config.scenario import load, parse
    from harness.core.errors import HarnessError

    ds = load("two-phase-namespaced").datastore
    assert (ds.global_poll_s, ds.s3_shards, ds.s3_commit, ds.prepare_index_read, ds.s3_command_requests,
            ds.retries) == (1.0, "swamp", "swamp", "all", "swamp", "swamp")
    plain = parse({"name": "x", "backend": "s3", "datastore": {"sync": "two-phase"}}).datastore
    assert (plain.s3_shards, plain.s3_commit, plain.prepare_index_read, plain.s3_command_requests,
            plain.retries) == ("model", "harness", "none", "none", "harness")
    with pytest.raises(HarnessError, match="s3_shards.*needs s3_index = \"sharded\""):
        parse({"name": "x", "backend": "s3", "datastore": {"s3_index": "monolith", "s3_shards": "swamp"}})
    with pytest.raises(HarnessError, match="prepare_index_read.*none, all, dirty"):
        parse({"name": "x", "backend": "s3", "datastore": {"prepare_index_read": "most"}})
