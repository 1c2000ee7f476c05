"""Regression tests for issue #11: interleavings under which the datastore lost or exposed data.

Each test reproduces one interleaving deterministically: a FakeClock stands in
for time, and a hook on one holder's boto3 client runs the other holder's steps
*between* two of its requests (as a stop-the-world pause past the TTL would).
Every test here failed on the code before the fix; the symptom each showed is
in its docstring.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from botocore.exceptions import ClientError

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.errors import ConfigError, FencedError, LockLostError, LockTimeoutError
from harness.datastore.lock import Heartbeat, Lock, LockConfig
from tests.conftest import fenced_grant, make_backend, make_store, second_clients, step

LOCK = LockConfig(ttl_s=3, wait_s=1, retry_s=0.1, retry_cap_s=0.2)


def second_backend(kind: str, clock: FakeClock):
    """The same table/bucket through a client of its own (another process, in effect)."""
    return make_backend(kind, second_clients(), clock=clock)


def once_before(client, ops: tuple[str, ...], when: Callable[[dict], bool], action: Callable[[], None]) -> list:
    """Run ``action`` once, just before the first ``ops`` request whose parameters satisfy ``when``."""
    fired: list[str] = []
    service = client.meta.service_model.service_name

    def hook(params: dict, model, **_: object) -> None:
        if not fired and when(params):
            fired.append(model.name)
            action()

    for op in ops:
        client.meta.events.register(f"before-parameter-build.{service}.{op}", hook)
    return fired


def carries(path: str) -> Callable[[dict], bool]:
    """Does a DynamoDB write request carry the index entry of ``path`` (swamp's in place, or a version item)?"""
    return lambda params: f"FILE#{path}" in repr(params) and ("'META'" in repr(params) or "'V#" in repr(params))


def entry(path: str, digest: str, version: int = 1) -> FileMeta:
    return FileMeta(path, 10, digest, 1, version)


def visible(kind: str, clock: FakeClock, namespace: str = "w1") -> dict[str, FileMeta]:
    """What a fresh worker sees after a full pull: the index as readers get it."""
    reader = make_store(second_backend(kind, clock), namespace, clock=clock, holder="reader")
    reader.pull(Work())
    return reader.local


# ---- 1. DynamoDB: a fenced holder's rollback deleted the newer holder's entry -----------------------------


def test_stale_dynamodb_commit_never_clobbers_or_deletes_a_newer_holders_entry(aws, clock):
    """Old code: A's late batch overwrote P, A's rollback then deleted every item stamped with A's fence:
    B's sealed entry P was gone (``visible`` had no P)."""
    a_be = make_backend("per-model", aws, clock=clock)
    b_be = second_backend("per-model", clock)
    key = ".locks/w1.lock"
    p = "w1/data/system/m/x/1/raw"
    grant_a = Lock(a_be.lock_store, key, clock, LOCK).acquire(Work())

    def b_takes_over_and_commits() -> None:
        clock.advance(LOCK.ttl_s + 1)  # A is paused past its TTL
        grant_b = Lock(b_be.lock_store, key, clock, LOCK).acquire(Work())
        b_be.commit("w1", [entry(p, "from-b")], grant_b, Work())

    fired = once_before(a_be.client, ("BatchWriteItem", "PutItem", "UpdateItem"), carries(p),
                        b_takes_over_and_commits)
    with pytest.raises(FencedError):
        a_be.commit("w1", [entry(p, "from-a"), entry("w1/data/system/m/x/2/raw", "a-only")], grant_a, Work())
    assert fired
    seen = visible("per-model", clock)
    assert seen[p].digest == "from-b"
    assert "w1/data/system/m/x/2/raw" not in seen  # the fenced commit left nothing visible


# ---- 2. model-scope locks fenced unrelated commits --------------------------------------------------------


def test_model_scope_locks_are_refused_with_one_line(aws, clock):
    """Old code accepted lock_scope = "model"; then B's second commit on model m2 (fence 2 of m2's lock)
    made A's commit on m1 (fence 1 of m1's lock) fail: FencedError "a newer lock holder committed"."""
    be = make_backend("per-model", aws, clock=clock)
    with pytest.raises(ConfigError) as err:
        a = make_store(be, "w1", lock_scope="model", clock=clock, holder="a")
        b = make_store(be, "w1", lock_scope="model", clock=clock, holder="b")
        b.sync_run("m2", "get_uptime", 100, [])
        b.sync_run("m2", "get_uptime", 100, [])
        a.sync_run("m1", "get_uptime", 100, [])
    msg = str(err.value)
    assert "\n" not in msg and "model" in msg and "namespace" in msg


def test_scenario_with_model_scope_is_refused():
    from harness.config import scenario
    from harness.core.errors import HarnessError

    with pytest.raises(HarnessError, match="lock_scope"):
        scenario.parse({"datastore": {"lock_scope": "model"}}, "x.toml")


# ---- 3. S3: release, shards and delete_files ----------------------------------------------------------------


def test_stale_s3_release_never_frees_the_new_holders_lock(aws, clock):
    """Old code: release read the lock (its own nonce), then deleted unconditionally; B took the lock over
    in between, A's DELETE removed B's lock and C acquired at once: two holders."""
    a_be = make_backend("sharded", aws, clock=clock)
    b_be = second_backend("sharded", clock)
    key = ".locks/w1.lock"
    lock_a = Lock(a_be.lock_store, key, clock, LOCK)
    grant_a = lock_a.acquire(Work())
    holders: list = []

    def b_takes_over() -> None:
        clock.advance(LOCK.ttl_s + 1)
        holders.append(Lock(b_be.lock_store, key, clock, LOCK).acquire(Work()))

    once_before(a_be.client, ("DeleteObject", "PutObject"), lambda p: p.get("Key", "").endswith(key), b_takes_over)
    assert lock_a.release(grant_a, Work()) is False
    assert holders  # B holds it now
    with pytest.raises(LockTimeoutError):
        Lock(b_be.lock_store, key, clock, LOCK).acquire(Work())


def test_stale_s3_shard_write_never_replaces_the_new_holders_commit(aws, clock):
    """Old code: A's shard landed after B's commit of the same partition and overwrote it; A's _meta swap
    then failed, but B's entry Q was gone from the index."""
    a_be = make_backend("sharded", aws, clock=clock)
    b_be = second_backend("sharded", clock)
    key = ".locks/w1.lock"
    q = "w1/data/system/m/x/2/raw"
    grant_a = Lock(a_be.lock_store, key, clock, LOCK).acquire(Work())

    def b_takes_over_and_commits() -> None:
        clock.advance(LOCK.ttl_s + 1)
        grant_b = Lock(b_be.lock_store, key, clock, LOCK).acquire(Work())
        b_be.commit("w1", [entry(q, "from-b")], grant_b, Work())

    fired = once_before(a_be.client, ("PutObject",), lambda p: "_index/" in p.get("Key", "")
                        and not p["Key"].endswith("_meta.json"), b_takes_over_and_commits)
    with pytest.raises(FencedError):
        a_be.commit("w1", [entry("w1/data/system/m/x/1/raw", "from-a")], grant_a, Work())
    assert fired
    seen = visible("sharded", clock)
    assert seen[q].digest == "from-b" and "w1/data/system/m/x/1/raw" not in seen


@pytest.mark.parametrize("kind", ["sharded", "monolith", "per-model"])
def test_stale_delete_files_is_fenced_before_it_deletes_anything(aws, clock, kind):
    """Old code: S3 deleted the objects, then found it was fenced: the index kept entries pointing at missing
    objects. DynamoDB ignored the grant altogether: the stale delete went through."""
    be = make_backend(kind, aws, clock=clock)
    owner = make_store(be, "w1", clock=clock, holder="owner")
    owner.sync_run("m", "get_uptime", 100, [])
    metas = list(owner.local.values())
    stale = Lock(be.lock_store, owner.lock_key(), clock, LOCK).acquire(Work())
    clock.advance(LOCK.ttl_s + 1)
    fenced_grant(be, owner.lock_key(), clock, LOCK)  # a newer holder (the backend learns of its grant)
    with pytest.raises(FencedError):
        be.delete_files("w1", metas, stale, Work())
    seen = visible(kind, clock)
    assert sorted(seen) == sorted(m.rel_path for m in metas)
    for m in seen.values():  # every entry still points at its content
        assert FileMeta.digest_of(be.get_content(m, Work())) == m.digest


# ---- 4. half-applied commits ---------------------------------------------------------------------------------


def throttle() -> None:
    raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}},
                      "BatchWriteItem")


def test_throttled_dynamodb_commit_leaves_nothing_visible(aws, clock):
    """Old code: a throttle on the second batch left the first 25 of 60 entries visible, unsealed, never
    rolled back (``visible`` returned 25)."""
    be = make_backend("per-model", aws, clock=clock)
    grant = Lock(be.lock_store, ".locks/w1.lock", clock, LOCK).acquire(Work())
    entries = [entry(f"w1/data/system/m/x/{i}/raw", f"d{i}") for i in range(60)]
    once_before(be.client, ("BatchWriteItem", "PutItem", "UpdateItem"), carries(entries[40].rel_path), throttle)
    with pytest.raises(ClientError):
        be.commit("w1", entries, grant, Work())
    assert visible("per-model", clock) == {}
    # and the lock is still usable: the next commit seals normally
    be.commit("w1", entries[:2], grant, Work())
    assert sorted(visible("per-model", clock)) == sorted(e.rel_path for e in entries[:2])


def test_failed_commit_does_not_double_the_next_push(aws, clock):
    """Old code: the fenced commit kept its staged/dirty files, so the next iteration pushed 10 files, not 5."""
    be = make_backend("per-model", aws, clock=clock)
    other = second_backend("per-model", clock)
    a = make_store(be, "w1", clock=clock, holder="a")

    def someone_takes_the_lock() -> None:
        clock.advance(a.cfg.lock.ttl_s + 1)
        Lock(other.lock_store, a.lock_key(), clock, a.cfg.lock).acquire(Work())
        clock.advance(a.cfg.lock.ttl_s + 1)  # ... and lets it expire again

    once_before(be.client, ("BatchWriteItem", "PutItem", "UpdateItem"), carries("w1/models/system/d0/definition.yaml"),
                someone_takes_the_lock)
    with pytest.raises((FencedError, LockLostError)):
        a.sync_run("d0", "get_uptime", 100, [])
    steps: list = []
    a.sync_run("d1", "get_uptime", 100, steps)
    assert step(steps, "push").work.files_pushed == 5
    assert a.staged == {} and a.dirty == {}


def test_failed_disposable_iteration_still_deletes_its_model(aws, clock):
    """Old code: the failed iteration skipped ``delete_model``: its model stayed in the catalog forever,
    never orphaned, never pruned."""
    from dataclasses import replace

    from harness.config import scenario
    from harness.load.drivers.model import SwampWorker

    sc = scenario.parse({"workload": {"kind": "disposable"},
                         "datastore": {"index_commit": "full", "prune_every": 1}}, "x.toml")
    be = make_backend("per-model", aws, clock=clock)
    lw = SwampWorker(sc, be, process="local", user="w0", clock=clock, rng_seed=1)
    lw.store.cfg = replace(lw.store.cfg, heartbeat=False, lock=LOCK)
    other = second_backend("per-model", clock)

    def someone_takes_the_lock() -> None:
        clock.advance(LOCK.ttl_s + 1)
        Lock(other.lock_store, lw.store.lock_key(), clock, LOCK).acquire(Work())
        clock.advance(LOCK.ttl_s + 1)

    once_before(be.client, ("BatchWriteItem", "PutItem", "UpdateItem"),
                carries("w0/models/system/w0-i0/definition.yaml"), someone_takes_the_lock)
    out = lw.run_once()
    assert not out.row["ok"] and out.row["error_kind"] == "fenced"
    assert not lw.store.catalog.has_model("w0", "system", "w0-i0")
    assert lw.store.catalog.rows("w0") == 0  # deleted, then pruned, as the scenario says


# ---- 5. heartbeat ----------------------------------------------------------------------------------------------


class SteppedClock(FakeClock):
    """A FakeClock whose ``sleep`` blocks until another thread advances time past the wake-up point."""

    def __init__(self) -> None:
        super().__init__()
        self.cv = threading.Condition()
        self.wakes: dict[int, float] = {}  # sleeping thread -> when it wakes

    def sleep(self, seconds: float) -> None:
        me = threading.get_ident()
        with self.cv:
            self.wakes[me] = self.now() + max(0.0, seconds)
            self.cv.notify_all()
            try:
                self.cv.wait_for(lambda: self.now() >= self.wakes[me], 10)
            finally:
                del self.wakes[me]
                self.cv.notify_all()

    def advance(self, seconds: float) -> None:
        with self.cv:
            super().advance(seconds)
            self.cv.notify_all()

    def idle(self, timeout: float = 10) -> bool:
        """Wait until a thread sleeps on this clock past the current time (it has done what was due)."""
        with self.cv:
            return self.cv.wait_for(lambda: any(w > self.now() for w in self.wakes.values()), timeout)


def until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll what another thread sets without notifying the clock (``timeout`` is a bound, not a measurement).

    Waiting on the clock's condition instead took the whole 10 s: the heartbeat marks the grant lost and ends
    without sleeping on the clock again, so nothing wakes that wait.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def renewals(work: Work) -> int:
    return work.requests["UpdateItem"]


def test_heartbeat_waits_on_the_injected_clock_and_retries_a_transient_error(aws):
    """Old code: the heartbeat waited on wall time (it never slept on the clock) and returned for good on
    its first exception, so one throttle ended renewal and the lock expired under its holder."""
    clock = SteppedClock()
    be = make_backend("per-model", aws, clock=clock)
    lock = Lock(be.lock_store, ".locks/w1.lock", clock, LockConfig(ttl_s=3, wait_s=1, retry_s=0.1))
    grant = lock.acquire(Work())
    failures = []

    def fail_first_renewal(params: dict, **_: object) -> None:
        if ":e" in repr(params) and not failures:
            failures.append(clock.now())
            throttle()

    be.client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", fail_first_renewal)
    work = Work()
    try:
        with Heartbeat(lock, grant, work):
            assert clock.idle(), "the heartbeat never waited on the injected clock"
            assert renewals(work) == 0
            for _ in range(24):  # 6 s, twice the TTL, in quarter seconds
                clock.advance(0.25)
                assert clock.idle()
            with pytest.raises(LockTimeoutError):  # still held: nobody else can take it
                waiter = FakeClock(clock.now())  # (its backoff sleeps must not wait for this thread)
                Lock(be.lock_store, ".locks/w1.lock", waiter, LockConfig(ttl_s=3, wait_s=0.5, retry_s=0.1)
                     ).acquire(Work())
    finally:
        clock.advance(60)  # wake the finished heartbeat so its thread ends
    assert failures and not grant.lost
    assert renewals(work) >= 5  # every TTL/3 by the clock; the throttled one retried before the next


def test_heartbeat_marks_a_taken_lock_lost_and_the_commit_refuses_it(aws):
    """Old code: ``grant.lost`` was set but never read: the commit went on and wrote before anything
    refused it (and its heartbeat waited on wall time)."""
    clock = SteppedClock()
    be = make_backend("per-model", aws, clock=clock)
    other = second_backend("per-model", clock)
    cfg = LockConfig(ttl_s=3, wait_s=1, retry_s=0.1)
    lock = Lock(be.lock_store, ".locks/w1.lock", clock, cfg)
    grant = lock.acquire(Work())
    store = make_store(be, "w1", clock=clock, lock=cfg)
    store.run_method_locally("system", "m", "get_uptime", 100, Work())

    def paused_and_taken_over() -> None:  # just before the first renewal goes out
        clock.advance(cfg.ttl_s + 1)
        Lock(other.lock_store, ".locks/w1.lock", clock, cfg).acquire(Work())

    once_before(be.client, ("UpdateItem",), lambda p: ":e" in repr(p), paused_and_taken_over)
    try:
        with Heartbeat(lock, grant, Work()):
            assert clock.idle(), "the heartbeat never waited on the injected clock"
            clock.advance(1.0)
            assert until(lambda: grant.lost), "the heartbeat never marked the grant lost"
    finally:
        clock.advance(60)
    w = Work()
    with pytest.raises((LockLostError, FencedError)):
        store.commit(grant, w)
    assert w.total_requests == 0  # refused before writing anything


# ---- found by the checker: a stale upload replaced a sealed entry's content ----------------------------------


@pytest.mark.parametrize("kind", ["per-model", "sharded", "monolith"])
def test_a_stale_upload_never_replaces_the_content_of_a_newer_sealed_entry(aws, clock, kind):
    """Found by the safety checker in a fenced lock-safety run on S3 (11 corrupt entries in 60 s): a holder
    whose lease ran out while it uploaded overwrote the content of the same file version that the next
    holder had meanwhile written and sealed (content was at the path, or keyed by version only). Old code:
    the sealed entry's content digest no longer matched."""
    from harness.safety.checker import check
    from harness.safety.state import snapshot

    a_be, b_be = make_backend(kind, aws, clock=clock), second_backend(kind, clock)
    events: list[dict] = []
    a = make_store(a_be, None, lock_scope="datastore", clock=clock, holder="a", lock=LOCK)
    b = make_store(b_be, None, lock_scope="datastore", clock=clock, holder="b", lock=LOCK)
    a.record = b.record = events.append
    a.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    b.sync_run("m", "get_uptime", 100, [])  # b's view has a's files: the next versions collide

    def b_takes_over_and_commits() -> None:  # a's lease ran out while its upload was on the wire
        clock.advance(LOCK.ttl_s + 1)
        b.sync_run("m", "get_uptime", 100, [])
        clock.advance(0.1)

    def is_upload(params: dict) -> bool:
        if kind == "per-model":
            return "CHUNK#" in repr(params.get("RequestItems", ""))
        return "@v" in params.get("Key", "") or ("_index" not in params.get("Key", "") and
                                                 not params.get("Key", "").endswith(".lock"))

    fired = once_before(a_be.client, ("BatchWriteItem", "PutObject"), is_upload, b_takes_over_and_commits)
    with pytest.raises((FencedError, LockLostError)):
        a.sync_run("m", "get_uptime", 100, [])
    assert fired
    report = check(events, snapshot(b_be))
    assert report["corrupt"] == 0, report["details"]["corrupt"]
    assert report["violations"] == 0 and report["acknowledged"] == 3


class _Killed(BaseException):
    """What Locust raises in a user it stops (GreenletExit is a BaseException too)."""


@pytest.mark.parametrize("interrupt", [_Killed, RuntimeError])
def test_a_commit_interrupted_mid_write_keeps_its_id_pending_so_late_writes_stay_invisible(aws, clock, interrupt):
    """Review finding: a user killed while its entry writes were in flight undid what had landed and dropped
    its pending id at once, so a write that landed later carried a non-pending id and became visible with the
    next holder's seal. Interrupted, the id now stays pending; an ordinary failure still drops it."""
    be = make_backend("per-model", aws, clock=clock)
    key = ".locks/w1.lock"
    grant = Lock(be.lock_store, key, clock, LOCK).acquire(Work())
    entries = [FileMeta(f"w1/data/system/m/x/{i}/raw", 10, "d", 1_700_000_000_000 + i, 1) for i in range(3)]
    real = be.batch_write

    def batch_write(requests, work):
        puts = [r for r in requests if "PutRequest" in r]
        if puts and puts[0]["PutRequest"]["Item"]["sk"]["S"].startswith("V#"):  # the entry writes: one lands,
            real(puts[:1], work)  # then the interruption
            raise interrupt("stopped")
        return real(requests, work)

    be.batch_write = batch_write
    with pytest.raises(interrupt):
        be.commit("w1", entries, grant, Work())
    be.batch_write = real
    Lock(be.lock_store, key, clock, LOCK).release(grant, Work())  # the release must not drop a claim still in use
    pending = be.lock_store.state(key, Work()).pending
    assert bool(pending) is (interrupt is _Killed), pending
    assert be.lookup([m.rel_path for m in entries], Work()) == {}  # nothing of it is visible either way
