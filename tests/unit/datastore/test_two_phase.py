"""swamp's two-phase sync (``[datastore] sync = "two-phase"``): each difference from the spec's loop, measured.

Every test runs the real datastore on in-process moto and asserts on what
the store saw (which lock was held when, what was written, which sleeps were
asked for), never on wall-clock rates.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.core.clock import FakeClock, now_ms
from harness.core.work import Work
from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY, SYNC_STATE
from harness.datastore.catalog import Catalog
from harness.datastore.errors import FencedError, LockTimeoutError
from harness.datastore.lock import Lock, LockConfig, backoff_delay
from harness.datastore.sync import MODEL_TYPE, Datastore, SyncConfig
from harness.datastore.variant import Variant
from harness.load.drivers.model import summarize
from tests.conftest import FAST_LOCK, SleepLog, make_backend

# (fenced: what the commit made garbage is collected after the global lock's release, step "collect")
TWO_PHASE_ORDER = ["lock", "pull", "method", "push", "commit_lock", "commit", "release", "collect", "export",
                   "release"]



def two_phase(backend, namespace="w1", *, clock=None, holder="w", lock=FAST_LOCK, **kw) -> Datastore:
    cfg = SyncConfig(namespace=namespace, lock=lock, heartbeat=False, sync="two-phase", **kw)
    return Datastore(backend, Catalog(), cfg, clock=clock, holder=holder)


def held(store: Datastore, key: str) -> bool:
    return store.backend.lock_store.inspect(key, now_ms(store.clock), Work()) is not None


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_the_model_lock_covers_pull_method_upload_and_the_global_lock_only_the_commit(aws, kind):
    be = make_backend(kind, aws)
    store = two_phase(be)
    model_key, global_key = store.paths.model_lock(MODEL_TYPE, "m0"), store.lock_key()
    assert model_key == f"w1/data/{MODEL_TYPE}/m0/.lock" and global_key == ".locks/w1.lock"
    seen: list[tuple[str, bool, bool]] = []

    def spy(name, fn):
        def wrapped(*a, **k):
            seen.append((name, held(store, model_key), held(store, global_key)))
            return fn(*a, **k)
        setattr(be, name, wrapped)

    for name in ("pull", "put_content", "commit", "put_blob"):
        spy(name, getattr(be, name))
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)
    assert [s.name for s in steps] == TWO_PHASE_ORDER
    # (step, model lock held, global lock held) at each call into the backend: S3 uploads in the push's prepare,
    # DynamoDB writes the content at the commit, under the global lock (swamp's preparePush writes nothing there)
    upload = ("put_content", True, kind == "per-model")
    assert seen == [("pull", True, False), upload, ("commit", True, True), ("put_blob", True, False)]
    assert not held(store, model_key) and not held(store, global_key)  # both given back


def test_one_lock_is_the_seeds_loop_unchanged(aws):
    be = make_backend("per-model", aws)
    store = Datastore(be, Catalog(), SyncConfig(namespace="w1", lock=FAST_LOCK, heartbeat=False))
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)
    assert [s.name for s in steps] == ["lock", "pull", "method", "push", "commit", "export", "release", "collect"]


def test_a_model_run_polls_the_global_lock_every_second_and_gives_up_after_twice_the_ttl(aws):
    clock = SleepLog()
    be = make_backend("per-model", aws, clock=clock)
    store = two_phase(be, clock=clock)
    # a structural command holds the global lock for longer than the model run waits (and never lets go)
    Lock(be.lock_store, store.lock_key(), clock, LockConfig(ttl_s=100, wait_s=1), "structural").acquire(Work())
    t0 = clock.now()
    with pytest.raises(LockTimeoutError):
        store.sync_run("m0", "get_uptime", 100, [])
    # every sleep is one poll interval (1 s), and it gave up after 2 x its TTL (3 s): six polls
    assert clock.sleeps == [1.0] * 6 and clock.now() - t0 == pytest.approx(6.0)
    assert not held(store, store.paths.model_lock(MODEL_TYPE, "m0"))  # it never took the model lock


def test_a_model_run_waits_out_a_global_holder_then_runs(aws):
    clock = SleepLog()
    be = make_backend("per-model", aws, clock=clock)
    store = two_phase(be, clock=clock, global_poll_s=0.5)
    Lock(be.lock_store, store.lock_key(), clock, LockConfig(ttl_s=2, wait_s=1), "structural").acquire(Work())
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)
    polls = [s for s in clock.sleeps if s == 0.5]
    assert len(polls) == 5  # the holder's 2 s lease ran out at 2 s: the fifth 0.5 s poll found it free
    assert [s.name for s in steps] == TWO_PHASE_ORDER


@pytest.mark.parametrize(("backoff", "bounds"), [
    ("swamp-dynamodb", lambda n: (0.5 * min(1.5 ** min(n, 4), 2), min(1.5 ** min(n, 4), 2))),
    ("s3-doubling", lambda n: (1.0, min(8.0, 2 ** n))),
    ("harness", lambda n: (0.5 * min(2, 2 ** n), min(2, 2 ** n))),
])
def test_a_refused_acquire_sleeps_on_the_providers_schedule(aws, backoff, bounds):
    clock = SleepLog()
    be = make_backend("per-model", aws, clock=clock)
    cfg = LockConfig(ttl_s=600, wait_s=40, retry_s=1.0, retry_cap_s=2.0, backoff=backoff)
    Lock(be.lock_store, "k.lock", clock, cfg, "holder").acquire(Work())
    with pytest.raises(LockTimeoutError):
        Lock(be.lock_store, "k.lock", clock, cfg, "waiter", random.Random(7)).acquire(Work())
    waits = clock.sleeps[:-1]  # the last one is cut to the deadline
    assert len(waits) >= 6
    for n, s in enumerate(waits):
        lo, hi = bounds(n)
        assert lo - 1e-9 <= s <= hi + 1e-9, (n, s)
    # and the draws spread over the range, not one fixed value (swamp's jitter)
    assert len({round(s, 6) for s in waits}) == len(waits)


def test_backoff_schedules_reach_their_caps():
    rng = random.Random(1)
    ddb = LockConfig(retry_s=1.0, backoff="swamp-dynamodb")
    assert max(backoff_delay(10, ddb, rng) for _ in range(200)) <= 2.0  # min(1 s x 1.5^n, 2 s) x U(0.5, 1)
    stored = LockConfig(retry_s=1.0, backoff="s3-doubling")
    assert max(backoff_delay(10, stored, rng) for _ in range(200)) > 6.0  # a stored copy's: up to 8 s


def test_swamps_s3_lock_retries_at_its_fixed_interval(aws):
    """s3_lock.ts (0e41e5f): every refused acquire sleeps retryIntervalMs, 1 s, whatever the attempt."""
    clock = SleepLog()
    be = make_backend("sharded", aws, clock=clock)
    cfg = LockConfig(ttl_s=600, wait_s=10, retry_s=1.0, backoff="swamp-s3")
    Lock(be.lock_store, "k.lock", clock, cfg, "holder").acquire(Work())
    with pytest.raises(LockTimeoutError):
        Lock(be.lock_store, "k.lock", clock, cfg, "waiter", random.Random(7)).acquire(Work())
    assert clock.sleeps[:-1] == [1.0] * 9 and clock.sleeps[-1] <= 1.0


class InFlight:
    """Counts how many calls of a wrapped function run at once (each holds on for a moment).

    With ``gate``, calls wait (at most ``gate_timeout_s``) until that many are inside at once, then all go: on
    a busy machine a pool's threads may start too far apart to overlap in any fixed hold.
    """

    def __init__(self, fn, hold_s=0.03, gate=0, gate_timeout_s=10.0) -> None:
        self.fn, self.hold_s, self.now, self.most, self.calls = fn, hold_s, 0, 0, 0
        self.gate, self.gate_timeout_s, self._open = gate, gate_timeout_s, threading.Event()
        self._g = threading.Lock()

    def __call__(self, *a, **k):
        with self._g:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)
            if self.now >= self.gate:
                self._open.set()
        try:
            self._open.wait(self.gate_timeout_s)
            time.sleep(self.hold_s)
            return self.fn(*a, **k)
        finally:
            with self._g:
                self.now -= 1


def test_s3_transfers_run_at_the_configured_concurrency(aws):
    be = make_backend("sharded", aws)
    be._pool = ThreadPoolExecutor(max_workers=64)  # what the factory sizes for these settings (pool_size)
    store = two_phase(be, upload_concurrency=25, download_concurrency=50)
    for i in range(60):
        store.stage(f"w1/data/swamp/harness-model/m0/f{i}", b"x" * 10)
    puts = InFlight(be.objects.put)
    be.objects.put = puts
    store.prepare(Work())
    assert puts.calls == 60 and 2 <= puts.most <= 25  # never more than 25 at once; more than one
    be.objects.put = puts.fn
    gets = InFlight(be.objects.get, hold_s=0.01, gate=50)  # the first 50 wait for each other
    be.objects.get = gets
    be.get_contents(list(store.staged.values()), Work(), concurrency=50)
    assert gets.calls == 60 and gets.most == 50  # past the uploads' 25, never past 50


def test_one_at_a_time_is_the_default(aws):
    be = make_backend("sharded", aws)
    store = two_phase(be)
    for i in range(10):
        store.stage(f"w1/data/swamp/harness-model/m0/f{i}", b"x")
    puts = InFlight(be.objects.put, hold_s=0.005)
    be.objects.put = puts
    store.prepare(Work())
    assert puts.calls == 10 and puts.most == 1


def _registry(ddb, table="harness-test") -> set[str]:
    item = ddb.get_item(TableName=table, Key=REGISTRY, ConsistentRead=True).get("Item") or {}
    return set((item.get("partitions") or {}).get("SS", []))


def test_swamp_bookkeeping_writes_the_global_item_every_push_and_a_registry_that_never_shrinks(aws):
    ddb, _ = aws
    be = make_backend("per-model", aws, variant=Variant(bookkeeping="swamp"))
    store = two_phase(be)
    sizes, registries = [], []
    for i in range(4):
        steps: list = []
        store.sync_run(f"m{i}", "get_uptime", 100, steps)
        sizes.append(summarize(steps)["registry_bytes"])
        registries.append(_registry(ddb))
    seq = ddb.get_item(TableName="harness-test", Key={"pk": {"S": SYNC_STATE}, "sk": {"S": "SEQ"}})["Item"]
    assert int(seq["seq"]["N"]) == 4  # one bump per push
    assert [len(r) for r in registries] == [1, 2, 3, 4] and sizes == sorted(sizes) and sizes[0] > 0
    steps: list = []
    store.sync_run("m0", "get_uptime", 100, steps)  # no new partition: the ADD is made (swamp's every push), no growth
    assert summarize(steps)["registry_bytes"] == sizes[-1] and len(_registry(ddb)) == 4
    for i in range(4):
        store.delete_model(f"m{i}", [])
    store.prune([])
    assert _registry(ddb) == registries[-1]  # deleted and pruned models stay registered (swamp's ADD only)


def test_harness_bookkeeping_writes_no_global_item(aws):
    ddb, _ = aws
    be = make_backend("per-model", aws)
    two_phase(be).sync_run("m0", "get_uptime", 100, [])
    assert "Item" not in ddb.get_item(TableName="harness-test", Key={"pk": {"S": SYNC_STATE}, "sk": {"S": "SEQ"}})
    assert _registry(ddb) == set()


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_past_the_dirty_path_cap_a_push_reads_the_whole_index(aws, kind):
    be = make_backend(kind, aws)
    two_phase(be, holder="other").sync_run("m9", "get_uptime", 100, [])  # an index to read

    def push_reads(cap: int) -> int:
        store = two_phase(be, dirty_path_cap=cap)
        steps: list = []
        store.sync_run("m0", "get_uptime", 100, steps)  # five dirty paths on the first run of a model
        return next(s for s in steps if s.name == "push").work.items_read

    assert push_reads(0) == 0 and push_reads(1000) == 0
    assert push_reads(3) >= 5  # the other model's five entries (and our own), read whole


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
@pytest.mark.parametrize("fencing", [True, False])
def test_a_model_holder_that_outlived_its_lock_commits_only_without_fencing(aws, kind, fencing):
    clock = FakeClock()
    be = make_backend(kind, aws, clock=clock, variant=Variant(fenced=fencing))
    late = two_phase(be, clock=clock, holder="late")
    usurper = two_phase(be, clock=clock, holder="usurper")

    def freeze(point: str) -> float:
        clock.advance(FAST_LOCK.ttl_s + 1)  # the late holder's model lock expires while it is frozen ...
        usurper.sync_run("m0", "get_uptime", 100, [])  # ... and another holder of the model commits
        return 0.0

    late.pauses = freeze
    events: list[dict] = []
    late.record = events.append
    if fencing:
        with pytest.raises(FencedError):  # the model's newer fence refuses it (its global grant is a fresh one)
            late.sync_run("m0", "get_uptime", 100, [])
    else:
        late.sync_run("m0", "get_uptime", 100, [])  # swamp's own: nothing stops it
    commit = next(e for e in events if e["type"] == "commit")
    assert commit["ok"] is (not fencing) and commit["model_fence"] == 1  # the stale model grant's commit


def test_the_global_lock_is_the_namespaces_own_on_both_backends_unless_one_item(aws):
    ddb = make_backend("per-model", aws)
    s3 = make_backend("sharded", aws)
    # core's datastoreGlobalLockOptions (06b6147): .locks/<ns>.lock, passed to every backend
    assert two_phase(ddb, "w1").lock_key() == two_phase(s3, "w1").lock_key() == ".locks/w1.lock"
    assert two_phase(ddb, "w2").lock_key() == ".locks/w2.lock"
    # a stored copy's (68a1128): .datastore.lock with the namespace, which DynamoDB's extension drops
    assert two_phase(ddb, "w1", global_lock="one-item").lock_key() == two_phase(
        ddb, "w2", global_lock="one-item").lock_key() == ".datastore.lock"
    assert two_phase(s3, "w1", global_lock="one-item").lock_key() == "w1/.datastore.lock"
    assert two_phase(ddb, "w1", global_lock="per-namespace").lock_key() == "w1/.datastore.lock"
    clock = SleepLog()
    ddb.clock = clock
    # a structural command of namespace w1 holds w1's global lock: w2 commits as if nothing held it ...
    Lock(ddb.lock_store, ".locks/w1.lock", clock, LockConfig(ttl_s=100, wait_s=1), "w1-structural").acquire(Work())
    two_phase(ddb, "w2", clock=clock).sync_run("m0", "get_uptime", 100, [])
    assert clock.sleeps == []
    # ... while with the one-item lock, held the same way, w2 waits and gives up
    Lock(ddb.lock_store, ".datastore.lock", clock, LockConfig(ttl_s=100, wait_s=1), "structural").acquire(Work())
    with pytest.raises(LockTimeoutError):
        two_phase(ddb, "w2", clock=clock, global_lock="one-item").sync_run("m1", "get_uptime", 100, [])
