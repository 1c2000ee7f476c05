"""The safety checker: history + final state -> lost, phantom, anomalies, overlaps (and it can fail)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.datastore.catalog import Catalog
from harness.datastore.lock import LockConfig
from harness.datastore.sync import Datastore
from harness.datastore.variant import Variant
from harness.record.writer import HistoryWriter
from harness.safety.checker import check
from harness.safety.history import read_events
from harness.safety.state import capture, read_state, snapshot
from tests.conftest import make_backend, make_store

LOCK = LockConfig(ttl_s=3, wait_s=2, retry_s=0.05, retry_cap_s=0.1)
KINDS = ["per-model", "legacy", "sharded", "monolith"]


def two_writers(aws, clock, kind, fencing=True):
    """Workers a and b on one shared namespace and one shared model; one shared history."""
    be = make_backend(kind, aws, clock=clock, variant=Variant(fenced=fencing))
    events: list[dict] = []
    stores = []
    for who in ("a", "b"):
        s = make_store(be, None, lock_scope="datastore", clock=clock, holder=who, lock=LOCK)
        s.record = events.append
        stores.append(s)
    return be, events, stores[0], stores[1]


def run_some(a, b, n=3, clock=None):
    for i in range(n):
        for s in (a, b):
            s.clock.advance(0.05)  # (time moves between syncs, as it does: pulls ask for "changed since")
            s.sync_run("shared", ["get_uptime", "get_load"][i % 2], 100, [])


@pytest.mark.parametrize("kind", KINDS)
def test_a_clean_run_has_no_violations(aws, clock, kind):
    be, events, a, b = two_writers(aws, clock, kind)
    run_some(a, b)
    report = check(events, snapshot(be))
    assert report["acknowledged"] == 6 and report["attempted"] == 6
    assert report["violations"] == 0 and report["lost"] == report["phantom"] == report["corrupt"] == 0
    assert report["acquisitions"] == 6 and report["overlaps"] == 0
    assert report["entries"] == len(a.local | b.local) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_the_checker_reports_a_deleted_entry_and_a_foreign_one(aws, clock, kind):
    """Corrupt the final state: an acknowledged entry goes missing, a foreign one appears: both found."""
    be, events, a, b = two_writers(aws, clock, kind)
    run_some(a, b)
    state = snapshot(be)
    victim = next(e for e in state["entries"] if e["path"].endswith("/latest"))
    state["entries"] = [e for e in state["entries"] if e is not victim]
    state["entries"].append({"path": "data/system/shared/x/9/raw", "version": 1, "digest": "beef", "size": 3,
                             "content_digest": "beef"})
    report = check(events, state)
    assert report["lost"] == 1 and report["phantom"] == 1 and report["violations"] == 2
    assert report["details"]["lost"][0]["path"] == victim["path"]
    assert report["details"]["lost"][0]["why"] == "missing"
    assert report["details"]["phantom"][0] == {"path": "data/system/shared/x/9/raw", "found": [1, "beef"],
                                               "from": "no commit in the history"}


def test_the_checker_sees_corruption_made_in_the_store_itself(aws, clock):
    """The same through the real table: delete an index item, add one nobody committed, break content."""
    be, events, a, b = two_writers(aws, clock, "per-model")
    run_some(a, b)
    latest = next(r for r in b.local if r.endswith("/latest"))
    visible_item = b._cursor["dynamodb"].refs[latest].sk  # the item readers see for it (one per version)
    be.client.delete_item(TableName=be.table, Key={"pk": {"S": f"FILE#{latest}"}, "sk": {"S": visible_item}})
    from harness.datastore.backends.base import FileMeta
    from harness.datastore.backends.dynamodb.items import meta_item

    foreign = FileMeta("data/system/shared/x/9/raw", 3, "beef", 1, 1)
    be.client.put_item(TableName=be.table, Item=meta_item(be.gsi_layout, None, foreign))
    raw = next(m for r, m in b.local.items() if r.endswith("/raw"))
    from harness.datastore.backends.dynamodb import chunk_key

    chunk = {"pk": {"S": f"FILE#{raw.rel_path}"}, "sk": {"S": chunk_key(raw.version, raw.digest, 0, raw.content_id)}}
    be.client.put_item(TableName=be.table, Item={**chunk, "data": {"B": b"x"}})
    report = check(events, snapshot(be))
    assert (report["lost"], report["phantom"], report["corrupt"]) == (1, 1, 2)  # the foreign one has no content
    assert {d["path"] for d in report["details"]["corrupt"]} == {raw.rel_path, foreign.rel_path}


def stale_commit(aws, clock, kind, fencing, writers=None):
    """a pushes, then freezes past its TTL; b takes the lock and syncs the same model; then a commits."""
    be, events, a, b = (writers or two_writers)(aws, clock, kind, fencing)
    run_some(a, b, 2)

    def freeze(point: str) -> float:
        clock.advance(LOCK.ttl_s + 0.5)  # a's lease runs out while it is frozen...
        b.sync_run("shared", "get_uptime", 100, [])  # ...and b commits the same model meanwhile
        clock.advance(0.01)  # (b's sync took time)
        return 0.0

    a.pauses = freeze
    outcome = None
    try:
        a.sync_run("shared", "get_uptime", 100, [])
    except Exception as e:  # noqa: BLE001
        outcome = e
    a.pauses = None
    return be, events, outcome


@pytest.mark.parametrize("kind", KINDS)
def test_fencing_refuses_the_stale_commit(aws, clock, kind):
    be, events, outcome = stale_commit(aws, clock, kind, fencing=True)
    assert type(outcome).__name__ == "FencedError"
    report = check(events, snapshot(be))
    assert report["violations"] == 0, report["details"]
    assert report["overlaps"] == 1 and report["unsafe_overlaps"] == 0 and report["lease_overlaps"] == 0
    assert report["refused"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_without_fencing_the_stale_commit_lands_and_the_checker_names_the_damage(aws, clock, kind):
    be, events, outcome = stale_commit(aws, clock, kind, fencing=False)
    assert outcome is None  # swamp's commit: nothing refuses it
    report = check(events, snapshot(be))
    # a's commit, built on a view from before b's, replaced b's uptime/2/raw and metadata.yaml (its latest
    # says "2" as b's did: same version, same content, nothing lost there)
    assert report["lost"] == 2
    assert {d["path"].rsplit("/", 1)[-1] for d in report["details"]["lost"]} == {"raw", "metadata.yaml"}
    assert all(d["why"].startswith("overwritten by commit") for d in report["details"]["lost"])
    assert report["sequence_anomalies"] >= 1 and report["unsafe_overlaps"] == 1
    assert report["details"]["sequence_anomalies"][0]["kind"].startswith("stale view")
    assert report["violations"] >= 3


def test_phantom_from_a_failed_commit(aws, clock):
    """An entry readers see that only a failed commit wrote is a phantom, named as such."""
    be, events, a, b = two_writers(aws, clock, "per-model")
    run_some(a, b, 1)
    state = snapshot(be)
    events.append({"type": "commit", "ok": False, "cid": "x", "key": "k", "fence": 9, "nonce": "n",
                   "invoke_ms": 0, "writes": [["data/system/shared/zz", 1, "feed", 1]], "deletes": []})
    state["entries"].append({"path": "data/system/shared/zz", "version": 1, "digest": "feed", "size": 1,
                             "content_digest": "feed"})
    report = check(events, state)
    assert report["phantom"] == 1 and report["details"]["phantom"][0]["from"] == "a failed commit"


def test_sequence_anomalies_from_the_history_alone():
    base = {"type": "commit", "ok": True, "key": "L", "domain": "L", "writes": [], "deletes": []}
    events = [
        {**base, "cid": "c1", "seq": 1, "base": 0, "view_seq": 0, "fence": 1, "nonce": "n1", "invoke_ms": 0},
        {**base, "cid": "c2", "seq": 2, "base": 1, "view_seq": 1, "fence": 3, "nonce": "n3", "invoke_ms": 0},
        {**base, "cid": "c3", "seq": 3, "base": 2, "view_seq": 1, "fence": 2, "nonce": "n2", "invoke_ms": 0},
        {**base, "cid": "c4", "seq": 3, "base": 2, "view_seq": 2, "fence": 4, "nonce": "n4", "invoke_ms": 0},
    ]
    report = check(events, {"entries": []})
    kinds = {d["cid"]: d["kind"] for d in report["details"]["sequence_anomalies"]}
    assert kinds["c3"].startswith("stale view: 1 commit")
    assert kinds["c4"] == "duplicate sequence"
    assert report["sequence_anomalies"] == 2
    # without the view, a commit sealed after a newer fence is still caught
    events[2]["view_seq"] = 2
    kinds = {d["cid"]: d["kind"] for d in check(events, {"entries": []})["details"]["sequence_anomalies"]}
    assert kinds["c3"] == "sealed after fence 3 of the same lock"


def test_overlaps_believed_versus_lease():
    g = {"type": "grant", "key": "L", "attempts": 1}
    events = [
        {**g, "nonce": "a", "fence": 1, "holder": "a", "granted_ms": 0, "expires_ms": 300},
        {"type": "renew", "nonce": "a", "ok": True, "expires_ms": 400},
        {**g, "nonce": "b", "fence": 2, "holder": "b", "granted_ms": 450, "expires_ms": 750, "attempts": 3},
        {"type": "release", "nonce": "b", "invoke_ms": 500, "ok": True},
        {"type": "commit", "ok": True, "nonce": "a", "cid": "late", "key": "L", "fence": 1, "seq": 2, "base": 1,
         "invoke_ms": 600, "complete_ms": 610, "writes": [], "deletes": []},
        {"type": "release", "nonce": "a", "invoke_ms": 620, "ok": False},
    ]
    report = check(events, {"entries": []})
    assert report["overlaps"] == 1 and report["lease_overlaps"] == 0  # a's lease ended at 400 < 450
    assert report["unsafe_overlaps"] == 1  # a's commit started at 600, after b's grant at 450, and was accepted
    assert report["details"]["unsafe_overlaps"][0]["accepted_commits"] == ["late"]
    assert report["contended"] == 1 and report["acquisitions"] == 2  # b retried (attempts 3)
    events[2]["granted_ms"] = 350  # b granted inside a's renewed lease: the lock itself is broken
    assert check(events, {"entries": []})["lease_overlaps"] == 1


def test_history_and_state_round_trip_through_the_run_directory(aws, clock, tmp_path):
    be, events, a, b = two_writers(aws, clock, "sharded")
    run_some(a, b, 2)
    writer = HistoryWriter(tmp_path, tag="local", flush_every_s=0)
    writer.add(events[:3])
    writer.add(events[3:])
    writer.flush()
    last = sorted((tmp_path / "history").glob("*.jsonl"))[-1]
    with last.open("a") as f:
        f.write('{"type": "comm')  # a line cut short (a file written by hand, or by an older writer)
    (tmp_path / "history" / "part-x.jsonl.tmp").write_text('{"type": "commit"')  # a flush a crash cut short
    assert read_events(tmp_path) == json.loads(json.dumps(events))
    captured = capture(be, tmp_path)
    back = read_state(tmp_path)
    assert back["entries"] == captured["entries"] and back["backend"] == "s3"
    assert check(read_events(tmp_path), back)["violations"] == 0


class _Cut(BaseException):
    """The run ending under a commit (Locust kills the greenlet): not an ordinary failure."""


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_a_commit_cut_short_after_its_seal_is_whole_and_indeterminate(aws, clock, kind):
    """The seal (S3: the _meta.json swap) landed, then the worker was cut short before it heard back:
    nothing is undone (a half-reverted sealed commit would be visible), and the checker counts it as
    indeterminate, not as phantom."""
    be, events, a, b = two_writers(aws, clock, kind)
    run_some(a, b, 1)
    sealing = []

    shards: list[str] = []

    def watch(params, model, **_):  # the seal: DynamoDB's UpdateItem that sets seq; S3's _meta.json swap that
        key = params.get("Key")  # follows the commit's shard writes (the lock step writes the head too: its fence)
        expr = params.get("UpdateExpression", "")
        head = isinstance(key, str) and key.endswith("_meta.json")
        if isinstance(key, str) and "_index/" in key and not head:
            shards.append(key)
        sealing[:] = [("SET #s = :new" in expr and "DELETE pending" in expr) or (head and bool(shards))]

    def cut(**_):
        if sealing and sealing[0]:
            raise _Cut()

    op = "UpdateItem" if kind == "per-model" else "PutObject"
    service = be.client.meta.service_model.service_name
    be.client.meta.events.register(f"before-parameter-build.{service}.{op}", watch)
    be.client.meta.events.register(f"after-call.{service}.{op}", cut)
    a.clock.advance(0.05)
    with pytest.raises(_Cut):
        a.sync_run("shared", "get_memory", 100, [])
    state = snapshot(be)
    written = [c for c in events if c["type"] == "commit"][-1]
    assert written["indeterminate"] and not written["ok"]
    visible = {(e["path"], e["version"], e["digest"]) for e in state["entries"]}
    assert all((p, v, d) in visible for p, v, d, _ in written["writes"])  # sealed, so whole
    report = check(events, state)
    assert report["indeterminate"] == 1 and report["phantom"] == 0 and report["violations"] == 0


def test_contended_counts_grants_made_while_someone_waited():
    """a releases and re-acquires at once (first attempt) while b has been waiting since 100: contended."""
    g = {"type": "grant", "key": "L", "attempts": 1, "expires_ms": 10_000}
    events = [
        {**g, "nonce": "a1", "fence": 1, "holder": "a", "started_ms": 0, "granted_ms": 0},
        {**g, "nonce": "a2", "fence": 2, "holder": "a", "started_ms": 500, "granted_ms": 500},
        {**g, "nonce": "b1", "fence": 3, "holder": "b", "started_ms": 100, "granted_ms": 900, "attempts": 6},
        {**g, "nonce": "a3", "fence": 4, "holder": "a", "started_ms": 950, "granted_ms": 950},
        {"type": "lock_timeout", "key": "L", "holder": "c", "invoke_ms": 2000, "end_ms": 3000, "attempts": 9},
        {**g, "nonce": "a4", "fence": 5, "holder": "a", "started_ms": 2500, "granted_ms": 2500},
        {**g, "nonce": "x1", "fence": 1, "key": "other", "holder": "x", "started_ms": 2400, "granted_ms": 2600},
    ]
    report = check(events, {"entries": []})
    # a2 (b was waiting), b1 (it retried), a4 (c was waiting); not a1 or a3 (nobody waiting), not x1 (other key)
    assert report["acquisitions"] == 6 and report["contended"] == 3 and report["lock_timeouts"] == 1


def test_a_delete_cut_short_by_the_end_of_the_run_may_have_landed():
    """Found in a lifecycle-safety run: the run ended under a model's delete (GreenletExit, indeterminate), the
    delete had landed, and the checker called the definition it removed lost. Either outcome is fine."""
    write = {"type": "commit", "ok": True, "seq": 1, "cid": "w", "key": "L", "fence": 1, "invoke_ms": 10,
             "complete_ms": 20, "writes": [["p", 1, "d", 3]], "deletes": []}
    cut = {"type": "commit", "ok": False, "indeterminate": True, "cid": "x", "key": "L", "fence": 2,
           "invoke_ms": 30, "complete_ms": 40, "writes": [], "deletes": [["p", 1, "d"]], "error": "GreenletExit: "}
    present = {"entries": [{"path": "p", "version": 1, "digest": "d", "size": 3, "content_digest": "d"}]}
    assert check([write, cut], {"entries": []})["lost"] == 0  # it landed
    assert check([write, cut], present)["violations"] == 0  # it did not
    early = {**cut, "invoke_ms": 5, "complete_ms": 8}  # a delete cut short before the write cannot explain it
    assert check([early, write], {"entries": []})["lost"] == 1


def test_two_phase_views_are_their_models_and_model_fences_only_go_up():
    """A two-phase commit saw only its model (a scoped pull): other models' commits in between are fine."""
    base = {"type": "commit", "ok": True, "key": "G", "domain": "G", "writes": [], "deletes": [], "invoke_ms": 0,
            "view_scope": "model"}
    events = [
        {**base, "cid": "a1", "seq": 1, "view_seq": 0, "fence": 1, "nonce": "g1", "model_key": "m/a", "model_fence": 1},
        {**base, "cid": "b1", "seq": 2, "view_seq": 0, "fence": 2, "nonce": "g2", "model_key": "m/b", "model_fence": 1},
    ]
    assert check(events, {"entries": []})["sequence_anomalies"] == 0  # b's view missed a's commit: another model
    events.append({**base, "cid": "a2", "seq": 3, "view_seq": 0, "fence": 3, "nonce": "g3", "model_key": "m/a",
                   "model_fence": 2})
    kinds = {d["cid"]: d["kind"] for d in check(events, {"entries": []})["details"]["sequence_anomalies"]}
    assert kinds == {"a2": "stale view: 1 commit(s) sealed between its view and its seal"}  # a1: its own model
    events[2].update(view_seq=1)
    events.append({**base, "cid": "a3", "seq": 4, "view_seq": 3, "fence": 4, "nonce": "g4", "model_key": "m/a",
                   "model_fence": 1})  # a model lock holder older than a2's sealed after it
    kinds = {d["cid"]: d["kind"] for d in check(events, {"entries": []})["details"]["sequence_anomalies"]}
    assert kinds == {"a3": "sealed after fence 2 of its model's lock"}


def test_a_stale_model_holders_accepted_commit_is_an_unsafe_overlap_of_the_model_lock():
    g = {"type": "grant", "key": "m/a/.lock", "attempts": 1}
    events = [
        {**g, "nonce": "a", "fence": 1, "holder": "a", "granted_ms": 0, "expires_ms": 300},
        {**g, "nonce": "b", "fence": 2, "holder": "b", "granted_ms": 400, "expires_ms": 700},
        {"type": "grant", "key": "G", "attempts": 1, "nonce": "ga", "fence": 5, "holder": "a", "granted_ms": 450,
         "expires_ms": 750},
        {"type": "commit", "ok": True, "nonce": "ga", "model_nonce": "a", "model_key": "m/a/.lock",
         "model_fence": 1, "cid": "late", "key": "G", "fence": 5, "seq": 1, "invoke_ms": 460, "seal_ms": 470,
         "complete_ms": 480, "writes": [], "deletes": []},
        {"type": "release", "nonce": "a", "invoke_ms": 490, "ok": False},  # a acted on its model lock until here
    ]
    report = check(events, {"entries": []})
    assert report["unsafe_overlaps"] == 1
    assert report["details"]["unsafe_overlaps"][0]["key"] == "m/a/.lock"  # the model lock's, not the global one's


def _two_phase_writers(aws, clock, kind, fencing):
    be = make_backend(kind, aws, clock=clock, variant=Variant(fenced=fencing))
    events: list[dict] = []
    stores = []
    for who in ("a", "b"):
        cfg = replace(make_store(be, "w1", lock=LOCK).cfg, sync="two-phase")
        stores.append(Datastore(be, Catalog(), cfg, clock=clock, holder=who, recorder=events.append))
    return be, events, stores[0], stores[1]


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
@pytest.mark.parametrize("fencing", [True, False])
def test_two_phase_histories_are_checked_fenced_clean_unfenced_damaged(aws, clock, kind, fencing):
    """Two workers on one model under two-phase sync; a freezes with its model lock held, b syncs the model."""
    be, events, outcome = stale_commit(aws, clock, kind, fencing, writers=_two_phase_writers)
    keys = {e["key"] for e in events if e.get("type") == "grant"}
    assert keys == {".locks/w1.lock", "w1/data/system/shared/.lock"}  # the global and the model's, in the history
    report = check(events, snapshot(be))
    if fencing:
        assert type(outcome).__name__ == "FencedError" and report["violations"] == 0, report["details"]
        assert report["refused"] == 1
    else:
        assert outcome is None and report["lost"] >= 1 and report["unsafe_overlaps"] >= 1
        assert any(d["key"].endswith("/.lock") and "data/" in d["key"]
                   for d in report["details"]["unsafe_overlaps"])  # the model lock's overlap


# ---- undone data (issue 43, item 6): seals no commit that may have landed explains, readers losing what they read
def _c(cid, seq=None, ok=True, writes=(), deletes=(), **kw):
    e = {"type": "commit", "ok": ok, "cid": cid, "key": "L", "fence": 1, "nonce": cid, "invoke_ms": 0,
         "writes": [list(w) for w in writes], "deletes": [list(d) for d in deletes], **kw}
    if ok:
        e.update(seq=seq, base=seq - 1, domain="L", complete_ms=seq * 10)
    return e


def _pull(seq, view, holder="b"):
    return {"type": "pull", "holder": holder, "namespace": "w1", "domain": "L", "seq": seq, "scope": None,
            "fencing": True, "view": [list(v) for v in view], "view_size": len(view), "invoke_ms": seq * 10 + 5,
            "complete_ms": seq * 10 + 6}


def _state(entries, seq=None):
    return {"domains": {"L": {"seq": seq}} if seq is not None else {},
            "entries": [{"path": p, "version": v, "digest": d, "size": 1, "content_digest": d} for p, v, d in entries]}


P0, PA, PB = "w1/data/system/m0/uptime/latest", "w1/data/system/m1/uptime/latest", "w1/outputs/system/m2/r.yaml"


def hole8(a_outcome: dict):
    """Issue 43's hole 8: A seals at 2 (new paths only), its answer is lost and A is frozen past its TTL; B pulls
    at 2 (A's entry in its view) and commits on top at 3; A's retried seal is refused and its undo deletes its
    items. The final state lacks A's entry; nothing in the history removed it."""
    events = [_c("p", 1, writes=[(P0, 1, "d0", 1)]),
              _c("a", ok=False, writes=[(PA, 1, "da", 1)], **a_outcome),
              _pull(2, [(P0, 1, "d0"), (PA, 1, "da")]),
              _c("b", 3, writes=[(PB, 1, "db", 1)], view_seq=2)]
    return events, _state([(P0, 1, "d0"), (PB, 1, "db")], seq=3)


def test_hole_8_a_refused_commit_that_had_sealed_and_was_undone_under_a_reader_is_three_violations():
    events, state = hole8({"error": "FencedError: commit rejected: lock L (fence 1) is no longer held"})
    report = check(events, state)
    # before item 6 this history had 0 violations: A's word "refused" was taken, and the view's extra entry ignored
    assert (report["lost"], report["phantom"], report["sequence_anomalies"]) == (0, 0, 0)
    assert report["unexplained_seals"] == 1  # sequence 2 was sealed, and no acknowledged commit sealed it
    assert report["details"]["unexplained_seals"][0]["sequences"] == [2]
    assert report["details"]["unexplained_seals"][0]["refused_commits"] == ["a"]
    assert report["torn_reads"] == 1  # B's view at 2 held an entry no acknowledged commit wrote
    assert report["details"]["torn_reads"][0]["paths"] == [
        {"path": PA, "sealed": None, "seen": [1, "da"],
         "why": "no acknowledged commit sealed at or below the view's sequence wrote it"}]
    assert report["lost_reads"] == 1  # ... and it is gone at the end, with nothing after the view removing it
    assert report["details"]["lost_reads"][0]["paths"] == [{"path": PA, "read": [1, "da"], "now": None}]
    assert report["violations"] == 3


def test_hole_8_with_an_indeterminate_writer_is_explained():
    """The same history where A was told its outcome is unknown (as a lost answer should leave it): A may have
    sealed 2, so the sequence, the view and the entry's fate are all explained."""
    events, state = hole8({"indeterminate": True, "error": "ReadTimeoutError: lost"})
    report = check(events, state)
    assert report["unexplained_seals"] == report["torn_reads"] == report["lost_reads"] == 0
    assert report["violations"] == 0


def test_every_sealed_sequence_needs_an_acknowledged_or_indeterminate_commit():
    events = [_c("c1", 1, writes=[(P0, 1, "d1", 1)]), _c("c3", 3, writes=[(P0, 2, "d3", 1)])]
    state = _state([(P0, 2, "d3")], seq=3)
    assert check(events, state)["unexplained_seals"] == 1  # 2 sealed by nobody the history knows
    assert check(events + [_c("x", ok=False, indeterminate=True)], state)["unexplained_seals"] == 0
    assert check(events, state, untracked_ok=True)["unexplained_seals"] == 0  # a seeded run: commits unseen
    # the highest sequence anything saw counts: a pull at 4 claims a seal the final state's head may not show
    events.append(_pull(4, [(P0, 2, "d3")]))
    report = check(events, _state([(P0, 2, "d3")]))
    assert report["unexplained_seals"] == 2 and report["details"]["unexplained_seals"][0]["sequences"] == [2, 4]


def test_a_view_entry_no_acknowledged_commit_wrote_is_a_torn_read_unless_untracked():
    events = [_c("c1", 1, writes=[(P0, 1, "d1", 1)]), _pull(1, [(P0, 1, "d1"), (PB, 1, "dx")])]
    state = _state([(P0, 1, "d1"), (PB, 1, "dx")], seq=1)
    report = check(events, state)
    assert report["torn_reads"] == 1 and report["details"]["torn_reads"][0]["paths"][0]["path"] == PB
    assert check(events, state, untracked_ok=True)["torn_reads"] == 0  # seeded data nobody in the history wrote
    events.insert(1, _c("c2", 2, writes=[(PB, 1, "dx", 1)]))  # written, but sealed after the view's sequence
    assert check(events, state)["torn_reads"] == 1


def test_a_reader_losing_what_it_read_is_a_violation_unless_a_later_commit_removed_it():
    events = [_c("c1", 1, writes=[(P0, 1, "d1", 1)]), _c("c2", 2, writes=[(P0, 2, "d2", 1)]),
              _pull(2, [(P0, 2, "d2")])]
    assert check(events, _state([(P0, 2, "d2")], seq=2))["lost_reads"] == 0
    assert check(events, _state([(P0, 3, "d9")], seq=2))["lost_reads"] == 0  # a newer version: not a loss
    lost = check(events, _state([(P0, 1, "d1")], seq=2))  # rolled back under the reader
    assert lost["lost_reads"] == 1 and lost["details"]["lost_reads"][0]["paths"][0]["now"] == [1, "d1"]
    gone = events + [_c("c3", 3, deletes=[(P0, 2, "d2")])]
    assert check(gone, _state([], seq=3))["lost_reads"] == 0  # deleted by a commit sealed after the view
    assert check(events, _state([], seq=2))["lost_reads"] == 1  # gone with nothing removing it
