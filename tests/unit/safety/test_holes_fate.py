"""A seal's fate read from its record after every failure (issue 55), each case reproduced exactly.

Beside ``test_holes.py`` (issue 43's holes): in-process moto, a FakeClock, botocore hooks. The seal lands,
its answer is lost, and botocore's resend fails otherwise (throttled past its retries): the old code asked
``outcome_unknown()`` of the last attempt's code alone, took the throttle for "known not to have landed" and
undid a sealed commit. Each test first asserts that its interleaving happened; each failed on d2c82e8:

- S3, one-lock and two-phase, sharded and monolith: A deleted the shards its landed head names (every entry
  of the model gone, a monolith's whole namespace);
- S3, hole 3 with the fate read (the head's GET) throttled: A told "failed" while its commit was visible;
- DynamoDB per-model, one-lock, and two-phase with ``uploads_at_commit = false``: A undid its sealed items,
  B's commit built on them, so no fresh fenced reader could pull the model again (``GsiBehindError``);
- DynamoDB per-model with the fate read (the lock item's GetItem) throttled too: the same undo;
- DynamoDB legacy: the namespace's digest kept what the seal added, the items went: unreadable for good.

And ``outcome_unknown()`` itself: an error after an attempt whose answer never came is never "known not to
have landed", whatever the last attempt's code (a run of attempts each answered stays known).
"""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from harness.core.aws_errors import outcome_unknown
from harness.core.work import Work
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import FAST_LOCK, fail_once, lose_answer, make_backend, second_clients, sync_store
from tests.unit.safety.test_holes import is_seal, two_phase_store

LATEST = "w1/data/system/m0/uptime/latest"
S3_THROTTLE, DDB_THROTTLE = "SlowDown", "ProvisionedThroughputExceededException"


def is_dynamodb(kind: str) -> bool:
    return kind in ("per-model", "legacy")


def store(kind, clients, clock, holder, events, sync):
    if sync == "two-phase":
        return two_phase_store(kind, clients, clock, holder, events, False if is_dynamodb(kind) else None)
    return sync_store(make_backend(kind, clients, clock=clock), clock=clock, holder=holder, events=events)


def head_swap(s3_client):
    """A head PUT that moves the commit sequence (a commit's swap, not a grant's fence write)."""
    def when(params: dict) -> bool:
        key = params["Key"]
        if not key.endswith(("_meta.json", ".datastore-index.json")) or "IfMatch" not in params:
            return False
        body = json.loads(bytes(params.get("Body", b"{}")))
        now = json.loads(s3_client.get_object(Bucket=params["Bucket"], Key=key)["Body"].read())
        return int(body.get("commitSeq", 0)) > int(now.get("commitSeq", 0))
    return when


def arm_lost_seal(a, kind, other, then, meanwhile=None) -> dict:
    """At A's commit: its seal lands, its answer is lost, botocore's resend meets ``then``. Returns the state."""
    armed: dict = {}

    def arm(point: str) -> float:
        if not armed:
            if is_dynamodb(kind):
                armed["state"] = lose_answer(a.backend.client, other, "dynamodb", "UpdateItem", is_seal,
                                             meanwhile=meanwhile, then=then)
            else:
                armed["state"] = lose_answer(a.backend.client, other, "s3", "PutObject", head_swap(other),
                                             meanwhile=meanwhile, then=then)
        return 0.0

    a.pauses = arm
    return armed


def lost(armed: dict) -> dict:
    assert armed, "A never reached its commit"
    return armed["state"]


def a_commit(events) -> dict:
    return [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]


def fresh_reader_pulls_it_all(kind, clock) -> None:
    """A new fenced worker pulls the final state: every entry, as the store holds it (no error)."""
    events: list[dict] = []
    c = sync_store(make_backend(kind, second_clients(), clock=clock), clock=clock, holder="c", events=events)
    c.pull(Work())
    final = {e["path"]: (e["version"], e["digest"]) for e in snapshot(c.backend)["entries"]}
    assert {r: (m.version, m.digest) for r, m in c.local.items()} == final


def no_violations(events, backend) -> None:
    report = check(events, snapshot(backend))
    assert report["violations"] == 0, report["details"]


def run_a(a) -> None:
    try:
        a.sync_run("m0", "get_uptime", 100, [])
    except Exception:  # noqa: BLE001 - told failed or indeterminate: the checks below judge what it left
        pass


# ---- S3 --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sync", ["one-lock", "two-phase"])
@pytest.mark.parametrize("kind", ["sharded", "monolith"])
def test_s3_a_landed_head_swap_whose_resend_is_throttled_is_acknowledged_not_undone(aws, clock, kind, sync):
    """A's head swap lands, its answer is lost, the resend is throttled past botocore's retries: the head
    names A's commit, so it sealed (old code: A deleted the shards the head names: lost 5 / the namespace)."""
    events: list[dict] = []
    a = store(kind, aws, clock, "a", events, sync)
    b = store(kind, second_clients(), clock, "b", events, sync)
    a.sync_run("m0", "get_uptime", 100, [])
    b.sync_run("m1", "get_uptime", 100, [])
    clock.advance(0.1)
    armed = arm_lost_seal(a, kind, second_clients()[1], S3_THROTTLE)
    run_a(a)
    assert lost(armed)["lost"] == 1 and lost(armed)["resent"] == 1, "the interleaving did not happen"
    final = {e["path"]: e for e in snapshot(a.backend)["entries"]}
    assert final.get(LATEST, {}).get("version") == 2 and "w1/data/system/m1/uptime/latest" in final, \
        f"entries gone: {len(final)} left"
    assert all(e["content_digest"] == e["digest"] for e in final.values())
    fresh_reader_pulls_it_all(kind, clock)
    assert a_commit(events)["ok"], a_commit(events).get("error")
    no_violations(events, a.backend)


def test_s3_hole_3_with_the_fate_read_throttled_is_indeterminate_not_failed(aws, clock):
    """Issue 43's hole 3 (A's resend refused after B built on A's commit) with A's fate read, the head's GET,
    throttled: A cannot know its fate, so it is indeterminate (old code: "failed" while visible, phantom 4)."""
    events: list[dict] = []
    a = store("sharded", aws, clock, "a", events, "one-lock")
    b = store("sharded", second_clients(), clock, "b", events, "one-lock")
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    failed: list = []

    def b_builds_on_it() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m0", "get_load", 100, [])
        failed.append(fail_once(a.backend.client, "GetObject", lambda p: p["Key"].endswith("_meta.json"),
                                code=S3_THROTTLE))

    armed = arm_lost_seal(a, "sharded", second_clients()[1], None, meanwhile=b_builds_on_it)
    run_a(a)
    assert lost(armed)["lost"] == 1 and failed and failed[0], "the interleaving did not happen"
    mine = a_commit(events)
    assert not mine["ok"] and mine.get("indeterminate"), f"a visible commit was reported failed: {mine}"
    assert {x["path"]: x["version"] for x in snapshot(a.backend)["entries"]}[LATEST] == 2
    fresh_reader_pulls_it_all("sharded", clock)
    no_violations(events, a.backend)


# ---- DynamoDB --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "sync"), [("per-model", "one-lock"), ("per-model", "two-phase"),
                                            ("legacy", "one-lock")])
def test_dynamodb_a_landed_seal_whose_resend_is_throttled_after_b_built_on_it_is_not_undone(aws, clock, kind,
                                                                                           sync):
    """A's seal lands, its answer is lost; B pulls A's sealed commit and commits on top; A's resend is
    throttled past botocore's retries. A's id is no longer pending: it sealed (old code: A undid its items, so
    B's registry record / the legacy digest counts items that are gone, every fresh pull fails; lost 1)."""
    events: list[dict] = []
    a = store(kind, aws, clock, "a", events, sync)
    b = store(kind, second_clients(), clock, "b", events, sync)
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)

    def b_builds_on_it() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m0", "get_load", 100, [])

    armed = arm_lost_seal(a, kind, second_clients()[0], DDB_THROTTLE, meanwhile=b_builds_on_it)
    run_a(a)
    assert lost(armed)["lost"] == 1 and lost(armed)["resent"] == 1, "the interleaving did not happen"
    assert b.local[LATEST].version == 2, "B never built on A's commit"
    final = {e["path"]: e for e in snapshot(a.backend)["entries"]}
    assert final.get(LATEST, {}).get("version") == 2 and "w1/data/system/m0/load/latest" in final, \
        f"entries gone: {sorted(final)}"
    fresh_reader_pulls_it_all(kind, clock)
    assert a_commit(events)["ok"], a_commit(events).get("error")
    no_violations(events, a.backend)


def test_dynamodb_a_landed_seal_whose_fate_read_is_throttled_too_is_indeterminate_and_kept(aws, clock):
    """As above, and A's fate read (the lock item's GetItem) throttled too: its fate is unknown, so nothing of
    it is undone and it says indeterminate (old code: undone, lost 1 and the model unreadable)."""
    events: list[dict] = []
    a = store("per-model", aws, clock, "a", events, "one-lock")
    b = store("per-model", second_clients(), clock, "b", events, "one-lock")
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    failed: list = []

    def b_builds_on_it() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m0", "get_load", 100, [])
        failed.append(fail_once(a.backend.client, "GetItem", lambda p: p["Key"]["pk"]["S"].startswith("LOCK#")))

    armed = arm_lost_seal(a, "per-model", second_clients()[0], DDB_THROTTLE, meanwhile=b_builds_on_it)
    run_a(a)
    assert lost(armed)["resent"] == 1 and failed, "the interleaving did not happen"
    assert {x["path"]: x["version"] for x in snapshot(a.backend)["entries"]}.get(LATEST) == 2
    fresh_reader_pulls_it_all("per-model", clock)
    mine = a_commit(events)
    assert mine["ok"] or mine.get("indeterminate"), f"a sealed commit was reported failed: {mine}"
    assert failed[0], "A's fate read was never throttled"
    no_violations(events, a.backend)


# ---- outcome_unknown ---------------------------------------------------------------------------------------------
def _throttled_call(aws, lose_first: bool) -> ClientError:
    """One PutObject through the instrumented client: its first attempt's answer lost (or not), then a throttle
    past botocore's retries. Returns the error the caller sees."""
    _, s3 = aws
    s3.create_bucket(Bucket="fate-bucket")
    other = second_clients()[1]
    if lose_first:
        lose_answer(s3, other, "s3", "PutObject", lambda p: True, then=S3_THROTTLE)
    else:
        fail_once(s3, "PutObject", lambda p: True, code=S3_THROTTLE)
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket="fate-bucket", Key="k", Body=b"x")
    return err.value


def test_an_error_after_an_attempt_without_an_answer_is_never_known_not_landed(aws):
    assert outcome_unknown(_throttled_call(aws, lose_first=True))


def test_a_throttle_on_every_attempt_stays_known_not_landed(aws):
    assert not outcome_unknown(_throttled_call(aws, lose_first=False))


# ---- the checker: an indeterminate commit explains only what its fate record allows; a fresh reader pulls -------
def _commit(cid, seq=None, ok=True, **kw):
    e = {"type": "commit", "ok": ok, "cid": cid, "key": "L", "fence": 1, "nonce": cid, "invoke_ms": 0,
         "writes": [], "deletes": [], **kw}
    if ok:
        e.update(seq=seq, base=seq - 1, domain="L", complete_ms=seq * 10)
    return e


def test_an_indeterminate_commit_still_pending_explains_no_sealed_sequence():
    """Sequence 2 sealed by a commit told it failed; beside it one indeterminate commit whose id is still pending
    in the final lock item (it provably never sealed): unexplained 1 (old checker: 0 violations)."""
    events = [_commit("c1", 1), _commit("a", ok=False, error="ClientError: throttled"),
              _commit("x", ok=False, indeterminate=True), _commit("c3", 3, view_seq=2)]
    state = {"domains": {"L": {"seq": 3, "pending": ["x"]}}, "entries": []}
    report = check(events, state)
    assert report["unexplained_seals"] == 1 and report["details"]["unexplained_seals"][0]["sequences"] == [2]
    state["domains"]["L"]["pending"] = []  # its id no longer pending: it may be the one that sealed 2
    assert check(events, state)["unexplained_seals"] == 0


def test_an_indeterminate_s3_commit_explains_a_sequence_only_where_the_heads_record_names_it():
    events = [_commit("c1", 1), _commit("x", ok=False, indeterminate=True), _commit("c3", 3, view_seq=2)]
    state = {"domains": {"L": {"seq": 3, "sealed": {"1": "c1", "2": "a", "3": "c3"}}}, "entries": []}
    assert check(events, state)["unexplained_seals"] == 1  # the head says "a" sealed 2, not "x"
    state["domains"]["L"]["sealed"]["2"] = "x"
    assert check(events, state)["unexplained_seals"] == 0
    state["domains"]["L"]["sealed"] = {"3": "c3"}  # 2 is past the head's window: x may have sealed it
    assert check(events, state)["unexplained_seals"] == 0


@pytest.mark.parametrize("kind", ["per-model", "legacy", "sharded", "monolith"])
def test_a_namespace_no_fresh_fenced_reader_can_pull_is_a_violation(aws, clock, kind):
    """The checker asks what a user would: a fresh fenced reader pulls each namespace the history wrote. A
    version item (a shard object) removed from under the record that counts it leaves the model unreadable or
    short: ``unreadable`` 1 (the old checker read the table straight and could not see it)."""
    from harness.safety.fresh import with_fresh_reads

    events: list[dict] = []
    a = store(kind, aws, clock, "a", events, "one-lock")
    a.sync_run("m0", "get_uptime", 100, [])
    a.sync_run("m1", "get_uptime", 100, [])
    healthy = with_fresh_reads(a.backend, events, snapshot(a.backend))
    assert [r["ok"] for r in healthy["fresh_reads"]] == [True] and healthy["fresh_reads"][0]["read"] > 0
    assert check(events, healthy)["violations"] == 0
    ddb, s3 = aws
    if is_dynamodb(kind):
        items = ddb.scan(TableName="harness-test")["Items"]
        victim = next(i for i in items if i["pk"]["S"] == f"FILE#{LATEST}" and i["sk"]["S"].startswith("V#"))
        ddb.delete_item(TableName="harness-test", Key={"pk": victim["pk"], "sk": victim["sk"]})
    else:
        shard = next(o["Key"] for o in s3.list_objects_v2(Bucket="harness-test")["Contents"]
                     if ("_index/" in o["Key"] or ".datastore-index/" in o["Key"]) and "_meta.json" not in o["Key"])
        s3.delete_object(Bucket="harness-test", Key=shard)
    state = with_fresh_reads(a.backend, events, snapshot(a.backend))
    report = check(events, state)
    assert report["unreadable"] == 1, report["details"]["unreadable"]
    assert report["details"]["unreadable"][0]["namespace"] == "w1"


def test_a_release_whose_answer_is_lost_and_resend_fails_is_recorded_as_a_release(aws, clock):
    """Found by the new explorer (``lost-then`` at a release): the release lands, its answer is lost, the resend
    fails with a 5xx; the holder's next grant comes at once (the lock is free). The release is recorded (its
    outcome unknown), so the checker sees no two leases at once (old code: nothing recorded, lease overlaps 1)."""
    events: list[dict] = []
    a = store("per-model", aws, clock, "a", events, "one-lock")
    armed = lose_answer(a.backend.client, second_clients()[0], "dynamodb", "UpdateItem",
                        lambda p: str(p.get("UpdateExpression", "")).startswith("REMOVE nonce"), then="InternalError")
    run_a(a)
    assert armed["lost"] == 1 and armed["resent"] == 1, "the interleaving did not happen"
    a.sync_run("m0", "get_load", 100, [])
    releases = [e for e in events if e.get("type") == "release"]
    assert releases[0].get("indeterminate") and not releases[0]["ok"]
    report = check(events, snapshot(a.backend))
    assert report["lease_overlaps"] == 0 and report["violations"] == 0, report["details"]
