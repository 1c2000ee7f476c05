"""Regression tests for the datastore issue's two losses with fencing on, each interleaving reproduced exactly.

1. *Deletes came back*: pulls never carried removals, so a worker that had
   seen a model's files before another worker of its namespace deleted and
   pruned them kept them, and its next ``full`` commit wrote them back, their
   content gone (old code: lost 5, corrupt 5 on every backend).
2. *A stale S3 holder's commit sealed*: the holder check was a GetObject of
   the lock before the swap of the index head, and the swap was conditioned
   only on the head's ETag, so a holder whose lease ran out inside its commit
   still sealed when the new holder had been granted the lock but had not
   swapped yet (old code: the stale commit was acknowledged; the new holder's
   full commit then reverted it: lost 1, corrupt 1).

Both use a FakeClock, and a hook on one holder's client runs the other's steps
between two of its requests.
"""

from __future__ import annotations

import pytest

from harness.datastore.errors import FencedError
from harness.datastore.lock import LockConfig
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import make_backend, make_store, second_clients

LOCK = LockConfig(ttl_s=3, wait_s=2, retry_s=0.05, retry_cap_s=0.1)
KINDS = ["per-model", "legacy", "sharded", "monolith"]


def pair(aws, clock, kind, events):
    """Workers a and b of namespace w1 (full commits), each through a client of its own, one history."""
    be_a = make_backend(kind, aws, clock=clock)
    be_b = make_backend(kind, second_clients(), clock=clock)
    stores = []
    for be, who in ((be_a, "a"), (be_b, "b")):
        s = make_store(be, "w1", index_commit="full", clock=clock, holder=who, lock=LOCK)
        s.record = events.append
        stores.append(s)
    return be_a, stores[0], stores[1]


@pytest.mark.parametrize("kind", KINDS)
def test_an_acknowledged_delete_stays_deleted_after_another_workers_full_commit(aws, clock, kind):
    events: list[dict] = []
    be, a, b = pair(aws, clock, kind, events)
    a.sync_run("keep", "get_uptime", 100, [])
    clock.advance(0.05)
    b.sync_run("gone", "get_uptime", 100, [])
    clock.advance(0.05)
    a.sync_run("keep", "get_load", 100, [])  # a's view now holds gone's five files
    assert sum("/gone/" in r for r in a.local) == 5
    clock.advance(0.05)
    b.delete_model("gone", [])
    b.prune([])
    clock.advance(0.05)
    a.sync_run("keep", "get_memory", 100, [])  # its pull must learn both removals before its full commit
    assert not any("/gone/" in r for r in a.local)
    state = snapshot(be)
    assert not any("/gone/" in e["path"] for e in state["entries"])
    report = check(events, state)
    assert report["violations"] == 0, report["details"]
    assert report["lost"] == report["corrupt"] == 0


def test_a_stale_s3_holder_cannot_seal_after_the_next_grant(aws, clock):
    """The new holder is granted the lock while the old one's shards are on the wire; the old one's swap of
    the head comes after that grant and must be refused; the new holder then commits on its own view."""
    events: list[dict] = []
    be, a, b = pair(aws, clock, "sharded", events)
    a.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.05)
    b.sync_run("m", "get_uptime", 100, [])  # both have seen both commits
    clock.advance(0.05)
    a.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.05)
    taken: list = []
    shards: list[str] = []

    def watch(params, **_):
        key = params.get("Key", "")
        if "_index/" in key and not key.endswith("_meta.json"):
            shards.append(key)
        elif key.endswith("_meta.json") and shards and not taken:
            clock.advance(LOCK.ttl_s + 1)  # a's lease ran out inside its commit ...
            section = b.locked(b_steps)
            taken.append((section, section.__enter__()))  # ... and b is granted the lock, but has not swapped

    b_steps: list = []
    a.backend.client.meta.events.register("before-parameter-build.s3.PutObject", watch)
    try:
        with pytest.raises(FencedError):
            a.sync_run("m", "get_load", 100, [])
    finally:
        a.backend.client.meta.events.unregister("before-parameter-build.s3.PutObject", watch)
    assert taken, "the interleaving did not happen"
    section, _grant = taken[0]
    from harness.core.work import Work

    b.pull(Work())  # b goes on under its grant: pull, run, push, commit (full)
    b.run_method_locally("system", "m", "get_memory", 100, Work())
    b.prepare(Work())
    b.commit(_grant, Work())
    section.__exit__(None, None, None)
    report = check(events, snapshot(be))
    assert report["violations"] == 0, report["details"]
    assert report["unsafe_overlaps"] == 0 and report["refused"] == 1


def test_the_checker_calls_a_seal_after_a_newer_grant_unsafe_even_when_nothing_is_lost():
    """A commit of the older grant started before the newer grant but sealed after it: unsafe, by its seal."""
    g = {"type": "grant", "key": "L", "attempts": 1}
    events = [
        {**g, "nonce": "old", "fence": 1, "holder": "a", "started_ms": 0, "granted_ms": 0, "expires_ms": 1000},
        {**g, "nonce": "new", "fence": 2, "holder": "b", "started_ms": 900, "granted_ms": 1100, "expires_ms": 4000},
        {"type": "commit", "key": "L", "nonce": "old", "holder": "a", "fence": 1, "ok": True, "cid": "c1",
         "invoke_ms": 800, "seal_ms": 1200, "complete_ms": 1250, "seq": 1, "base": 0, "domain": "L",
         "writes": [], "deletes": []},
        {"type": "release", "key": "L", "nonce": "old", "holder": "a", "fence": 1, "invoke_ms": 1300, "ok": False},
    ]
    report = check(events, {"entries": []})
    assert report["overlaps"] == 1 and report["unsafe_overlaps"] == 1 and report["lease_overlaps"] == 0
    assert report["lost"] == 0
    assert report["details"]["unsafe_overlaps"][0]["accepted_commits"] == ["c1"]
    events[2]["seal_ms"] = 1050  # sealed before the newer grant: an overlap, not an unsafe one
    assert check(events, {"entries": []})["unsafe_overlaps"] == 0
