"""The fencing protocol's invariants (docs/safety.md, "The fencing protocol"), held against every layout alike.

One suite, both backends: each invariant runs on DynamoDB (per-model and
legacy GSI) and S3 (sharded and monolith index), so the two implementations
cannot disagree on one again (issue 43's hole 7 was S3's prune fencing
nothing DynamoDB's fenced). Not to be confused with
``test_dynamodb_conformance.py``, which holds the DynamoDB stand-ins to each
other. In-process moto, a FakeClock, botocore hooks; the checker's verdict on
each history is part of every assertion.
"""

from __future__ import annotations

import pytest

from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.catalog import Catalog
from harness.datastore.errors import CommitIndeterminateError, FencedError
from harness.datastore.sync import Datastore, SyncConfig
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import (
    FAST_LOCK,
    Actor,
    fail_once,
    fenced_grant,
    lose_answer,
    make_backend,
    second_clients,
)

KINDS = ["per-model", "legacy", "sharded", "monolith"]
DEFINITION = "w1/models/system/m/definition.yaml"


def store(kind, clients, clock, holder, events, *, sync="one-lock", index_commit="full"):
    cfg = SyncConfig(namespace="w1", lock_scope="namespace", index_commit="delta" if sync == "two-phase" else
                     index_commit, lock=FAST_LOCK, heartbeat=False, sync=sync, global_poll_s=0.05, record_views=True)
    s = Datastore(make_backend(kind, clients, clock=clock), Catalog(), cfg, clock=clock, holder=holder)
    s.record = events.append
    return s


def pair(aws, clock, kind, events, **kw):
    return store(kind, aws, clock, "a", events, **kw), store(kind, second_clients(), clock, "b", events, **kw)


def no_violations(events, backend) -> dict:
    report = check(events, snapshot(backend))
    assert report["violations"] == 0, report["details"]
    return report


def is_dynamodb(kind: str) -> bool:
    return kind in ("per-model", "legacy")


# ---- ids and keys ----------------------------------------------------------------------------------------------
class Writes:
    """Every key a client writes that a collection may delete (content, version items, shard objects): a
    lock item, the registry, a head, a lock object and the catalog export outside the index are records,
    written in place by design (conditionally, or never collected)."""

    def __init__(self, client) -> None:
        self.keys: list[str] = []
        service = client.meta.service_model.service_name
        if service == "s3":
            client.meta.events.register("before-parameter-build.s3.PutObject", self._object)
        else:
            client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", self._batch)
            client.meta.events.register("before-parameter-build.dynamodb.PutItem", self._item)

    def _object(self, params, **_) -> None:
        key = params["Key"]
        if not key.endswith(("_meta.json", ".datastore-index.json", ".lock", ".catalog-export.json")):
            self.keys.append(key)

    def _item(self, params, **_) -> None:
        self._keep(params["Item"])

    def _batch(self, params, **_) -> None:
        for reqs in params["RequestItems"].values():
            for r in reqs:
                if "PutRequest" in r:
                    self._keep(r["PutRequest"]["Item"])

    def _keep(self, item: dict) -> None:
        pk, sk = item["pk"]["S"], item["sk"]["S"]
        if pk.startswith("FILE#") and not sk.startswith("BLOB"):
            self.keys.append(f"{pk}|{sk}")


@pytest.mark.parametrize("kind", KINDS)
def test_no_key_is_written_by_two_commits_not_even_a_recreation_with_the_same_bytes(aws, clock, kind):
    """Content, version items and shard objects carry an id only their writer uses: a model deleted, pruned and
    re-created with the same definition bytes (version 1 each time), and full commits around it, write no key
    twice."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events)
    writes = [Writes(a.backend.client), Writes(b.backend.client)]
    for who, other in ((a, b), (b, a)):
        who.sync_run("m", "get_uptime", 100, [])
        other.sync_run("keep", "get_uptime", 100, [])  # a full commit: every entry written again, as new keys
        who.delete_model("m", [])
        who.prune([])
        clock.advance(0.1)
    keys = [k for w in writes for k in w.keys]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, f"written by two commits: {twice[:5]}"
    assert sum(1 for k in keys if "models/system/m/definition.yaml" in k) >= 2  # (written, each time anew)
    no_violations(events, a.backend)


# ---- seals -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_a_seal_is_refused_once_a_newer_holder_was_granted(aws, clock, kind):
    """The grant fences the seal: a holder frozen past its TTL before its commit, while another holder commits,
    is refused and leaves nothing visible."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events, index_commit="delta")
    a.sync_run("m", "get_uptime", 100, [])

    def taken_over(point: str) -> float:
        a.pauses = None
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m", "get_load", 100, [])
        return 0.0

    a.pauses = taken_over
    with pytest.raises(FencedError):
        a.sync_run("m", "get_memory", 100, [])
    assert not [e for e in snapshot(a.backend)["entries"] if "/memory/" in e["path"]]
    no_violations(events, a.backend)


@pytest.mark.parametrize("kind", KINDS)
def test_a_seal_is_refused_when_the_index_moved_since_the_holders_view(aws, clock, kind):
    """The seal asserts the sequence the holder's view was pulled at: a commit against an older view is refused
    (the store unchanged), one against the current view seals."""
    be = make_backend(kind, aws, clock=clock)
    grant = fenced_grant(be, ".locks/w1.lock", clock)
    entry = FileMeta("w1/data/system/m/x/1/raw", 1, "d1", 1)
    first = be.commit("w1", [entry], grant, Work(), base_seq=0, cid="c0000000000000001")
    before = snapshot(be)["entries"]
    with pytest.raises(FencedError):
        be.commit("w1", [FileMeta("w1/data/system/m/x/1/raw", 1, "d2", 2, 2)], grant, Work(), base_seq=0,
                  cid="c0000000000000002")
    assert snapshot(be)["entries"] == before
    assert be.commit("w1", [FileMeta("w1/data/system/m/x/2/raw", 1, "d3", 3)], grant, Work(),
                     base_seq=first.seq, cid="c0000000000000003").seq == first.seq + 1


# ---- a commit's fate --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_a_landed_seal_is_acknowledged_whoever_holds_the_lock_when_it_is_retried(aws, clock, kind):
    """A commit's fate is read from its record, never from the lock's holder: the seal lands, its answer is lost,
    another holder builds on it before botocore sends it again and is refused; the commit is acknowledged
    (or at worst indeterminate), never refused while visible, and nothing of it is undone."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events, index_commit="delta")
    a.sync_run("m0", "get_uptime", 100, [])
    s3 = not is_dynamodb(kind)
    other = second_clients()[1 if s3 else 0]

    def b_builds_on_it() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m0", "get_load", 100, [])

    def arm(point: str) -> float:
        if s3:
            lose_answer(a.backend.client, other, "s3", "PutObject",
                        lambda p: p["Key"].endswith(("_meta.json", ".datastore-index.json")) and "IfMatch" in p
                        and b'"cid"' in bytes(p.get("Body", b"")), meanwhile=b_builds_on_it)
        else:
            lose_answer(a.backend.client, other, "dynamodb", "UpdateItem",
                        lambda p: "#s = :new" in str(p.get("UpdateExpression", "")), meanwhile=b_builds_on_it)
        return 0.0

    a.pauses = arm
    a.sync_run("m0", "get_uptime", 100, [])
    mine = [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]
    assert mine["ok"], mine.get("error")
    final = {e["path"]: e["version"] for e in snapshot(a.backend)["entries"]}
    assert final["w1/data/system/m0/uptime/latest"] == 2 and "w1/data/system/m0/load/latest" in final
    no_violations(events, a.backend)


def _arm_lost_seal(a, kind, then, meanwhile=None) -> dict:
    """At A's commit: its seal lands, its answer is lost, and botocore's resend meets ``then``."""
    s3 = not is_dynamodb(kind)
    other = second_clients()[1 if s3 else 0]
    armed: dict = {}

    def arm(point: str) -> float:
        if s3:
            armed["state"] = lose_answer(a.backend.client, other, "s3", "PutObject",
                                         lambda p: p["Key"].endswith(("_meta.json", ".datastore-index.json"))
                                         and "IfMatch" in p and b'"cid"' in bytes(p.get("Body", b"")),
                                         meanwhile=meanwhile, then=then)
        else:
            armed["state"] = lose_answer(a.backend.client, other, "dynamodb", "UpdateItem",
                                         lambda p: "#s = :new" in str(p.get("UpdateExpression", "")),
                                         meanwhile=meanwhile, then=then)
        return 0.0

    a.pauses = arm
    return armed


@pytest.mark.parametrize("then", ["throttled", "InternalError"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_landed_seal_whose_resend_fails_otherwise_is_acknowledged_by_its_fate_record(aws, clock, kind, then):
    """The rule after ANY failed seal (issue 55): the seal lands, its answer is lost, the resend is throttled
    past botocore's retries (or a server error): the fate record says sealed, so it is acknowledged and nothing
    of it is undone, on every layout."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events, index_commit="delta")
    a.sync_run("m0", "get_uptime", 100, [])
    b.sync_run("m1", "get_uptime", 100, [])
    code = then if then != "throttled" else ("ProvisionedThroughputExceededException" if is_dynamodb(kind)
                                             else "SlowDown")
    armed = _arm_lost_seal(a, kind, code)
    a.sync_run("m0", "get_load", 100, [])
    assert armed and armed["state"]["resent"] == 1, "the resend never failed"
    mine = [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]
    assert mine["ok"], mine.get("error")
    final = {e["path"]: e for e in snapshot(a.backend)["entries"]}
    assert {"w1/data/system/m0/load/latest", "w1/data/system/m1/uptime/latest"} <= set(final)
    assert all(e["content_digest"] == e["digest"] for e in final.values())
    no_violations(events, a.backend)


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_seal_whose_fate_cannot_be_read_is_indeterminate_and_nothing_is_undone(aws, clock, kind):
    """The seal lands, its answer is lost, the resend is throttled and so is the fate read: whether it sealed
    cannot be known, so the commit is indeterminate (``CommitIndeterminateError``) and what it wrote stays."""
    events: list[dict] = []
    a, _ = pair(aws, clock, kind, events, index_commit="delta")
    a.sync_run("m0", "get_uptime", 100, [])
    failed: list = []

    def fate_read_fails() -> None:
        if is_dynamodb(kind):
            failed.append(fail_once(a.backend.client, "GetItem", lambda p: p["Key"]["pk"]["S"].startswith("LOCK#")))
        else:
            failed.append(fail_once(a.backend.client, "GetObject", lambda p: p["Key"].endswith(
                ("_meta.json", ".datastore-index.json")), code="SlowDown"))

    armed = _arm_lost_seal(a, kind, "InternalError", meanwhile=fate_read_fails)
    with pytest.raises(CommitIndeterminateError):
        a.sync_run("m0", "get_load", 100, [])
    assert armed["state"]["resent"] == 1 and failed and failed[0], "the interleaving did not happen"
    mine = [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]
    assert not mine["ok"] and mine["indeterminate"]
    final = {e["path"]: e for e in snapshot(a.backend)["entries"]}
    assert "w1/data/system/m0/load/latest" in final  # it had sealed: nothing of it was undone
    assert all(e["content_digest"] == e["digest"] for e in final.values())
    no_violations(events, a.backend)


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_commit_leaves_nothing_visible_and_deletes_only_its_own(aws, clock, kind):
    """Cut short before its seal (its index write throttled past botocore's retries), a commit undoes what it
    wrote and nothing else: the index as it was, every entry's content there."""
    events: list[dict] = []
    a, b = pair(aws, clock, kind, events, index_commit="delta")
    a.sync_run("m", "get_uptime", 100, [])
    b.sync_run("n", "get_uptime", 100, [])
    before = snapshot(a.backend)
    if is_dynamodb(kind):
        failed = fail_once(a.backend.client, "BatchWriteItem", lambda p: "'V#" in repr(p) and "PutRequest" in repr(p))
    else:
        failed = fail_once(a.backend.client, "PutObject", lambda p: "_index/" in p["Key"] or ".datastore-index/" in
                           p["Key"], code="SlowDown")
    with pytest.raises(Exception):  # noqa: B017 - the throttle, handed on
        a.sync_run("m", "get_load", 100, [])
    assert failed
    after = snapshot(a.backend)
    assert sorted((e["path"], e["version"], e["digest"]) for e in after["entries"]) == \
        sorted((e["path"], e["version"], e["digest"]) for e in before["entries"])
    assert all(e["content_digest"] == e["digest"] for e in after["entries"])
    no_violations(events, a.backend)


# ---- what a delete and a prune fence ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["delete", "delete and prune"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_delete_or_prune_of_a_model_fences_its_two_phase_holder(aws, clock, kind, op):
    """A holds m's model lock (scoped pull done, content uploaded) and waits for the global lock; D deletes m (and
    prunes it): A's commit, from a view of m that no longer holds, is refused on every layout."""
    events: list[dict] = []
    d = store(kind, aws, clock, "d", events, sync="two-phase")
    a = store(kind, second_clients(), clock, "a", events, sync="two-phase")
    d.sync_run("m", "get_uptime", 100, [])
    actor = Actor(a, lambda: a.sync_run("m", "get_uptime", 100, []))  # A's catalog lacks m: it stages its definition
    actor.start_until_paused()
    d.delete_model("m", [])
    if op != "delete":
        assert d.prune([]).models == [("system", "m")]
    with pytest.raises(FencedError):
        actor.finish()
    final = {e["path"] for e in snapshot(d.backend)["entries"]}
    assert DEFINITION not in final
    no_violations(events, d.backend)


# ---- what a collection may delete -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_a_collection_run_however_late_deletes_only_garbage(aws, clock, kind):
    """Garbage is collected after the release, and may be late by any time: D deletes m and its collection waits
    while E re-creates m with the same bytes and syncs twice; then D's collection runs. Nothing live was in it."""
    events: list[dict] = []
    d, e = pair(aws, clock, kind, events)
    d.sync_run("m", "get_uptime", 100, [])
    late: list = []
    real = d.backend.collect_after
    d.backend.collect_after = lambda grant, work: late.append(grant)  # noqa: ARG005 - run below, later
    d.delete_model("m", [])
    assert late, "the delete left nothing to collect"
    e.sync_run("m", "get_load", 100, [])
    e.sync_run("m", "get_uptime", 100, [])
    for grant in late:
        real(grant, Work())
    final = snapshot(d.backend)["entries"]
    assert DEFINITION in {x["path"] for x in final}
    assert all(x["content_digest"] == x["digest"] for x in final), [x for x in final if x["content_digest"] is None]
    no_violations(events, d.backend)


# ---- views --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["per-model", "legacy"])
def test_a_gsi_answer_is_taken_only_when_it_holds_every_sealed_version(aws, clock, kind):
    """Each of a reader's GSI answers misses one sealed item, once, at random places below the newest commit:
    the reader's views are whole every time (its pull reads again until what it holds has the record's digest)."""
    from tests.conftest import hide_from_gsi

    events: list[dict] = []
    w, r = pair(aws, clock, kind, events)
    hidden: list = []
    for i, name in enumerate(("raw", "metadata.yaml", "latest", "definition.yaml")):
        w.sync_run("m", "get_uptime", 100, [])
        if i == 3:
            w.delete_model("m", [])
        hidden.append(hide_from_gsi(r.backend.client, lambda p: True, lambda it, n=name: it["relPath"]["S"]
                                    .endswith(n) and int(it.get("s", {}).get("N", 0)) > 0))
        r.pull(Work())
        assert r.local == {k: v for k, v in w.local.items() if k in r.local} and set(r.local) == set(w.local)
    assert sum(1 for h in hidden if h) >= 3, "hardly anything was hidden"
    report = no_violations(events, w.backend)
    assert report["pulls_checked"] >= 4
