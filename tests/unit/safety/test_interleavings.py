"""The seven holes an adversarial read found in the fenced design (issue 30), each reproduced exactly.

Every schedule is deterministic: in-process moto, a FakeClock, and botocore
event hooks that freeze one actor between two of its requests (while another
actor runs), lose an answer after its request landed, or hide the newest item
from one GSI query. Each test failed on 16f4338 and passes now; the checker's
verdict on the schedule's history is part of every assertion.

1. two-phase, DynamoDB: a holder whose model lock expired still sealed (the
   model fence was checked at the registry write, before its versions; the seal
   checked only the global nonce and sequence);
2. S3: a seal whose answer was lost was retried, got 412, and its commit
   deleted the shards the landed head named;
3. a prune from a stale view removed a model someone had re-created;
4. DynamoDB: a chunk left as garbage until the deleter's next push was deleted
   after someone re-created the same file with the same bytes;
5. DynamoDB: a GSI query that missed the newest item (a tombstone) let a full
   commit write a deleted file back;
6. a reader without the commit lock read across a seal: DynamoDB's view lacked
   an entry; S3's pull took a deleted content object as empty bytes;
7. two-phase with the legacy GSI had no model fence at all.
"""

from __future__ import annotations

import pytest

from harness.core.work import Work
from harness.datastore.errors import FencedError
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import (
    FAST_LOCK,
    Actor,
    hide_newest_from_gsi,
    lose_answer,
    make_backend,
    once_before,
    second_clients,
    sync_store,
)

DDB = ["per-model", "legacy"]


def pair(aws, clock, kind, events, **kw):
    """Stores a and b of namespace w1, each through a client of its own, one history."""
    a = sync_store(make_backend(kind, aws, clock=clock), clock=clock, holder="a", events=events, **kw)
    b = sync_store(make_backend(kind, second_clients(), clock=clock), clock=clock, holder="b", events=events, **kw)
    return a, b


def is_seal(params) -> bool:
    return str(params.get("UpdateExpression", "")).startswith("SET #s = :new")


def test_0_a_refused_commit_cannot_list_a_pruned_partition_again(aws, clock):
    """lifecycle-safety's lost deletes (10 in 60 s on 16f4338). S pulls at 1 and freezes before its (full)
    commit; R commits at 2 (its cursor: m's partition read up to 2); D deletes m (3) and prunes it (4: the
    partition leaves the registry). S's registry write, at sequence 2, listed m's partition again (born 2,
    changed 2) before its seal was refused; R then saw nothing to read and kept m, and its next full commit
    wrote m's five files back. A commit older than the newest prune may not list a partition again."""
    events: list[dict] = []
    mk = lambda who, cl: sync_store(make_backend("per-model", cl, clock=clock), clock=clock, holder=who,  # noqa: E731
                                    events=events, index_commit="full")
    d, s_, r = mk("d", aws), mk("s", second_clients()), mk("r", second_clients())
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)

    def meanwhile(point: str) -> float:
        s_.pauses = None
        clock.advance(FAST_LOCK.ttl_s + 1)
        r.sync_run("r", "get_uptime", 100, [])
        d.delete_model("m", [])
        d.prune([])
        return 0.0

    s_.pauses = meanwhile
    with pytest.raises(FencedError):
        s_.sync_run("k", "get_uptime", 100, [])
    clock.advance(0.1)
    r.sync_run("r", "get_load", 100, [])
    assert not any("/system/m/" in p for p in r.local)
    report = check(events, snapshot(d.backend))
    assert report["lost"] == 0, report["details"]["lost"]
    assert report["violations"] == 0, report["details"]


@pytest.mark.parametrize("kind", ["per-model", "legacy", "sharded"])
def test_1_7_a_two_phase_holder_whose_model_lock_expired_cannot_seal(aws, clock, kind):
    """A passes every check before its seal and freezes past both TTLs; B takes m0's model lock and pulls the
    model while A's versions are pending; A's seal must then be refused (old code: lost 2, on legacy no fence)."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events, sync="two-phase")
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    actor = Actor(b, lambda: b.sync_run("m0", "get_load", 100, []))

    def freeze():
        clock.advance(2 * FAST_LOCK.ttl_s + 1)  # A's model lock and global lock both expire ...
        actor.start_until_paused()  # ... and B is granted m0's lock and pulls it, A's versions still pending

    if kind == "sharded":
        done = once_before(a.backend.client, "before-parameter-build.s3.PutObject",
                           lambda p: p["Key"].endswith("_meta.json") and b"\"cid\"" in bytes(p.get("Body", b"")),
                           freeze)
    else:
        done = once_before(a.backend.client, "before-parameter-build.dynamodb.UpdateItem", is_seal, freeze)
    with pytest.raises(FencedError):
        a.sync_run("m0", "get_memory", 100, [])
    assert done, "the interleaving did not happen"
    actor.finish()  # B commits on its own view
    report = check(events, snapshot(a.backend))
    assert report["violations"] == 0, report["details"]
    assert report["lost"] == 0 and report["unsafe_overlaps"] == 0


def test_2_an_s3_seal_whose_answer_was_lost_is_sealed_not_undone(aws, clock):
    """The head's If-Match PUT lands, its answer is lost, botocore retries it and gets 412: the commit must see
    its own head (not delete the shards it names); later pulls work (old code: lost 5, corrupt 1)."""
    events: list[dict] = []
    a, b = pair(aws, clock, "sharded", events)
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    other = second_clients()[1]
    armed: dict = {}

    def arm(point: str) -> float:
        armed["state"] = lose_answer(a.backend.client, other, "s3", "PutObject",
                                     lambda p: p["Key"].endswith("_meta.json") and "IfMatch" in p)
        return 0.0

    a.pauses = arm  # armed just before the commit: the grant's own head write is not the one lost
    a.sync_run("m0", "get_load", 100, [])
    assert armed and armed["state"]["lost"] == 1, "the answer was never lost"
    clock.advance(0.1)
    b.sync_run("m1", "get_uptime", 100, [])  # a pull of the namespace, and a commit on top
    assert any("/m0/" in r for r in b.local)
    report = check(events, snapshot(a.backend))
    assert report["violations"] == 0, report["details"]
    assert report["acknowledged"] == 3


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_3_a_prune_from_a_stale_view_leaves_a_recreated_model_alone(aws, clock, kind):
    """D runs m and deletes it; E re-creates m (acknowledged); D's prune, from its own catalog, must not remove
    E's model (old code: DynamoDB all 5 of E's entries gone, S3 3)."""
    events: list[dict] = []
    d, e = pair(aws, clock, kind, events)
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    d.delete_model("m", [])
    clock.advance(0.1)
    e.sync_run("m", "get_load", 100, [])  # the model again, by name
    mine = {r for r in e.local if "/m/" in r}
    assert len(mine) == 9  # its five and the data D left
    clock.advance(0.1)
    report = d.prune([])
    assert report.models == [], "a re-created model is no orphan"
    state = snapshot(d.backend)
    assert mine <= {x["path"] for x in state["entries"]}
    check_report = check(events, state)
    assert check_report["violations"] == 0, check_report["details"]


def test_4_a_deleted_files_chunk_is_not_collected_after_its_recreation(aws, clock):
    """D deletes m; E re-creates m with the same bytes (the same chunk key); D's next push must not delete that
    chunk (old code: the re-created definition's content was gone: corrupt 1)."""
    events: list[dict] = []
    d, e = pair(aws, clock, "per-model", events)
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    d.delete_model("m", [])
    clock.advance(0.1)
    e.sync_run("m", "get_load", 100, [])
    clock.advance(0.1)
    d.sync_run("other", "get_uptime", 100, [])  # D's next push
    report = check(events, snapshot(d.backend))
    assert report["corrupt"] == 0, report["details"]["corrupt"]
    assert report["violations"] == 0, report["details"]


def test_5_a_gsi_that_missed_a_tombstone_does_not_undo_the_delete(aws, clock):
    """B's pull, with D's newest item (the definition's tombstone) hidden from one GSI query, must not take the
    partition as read: B's full commit would write the deleted definition back (old code: lost 1)."""
    events: list[dict] = []
    b, d = pair(aws, clock, "per-model", events, index_commit="full")
    b.sync_run("keep", "get_uptime", 100, [])
    clock.advance(0.1)
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    b.sync_run("keep", "get_load", 100, [])  # B has seen m
    assert any("/m/definition" in r for r in b.local)
    clock.advance(0.1)
    d.delete_model("m", [])
    clock.advance(0.1)
    hidden = hide_newest_from_gsi(b.backend.client,
                                  lambda p: p["ExpressionAttributeValues"][":p"]["S"].endswith("/system/m"))
    b.sync_run("keep", "get_memory", 100, [])
    assert hidden, "nothing was hidden"
    assert not any("/m/definition" in r for r in b.local)
    report = check(events, snapshot(b.backend))
    assert report["lost"] == 0, report["details"]["lost"]
    assert report["violations"] == 0, report["details"]


def test_5_a_two_phase_scoped_pull_waits_for_a_lagging_gsi(aws, clock):
    """The model's next holder pulls it scoped, with the previous holder's newest version hidden from the query:
    it must not commit over a view that missed that commit (the checker: a stale view, a lost update)."""
    events: list[dict] = []
    a, b = pair(aws, clock, "per-model", events, sync="two-phase")
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    a.sync_run("m0", "get_uptime", 100, [])  # latest: version 2
    clock.advance(0.1)
    hidden = hide_newest_from_gsi(b.backend.client,
                                  lambda p: p["ExpressionAttributeValues"][":p"]["S"].endswith("/system/m0"))
    b.sync_run("m0", "get_uptime", 100, [])
    assert hidden, "nothing was hidden"
    assert hidden[0]["relPath"]["S"] in b.local, "the pull took the lagging GSI's answer as the partition"
    latest = next(p for p in b.local if p.endswith("/uptime/latest"))
    assert b.local[latest].version == 3
    report = check(events, snapshot(a.backend))
    assert report["violations"] == 0, report["details"]


def test_6_a_dynamodb_reader_without_the_lock_sees_one_sealed_state(aws, clock):
    """A fresh reader's GSI query runs while a writer seals sequence 2 and collects the version it replaced: its
    view "at 1" must not lack the entry (old code: no ``latest`` at all); the checker sees torn views."""
    events: list[dict] = []
    w, r = pair(aws, clock, "per-model", events)
    w.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    done = once_before(r.backend.client, "before-parameter-build.dynamodb.Query", lambda p: "IndexName" in p,
                       lambda: w.sync_run("m", "get_uptime", 100, []))
    r.pull(Work())
    assert done, "the interleaving did not happen"
    latest = [p for p in w.local if p.endswith("/uptime/latest")]
    assert latest and r.local.get(latest[0]) == w.local[latest[0]]
    assert r.last_seq == 2
    report = check(events, snapshot(w.backend))
    assert report["pulls_checked"] >= 1 and report["torn_reads"] == 0, report["details"]


def test_6_an_s3_reader_whose_content_was_collected_reads_again(aws, clock):
    """The reader's head read is whole, but ``latest``'s content object is deleted under it (a commit superseded
    it): the pull must read again, not take empty bytes for version 1 (old code: the view kept version 1)."""
    events: list[dict] = []
    w, r = pair(aws, clock, "sharded", events)
    w.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    done = once_before(r.backend.client, "before-parameter-build.s3.GetObject", lambda p: "/latest@v1." in p["Key"],
                       lambda: w.sync_run("m", "get_uptime", 100, []))
    r.pull(Work())
    assert done, "the interleaving did not happen"
    latest = next(p for p in w.local if p.endswith("/uptime/latest"))
    assert r.local[latest].version == 2 and r.last_seq == 2
    report = check(events, snapshot(w.backend))
    assert report["violations"] == 0, report["details"]


# ---- the checker sees what it missed ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_a_delete_and_a_prune_record_their_views_and_a_stale_one_is_flagged(aws, clock, kind):
    """Delete and prune events carry the view their pull under the lock saw (old code: null, so the checker took
    the event's own base and judged every one current); a delete whose view missed a commit is flagged."""
    events: list[dict] = []
    d, e = pair(aws, clock, kind, events)
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    e.sync_run("n", "get_uptime", 100, [])
    clock.advance(0.1)
    d.delete_model("m", [])
    d.prune([])
    removals = [c for c in events if c.get("type") == "commit" and c["op"] in ("delete", "prune")]
    assert [c["op"] for c in removals] == ["delete", "prune"]
    assert [c["view_seq"] for c in removals] == [2, 3], "each saw the sequence its own pull under the lock saw"
    assert check(events, snapshot(d.backend))["violations"] == 0
    removals[0]["view_seq"] = 1  # as a delete from a view that missed e's commit would be recorded
    report = check(events, snapshot(d.backend))
    assert any(a["cid"] == removals[0]["cid"] and a["kind"].startswith("stale view")
               for a in report["details"]["sequence_anomalies"]), report["details"]


def test_a_seal_is_timed_when_it_is_sent_not_when_its_commit_started(aws, clock):
    """The holder freezes between building its commit and sending its seal: ``seal_ms`` is the send (old code:
    taken before the request was built, so a pause there hid an unsafe overlap)."""
    events: list[dict] = []
    a, _ = pair(aws, clock, "per-model", events)
    a.sync_run("m", "get_uptime", 100, [])
    frozen: list[int] = []

    def freeze() -> None:
        clock.advance(1.0)
        frozen.append(int(clock.now() * 1000))

    once_before(a.backend.client, "before-parameter-build.dynamodb.UpdateItem", is_seal, freeze)
    a.sync_run("m", "get_load", 100, [])
    commit = [c for c in events if c.get("type") == "commit"][-1]
    assert frozen and commit["ok"]
    assert commit["seal_ms"] >= frozen[0] > commit["invoke_ms"]
    assert commit["sent_ms"] == commit["seal_ms"] <= commit["complete_ms"]


def test_a_seal_in_flight_across_a_grant_is_uncertain_and_one_sent_after_it_unsafe():
    g = {"type": "grant", "key": "L", "attempts": 1}
    events = [
        {**g, "nonce": "old", "fence": 1, "holder": "a", "started_ms": 0, "granted_ms": 0, "expires_ms": 1000},
        {**g, "nonce": "new", "fence": 2, "holder": "b", "started_ms": 900, "granted_ms": 1100, "expires_ms": 4000},
        {"type": "commit", "key": "L", "nonce": "old", "holder": "a", "fence": 1, "ok": True, "cid": "c1",
         "invoke_ms": 800, "seal_ms": 1050, "sent_ms": 1050, "complete_ms": 1250, "seq": 1, "base": 0,
         "domain": "L", "writes": [], "deletes": []},
        {"type": "release", "key": "L", "nonce": "old", "holder": "a", "fence": 1, "invoke_ms": 1300, "ok": False},
    ]
    report = check(events, {"entries": []})
    assert report["uncertain_overlaps"] == 1 and report["unsafe_overlaps"] == 0 and report["violations"] == 0
    assert report["details"]["uncertain_overlaps"][0]["in_flight_commits"] == ["c1"]
    events[2]["seal_ms"] = 1150  # sent after the newer grant and accepted: unsafe
    report = check(events, {"entries": []})
    assert report["unsafe_overlaps"] == 1 and report["uncertain_overlaps"] == 0


def test_a_view_that_is_no_sealed_state_is_a_torn_read():
    c = {"type": "commit", "ok": True, "key": "L", "domain": "L", "nonce": "n", "fence": 1, "invoke_ms": 0}
    events = [
        {**c, "cid": "c1", "seq": 1, "base": 0, "writes": [["w1/data/system/m/x/latest", 1, "d1", 1]],
         "deletes": []},
        {**c, "cid": "c2", "seq": 2, "base": 1, "writes": [["w1/data/system/m/x/latest", 2, "d2", 1]],
         "deletes": []},
        {"type": "pull", "holder": "r", "namespace": "w1", "domain": "L", "seq": 1, "scope": None,
         "view": [["w1/data/system/m/x/latest", 1, "d1"]], "view_size": 1, "complete_ms": 5},
        {"type": "pull", "holder": "r", "namespace": "w1", "domain": "L", "seq": 2, "scope": None,
         "view": [["w1/data/system/m/x/latest", 2, "d2"]], "view_size": 1, "complete_ms": 6},
    ]
    state = {"entries": [{"path": "w1/data/system/m/x/latest", "version": 2, "digest": "d2", "size": 1,
                          "content_digest": "d2"}]}
    assert check(events, state)["torn_reads"] == 0
    events[2].update(view=[], view_size=0)  # the view "at 1" without the entry sealed at 1 (DynamoDB's torn query)
    events[3]["view"] = [["w1/data/system/m/x/latest", 1, "d1"]]  # "at 2" with the version 2 replaced
    report = check(events, state)
    assert report["torn_reads"] == 2 and report["violations"] == 2
    assert report["details"]["torn_reads"][0]["paths"][0]["sealed"] == [1, "d1"]
    events[2]["view_size"] = 5000  # a view recorded by its size only (too large to keep) is not judged
    assert check(events, state)["torn_reads"] == 1
