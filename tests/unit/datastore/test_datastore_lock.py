"""Lock, fencing and bad-input behaviour on both backends."""

from __future__ import annotations

import pytest

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.dynamodb.items import claim_id
from harness.datastore.errors import ConfigError, FencedError, LockLostError, LockTimeoutError
from harness.datastore.lock import Lock, LockConfig
from tests.conftest import make_backend, make_store, step

LOCK_BACKENDS = ["per-model", "sharded"]


@pytest.mark.parametrize("kind", LOCK_BACKENDS)
def test_waiter_gives_up_with_swamps_exact_message(aws, clock, kind):
    be = make_backend(kind, aws, clock=clock)
    cfg = LockConfig(ttl_s=30, wait_s=60, retry_s=1, retry_cap_s=2)
    # the holder stays live for the whole wait (as if heartbeating)
    holder = Lock(be.lock_store, "dynamodb://bench-ddb-gsi-perf", clock, LockConfig(ttl_s=120))
    holder.acquire(Work())
    waiter = Lock(be.lock_store, "dynamodb://bench-ddb-gsi-perf", clock, cfg)
    w = Work()
    with pytest.raises(LockTimeoutError) as err:
        waiter.acquire(w)
    assert str(err.value) == "Lock timeout after 60000ms on key: dynamodb://bench-ddb-gsi-perf"
    # retried every ~1-2 s (jittered, capped at 2 s) for 60 s: between 30 and 120 attempts, one request each
    assert 30 <= w.lock_attempts <= 121
    assert w.total_requests == w.lock_attempts


def test_timeout_message_follows_configured_wait(aws, clock):
    be = make_backend("per-model", aws, clock=clock)
    cfg = LockConfig(ttl_s=30, wait_s=2.5, retry_s=0.5, retry_cap_s=1)
    Lock(be.lock_store, "k", clock, cfg).acquire(Work())
    with pytest.raises(LockTimeoutError, match=r"^Lock timeout after 2500ms on key: k$"):
        Lock(be.lock_store, "k", clock, cfg).acquire(Work())


@pytest.mark.parametrize("kind", LOCK_BACKENDS)
def test_expired_lock_is_taken_over_and_fence_grows(aws, clock, kind):
    be = make_backend(kind, aws, clock=clock)
    cfg = LockConfig(ttl_s=3, wait_s=1, retry_s=0.1)
    a = Lock(be.lock_store, ".locks/ns.lock", clock, cfg).acquire(Work())
    clock.advance(3.5)
    b = Lock(be.lock_store, ".locks/ns.lock", clock, cfg).acquire(Work())
    assert b.fence > a.fence and b.nonce != a.nonce
    # a's heartbeat and release are refused now: both are conditioned on the nonce
    lock_a = Lock(be.lock_store, ".locks/ns.lock", clock, cfg)
    with pytest.raises(LockLostError):
        lock_a.heartbeat(a, Work())
    assert not lock_a.release(a, Work())
    assert Lock(be.lock_store, ".locks/ns.lock", clock, cfg).release(b, Work())
    c = Lock(be.lock_store, ".locks/ns.lock", clock, cfg).acquire(Work())
    assert c.fence > b.fence and c.wait_ms == 0


@pytest.mark.parametrize("kind", LOCK_BACKENDS)
def test_heartbeat_keeps_a_live_holder(aws, clock, kind):
    be = make_backend(kind, aws, clock=clock)
    cfg = LockConfig(ttl_s=3, wait_s=0.5, retry_s=0.1)
    lock = Lock(be.lock_store, "k", clock, cfg)
    grant = lock.acquire(Work())
    for _ in range(5):  # 5 x 2 s > TTL, but renewed every TTL/3-ish
        clock.advance(2)
        w = Work()
        lock.heartbeat(grant, w)
        # one conditional write (S3: on the ETag of the holder's last write)
        assert dict(w.requests) == ({"UpdateItem": 1} if kind == "per-model" else {"PutObject": 1})
    with pytest.raises(LockTimeoutError):
        Lock(be.lock_store, "k", clock, cfg).acquire(Work())


class _ReleasingClock(FakeClock):
    """Time moves when someone sleeps; once it reaches ``at``, ``then`` runs (once)."""

    def __init__(self, at: float, then) -> None:
        super().__init__()
        self.at, self.then = self.now() + at, then

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.then and self.now() >= self.at:
            then, self.then = self.then, None
            then()


def _two_workers(aws, namespaces, hold_s=0.6):
    """A holds its lock for ``hold_s`` (of the clock's time) while B runs one sync: B's lock wait and attempts."""
    be = make_backend("per-model", aws)
    cfg = LockConfig(ttl_s=5, wait_s=5, retry_s=0.05, retry_cap_s=0.1)
    held = []
    clock = _ReleasingClock(hold_s, lambda: held.pop().__exit__(None, None, None))
    a = make_store(be, namespaces[0], lock=cfg, clock=clock, holder="a")
    b = make_store(be, namespaces[1], lock=cfg, clock=clock, holder="b")
    held.append(a.locked([]))
    held[0].__enter__()
    steps_b: list = []
    start = clock.now()
    b.sync_run("mb", "get_uptime", 100, steps_b)  # only the lock's backoff sleeps move the clock
    return step(steps_b, "lock").work.lock_attempts, clock.now() - start


def test_shared_datastore_lock_serializes_two_workers(aws):
    # no namespace: both use the one datastore lock dynamodb://<table>; B retries until A lets go at 0.6 s
    attempts, waited = _two_workers(aws, (None, None))
    assert attempts > 1 and waited >= 0.6


def test_namespaced_locks_do_not_block_each_other(aws):
    attempts, waited = _two_workers(aws, ("wa", "wb"))
    assert attempts == 1 and waited == 0


@pytest.mark.parametrize("lock_scope,namespace,expected", [("datastore", "w1", "dynamodb://harness-test"),
                                                           ("namespace", "w1", ".locks/w1.lock"),
                                                           ("namespace", None, "dynamodb://harness-test")])
def test_lock_keys_by_scope(aws, lock_scope, namespace, expected):
    store = make_store(make_backend("per-model", aws), namespace, lock_scope=lock_scope)
    assert store.lock_key() == expected
    steps: list = []
    store.sync_run("m1", "get_uptime", 100, steps)  # and it is the key the store really locks
    assert store.backend.lock_store.state(expected, Work()).seq == 1


def test_paused_holder_is_fenced_and_leaves_no_index_entry(aws, clock):
    be = make_backend("per-model", aws, clock=clock)
    a = make_store(be, "w1", clock=clock, holder="a")
    b = make_store(be, "w1", clock=clock, holder="b")
    lock = Lock(be.lock_store, a.lock_key(), clock, a.cfg.lock)
    grant = lock.acquire(Work())
    a.run_method_locally("system", "paused", "get_uptime", 100, Work())
    a.prepare(Work())
    clock.advance(a.cfg.lock.ttl_s + 1)  # a "GC pause" past the TTL, no heartbeat
    steps = []
    b.sync_run("other", "get_uptime", 100, steps)  # b takes the expired lock and commits
    paused = [m.rel_path for m in a.staged.values()]
    w = Work()
    with pytest.raises(FencedError):
        a.commit(grant, w)
    assert w.requests["UpdateItem"] >= 2  # its registry write went through; its seal was refused
    assert be.lookup(paused, Work()) == {}
    assert len(be.lookup([m.rel_path for m in b.local.values()], Work())) == 5
    assert items_of_commit(be, claim_id(grant.nonce)) == []  # it undid its own writes ...
    assert claim_id(grant.nonce) not in be.lock_store.state(a.lock_key(), Work()).pending  # ... and dropped its claim


def items_of_commit(be, cid: str) -> list[str]:
    """Every index item a commit id wrote that is still in the table (a Scan)."""
    out, kwargs = [], {"TableName": be.table}
    while True:
        page = be.client.scan(**kwargs)
        out += [i["relPath"]["S"] for i in page["Items"] if i.get("cid", {}).get("S") == cid]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_lock_lost_mid_commit_leaves_nothing_and_undoes_its_writes(aws, clock):
    """The lock is taken over while the entries are going out: none of them is visible, and the commit
    undoes its own writes (the previous versions are what readers see), leaving no pending claim behind."""
    be = make_backend("per-model", aws, clock=clock)
    lock = Lock(be.lock_store, ".locks/w1.lock", clock, LockConfig(ttl_s=3, wait_s=1, retry_s=0.1))
    grant = lock.acquire(Work())
    old = [FileMeta(f"w1/data/system/m/x/{i}/raw", 1, "old", 1, 1) for i in range(60)]
    be.commit("w1", old, grant, Work())
    lock.release(grant, Work())
    grant = lock.acquire(Work())
    new = [FileMeta(m.rel_path, 2, "new", 2, 2) for m in old]
    batches = []

    def steal_after_first_batch(params, **_):
        batches.append(len(params["RequestItems"][be.table]))
        if len(batches) == 1:  # a batch went out; the holder pauses past its TTL, another takes the lock
            clock.advance(4)
            Lock(be.lock_store, ".locks/w1.lock", clock, lock.cfg).acquire(Work())

    be.client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", steal_after_first_batch)
    with pytest.raises(FencedError):
        be.commit("w1", new, grant, Work())
    be.client.meta.events.unregister("before-parameter-build.dynamodb.BatchWriteItem", steal_after_first_batch)
    assert batches[:3] == [25, 25, 10]  # every entry went out (the seal is what the takeover refused)
    seen = be.lookup([m.rel_path for m in old], Work())
    assert {m.digest for m in seen.values()} == {"old"} and len(seen) == 60
    state = be.lock_store.state(".locks/w1.lock", Work())
    assert state.seq == 1 and claim_id(grant.nonce) not in state.pending  # never sealed; the claim dropped
    assert items_of_commit(be, claim_id(grant.nonce)) == []  # the items themselves are gone again


@pytest.mark.parametrize("kind", ["sharded", "monolith"])
def test_s3_commit_by_a_stale_holder_is_rejected(aws, clock, kind):
    be = make_backend(kind, aws, clock=clock)
    a = make_store(be, "w1", clock=clock, holder="a")
    b = make_store(be, "w1", clock=clock, holder="b")
    grant = Lock(be.lock_store, a.lock_key(), clock, a.cfg.lock).acquire(Work())
    a.run_method_locally("system", "paused", "get_uptime", 100, Work())
    clock.advance(a.cfg.lock.ttl_s + 1)
    b.sync_run("other", "get_uptime", 100, [])
    with pytest.raises(FencedError):
        a.commit(grant, Work())
    fresh = make_store(be, "w1", clock=clock, holder="c")
    fresh.pull(Work())
    assert not any("paused" in r for r in fresh.local) and any("other" in r for r in fresh.local)


# ---- bad input: one line each ---------------------------------------------------------


def _one_line(err: Exception) -> str:
    msg = str(err)
    assert "\n" not in msg and len(msg) < 200
    return msg


def test_unknown_gsi_layout(aws):
    from harness.datastore.backends.dynamodb import DynamoBackend

    with pytest.raises(ConfigError) as e:
        DynamoBackend(aws[0], "tbl", "hash-everything")
    assert "unknown GSI layout 'hash-everything'" in _one_line(e.value)


def test_unknown_index_mode_and_kind(aws):
    from harness.datastore.backends.s3 import S3Backend
    from harness.datastore.sync import SyncConfig

    with pytest.raises(ConfigError) as e:
        SyncConfig(index_commit="partial")
    assert "unknown index commit mode 'partial'" in _one_line(e.value)
    with pytest.raises(ConfigError) as e:
        S3Backend(aws[1], "bkt", "btree")
    assert "unknown S3 index kind 'btree'" in _one_line(e.value)


def test_table_with_wrong_key_schema_is_refused(aws):
    aws[0].create_table(TableName="someone-elses", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    with pytest.raises(ConfigError) as e:
        make_backend("per-model", aws, table="someone-elses")
    msg = _one_line(e.value)
    assert "someone-elses" in msg and "id (HASH)" in msg and "expected pk (HASH) + sk (RANGE)" in msg


def test_missing_bucket_without_creation(aws):
    from harness.datastore.backends.s3 import S3Backend

    with pytest.raises(ConfigError) as e:
        S3Backend(aws[1], "not-there", create=False).ensure()
    assert "S3 bucket 'not-there' does not exist" in _one_line(e.value)


@pytest.mark.parametrize("key", ["has space", "", "a//b", "semi;colon"])
def test_lock_key_with_illegal_characters(aws, clock, key):
    be = make_backend("per-model", aws, clock=clock)
    with pytest.raises(ConfigError) as e:
        Lock(be.lock_store, key, clock, LockConfig())
    assert "invalid lock key" in _one_line(e.value)


def test_lock_wait_shorter_than_retry_is_refused():
    with pytest.raises(ConfigError, match="shorter than its retry"):
        LockConfig(wait_s=0.5, retry_s=1)
