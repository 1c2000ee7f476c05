"""The eight holes a second adversarial review found in the fenced design (issue 43), each reproduced exactly.

Deterministic like ``test_interleavings.py``: in-process moto, a FakeClock,
botocore event hooks that freeze an actor between two of its requests, lose an
answer after its request landed, fail a request as a throttle past botocore's
retries, or hide items from one GSI answer. Each test failed on 4844447 and
passes now; the assertions are on the store's final state and on the
checker's verdict of the schedule's history.

1. a delete frozen between its seal and its content collection, while the
   model is re-created with the same bytes (both backends);
2. a throttled collection kept for the deleter's next push (DynamoDB);
3. a landed seal retried after the TTL, B having built on it (both backends);
4. a refused commit's registry write switched off the GSI check (DynamoDB);
5. a GSI answer missing an older tombstone below the newest commit (DynamoDB);
6. two-phase, no fault: a re-creation uploads while a delete collects (both);
7. S3 two-phase, no fault: a prune did not fence the model holder (both agree);
8. hole 3 writing only new paths: what readers had read is still there.

Found since by ``harness explore --random`` (its schedules are in ``tests/fixtures/explore-holes.json``), each
failing on 40f1eee (issue 43's fixes) and passing now:

10. a pull whose content read failed (a throttle past botocore's retries) left its cursor past what its view
    held: the next pull short-cut, its view missing entries for good (both backends, every layout);
11. S3 monolith, two-phase, no fault: a scoped pull kept the whole shard in its cursor but gave the view only
    its model's entries; the next full pull diffed against the cursor and never brought the other models'.
"""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError

from harness.core.work import Work
from harness.datastore.catalog import Catalog
from harness.datastore.errors import FencedError
from harness.datastore.sync import Datastore, SyncConfig
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import (
    FAST_LOCK,
    Actor,
    fail_once,
    hide_from_gsi,
    lose_answer,
    make_backend,
    once_before,
    second_clients,
    sync_store,
)

DEFINITION = "w1/models/system/m/definition.yaml"


def trio(aws, clock, kind, events, names=("a", "b", "c"), **kw):
    """Stores of namespace w1, each through a client of its own, one history."""
    clients = [aws] + [second_clients() for _ in names[1:]]
    return [sync_store(make_backend(kind, c, clock=clock), clock=clock, holder=n, events=events, **kw)
            for n, c in zip(names, clients, strict=True)]


def two_phase_store(kind, clients, clock, holder, events, uploads_at_commit=None):
    """A two-phase store (uploads outside the global lock unless the backend's profile says otherwise)."""
    cfg = SyncConfig(namespace="w1", lock_scope="namespace", lock=FAST_LOCK, heartbeat=False, sync="two-phase",
                     global_poll_s=0.05, record_views=True, uploads_at_commit=uploads_at_commit)
    store = Datastore(make_backend(kind, clients, clock=clock), Catalog(), cfg, clock=clock, holder=holder)
    store.record = events.append
    return store


def deletes_content_of(kind: str, path: str):
    """Is this request the collection of ``path``'s content (a chunk's DeleteRequest / its object in a
    DeleteObjects)?"""
    if kind == "sharded":
        return lambda p: any(o["Key"].startswith(path + "@v") for o in p["Delete"]["Objects"])

    def when(params: dict) -> bool:
        reqs = [r for rs in params["RequestItems"].values() for r in rs]
        return any("DeleteRequest" in r and r["DeleteRequest"]["Key"]["pk"]["S"] == f"FILE#{path}"
                   and r["DeleteRequest"]["Key"]["sk"]["S"].startswith("CHUNK#") for r in reqs)
    return when


def collection_event(kind: str) -> str:
    return "before-parameter-build." + ("s3.DeleteObjects" if kind == "sharded" else "dynamodb.BatchWriteItem")


def is_seal(params) -> bool:
    return "#s = :new" in str(params.get("UpdateExpression", "")) and "LOCK#" in str(params.get("Key"))


def verdict(events, backend) -> dict:
    report = check(events, snapshot(backend))
    assert report["violations"] == 0, report["details"]
    return report


def content_of(backend, path: str) -> dict:
    entry = next(e for e in snapshot(backend)["entries"] if e["path"] == path)
    assert entry["content_digest"] == entry["digest"], f"{path}'s content is gone: {entry}"
    return entry


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_1_a_delete_frozen_before_its_collection_leaves_a_recreation_alone(aws, clock, kind):
    """D deletes m and freezes right before deleting the definition's content; E re-creates m with the same
    bytes (version 1) and is acknowledged; D resumes and collects (old code: E's content deleted, corrupt 1)."""
    events: list[dict] = []
    d, e = trio(aws, clock, kind, events, names=("d", "e"))
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)

    def frozen() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        e.sync_run("m", "get_load", 100, [])

    done = once_before(d.backend.client, collection_event(kind), deletes_content_of(kind, DEFINITION), frozen)
    d.delete_model("m", [])
    assert done, "the interleaving did not happen"
    assert e.local[DEFINITION].version == 1
    content_of(d.backend, DEFINITION)
    verdict(events, d.backend)


def test_2_a_throttled_collection_kept_for_the_next_push_leaves_a_recreation_alone(aws, clock):
    """D's collection of the deleted definition's content is throttled past botocore's retries and kept; E
    re-creates m with the same bytes; D's next push collects what it kept (old code: E's content, corrupt 1)."""
    events: list[dict] = []
    d, e = trio(aws, clock, "per-model", events, names=("d", "e"))
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    failed = fail_once(d.backend.client, "BatchWriteItem", deletes_content_of("per-model", DEFINITION))
    d.delete_model("m", [])
    assert failed, "the collection was never throttled"
    clock.advance(0.1)
    e.sync_run("m", "get_load", 100, [])
    clock.advance(0.1)
    d.sync_run("other", "get_uptime", 100, [])  # D's next push (another model)
    clock.advance(0.1)
    d.sync_run("other", "get_load", 100, [])
    content_of(d.backend, DEFINITION)
    verdict(events, d.backend)


def _landed_seal_retried_after_the_ttl(aws, clock, kind, events, a_model: str):
    """A's seal lands, its answer is lost, A freezes past its TTL before botocore sends it again; meanwhile B
    pulls A's sealed commit and commits on top (B's shard of m0 replaces A's on S3). Returns (a, b)."""
    a, b = trio(aws, clock, kind, events, names=("a", "b"))
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    other = second_clients()[1 if kind == "sharded" else 0]
    armed: dict = {}

    def b_builds_on_it() -> None:
        clock.advance(FAST_LOCK.ttl_s + 1)
        b.sync_run("m0", "get_load", 100, [])

    def arm(point: str) -> float:  # just before the commit: the grant's own head write is not the one lost
        if kind == "sharded":
            armed["state"] = lose_answer(a.backend.client, other, "s3", "PutObject",
                                         lambda p: p["Key"].endswith("_meta.json") and "IfMatch" in p,
                                         meanwhile=b_builds_on_it)
        else:
            armed["state"] = lose_answer(a.backend.client, other, "dynamodb", "UpdateItem", is_seal,
                                         meanwhile=b_builds_on_it)
        return 0.0

    a.pauses = arm
    try:
        a.sync_run(a_model, "get_uptime", 100, [])
    except FencedError:
        pass  # (old code: told "refused", although its seal had landed)
    assert armed and armed["state"]["lost"] == 1, "the answer was never lost"
    return a, b


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_3_a_landed_seal_retried_after_the_ttl_is_acknowledged_not_undone(aws, clock, kind):
    """A's retried seal is refused (B holds the lock now): A must learn from its commit's record that it sealed
    (old code: DynamoDB undid A's sealed versions, uptime/latest lost; S3 told A "refused" while its entries
    were visible, phantom 4)."""
    events: list[dict] = []
    a, b = _landed_seal_retried_after_the_ttl(aws, clock, kind, events, "m0")
    mine = [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]
    assert mine["ok"] or mine.get("indeterminate"), f"a landed seal was reported refused: {mine.get('error')}"
    latest = "w1/data/system/m0/uptime/latest"
    assert {x["path"]: x["version"] for x in snapshot(a.backend)["entries"]}.get(latest) == 2
    verdict(events, a.backend)


def b_syncs_with_the_tombstone_hidden_once(b, events) -> None:
    """B's next sync, its GSI answer for m missing the definition's tombstone once: B must not take the partition
    as read (its full commit would write the deleted definition back)."""
    hidden = hide_from_gsi(b.backend.client,
                           lambda p: p["ExpressionAttributeValues"][":p"]["S"].endswith("/system/m"),
                           lambda i: i["relPath"]["S"] == DEFINITION and "del" in i)
    b.sync_run("keep", "get_memory", 100, [])
    assert hidden, "the tombstone was never hidden"
    assert DEFINITION not in b.local
    assert DEFINITION not in {x["path"] for x in snapshot(b.backend)["entries"]}
    verdict(events, b.backend)


def test_4_a_refused_commits_registry_write_does_not_switch_off_the_gsi_check(aws, clock):
    """B has seen m; D deletes m; A's commit of m writes the registry and is refused (its versions throttled);
    B's next pull's GSI answer misses the tombstone: B must not take it as read (old code: B's full commit
    wrote the deleted definition back, lost 1)."""
    events: list[dict] = []
    b, d, a = trio(aws, clock, "per-model", events, names=("b", "d", "a"), index_commit="full")
    b.sync_run("keep", "get_uptime", 100, [])
    d.sync_run("m", "get_uptime", 100, [])
    b.sync_run("keep", "get_load", 100, [])  # B has seen m
    assert DEFINITION in b.local
    d.delete_model("m", [])
    clock.advance(0.1)
    failed = fail_once(a.backend.client, "BatchWriteItem",
                       lambda p: "'V#" in repr(p) and "PutRequest" in repr(p) and "/system/m/" in repr(p))
    with pytest.raises(Exception):  # noqa: B017 - the throttle, as the commit hands it on
        a.sync_run("m", "get_memory", 100, [])
    assert failed, "A's versions were never throttled"
    clock.advance(0.1)
    b_syncs_with_the_tombstone_hidden_once(b, events)


def test_5_a_gsi_answer_missing_an_older_tombstone_is_not_taken_as_read(aws, clock):
    """D deletes m; E (whose catalog has m) then syncs m's data; B's GSI answer shows E's newer items but not
    the tombstone below them (old code: only the newest commit was verified, B's full commit undid the delete
    and the written-back definition had no content: lost 1, corrupt 1)."""
    events: list[dict] = []
    b, d, e = trio(aws, clock, "per-model", events, names=("b", "d", "e"), index_commit="full")
    b.sync_run("keep", "get_uptime", 100, [])
    d.sync_run("m", "get_uptime", 100, [])
    e.sync_run("m", "get_uptime", 100, [])  # E's catalog has m now
    b.sync_run("keep", "get_load", 100, [])  # B has seen m
    d.delete_model("m", [])
    clock.advance(0.1)
    e.sync_run("m", "get_load", 100, [])  # data newer than the tombstone
    assert DEFINITION not in e.local
    b_syncs_with_the_tombstone_hidden_once(b, events)


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_6_a_two_phase_recreation_uploading_while_a_delete_collects_keeps_its_content(aws, clock, kind):
    """E takes m's model lock just before D takes the global lock; D's delete of m seals; E's scoped pull sees
    no definition, stages version 1 with the same bytes and uploads it outside the global lock; D collects;
    E commits (old code: E's definition without content, corrupt 1). No fault at all."""
    events: list[dict] = []
    uploads = None if kind == "sharded" else False  # S3's default; DynamoDB uploads outside the lock too
    d = two_phase_store(kind, aws, clock, "d", events, uploads)
    e = two_phase_store(kind, second_clients(), clock, "e", events, uploads)
    d.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    at_pull, go = threading.Event(), threading.Event()
    real_pull = e.pull

    def gated_pull(work, partitions=None):  # E holds m's model lock here, before its scoped pull
        at_pull.set()
        assert go.wait(30), "E was never let go"
        return real_pull(work, partitions)

    e.pull = gated_pull
    actor = Actor(e, lambda: e.sync_run("m", "get_load", 100, []))
    actor.thread.start()
    assert at_pull.wait(30), "E never took m's model lock"

    def e_pulls_and_uploads() -> None:  # D has sealed its delete; E's upload happens before D's collection
        go.set()
        assert actor.reached.wait(30), "E never reached its commit"

    done = once_before(d.backend.client, collection_event(kind), deletes_content_of(kind, DEFINITION),
                       e_pulls_and_uploads)
    d.delete_model("m", [])
    assert done, "the interleaving did not happen"
    actor.finish()
    assert e.local[DEFINITION].version == 1
    content_of(d.backend, DEFINITION)
    verdict(events, d.backend)


@pytest.mark.parametrize("kind", ["per-model", "sharded"])
def test_7_a_two_phase_holder_is_fenced_by_a_prune_of_its_model(aws, clock, kind):
    """A runs m (its scoped pull, its upload) and waits for the global lock; D deletes m and prunes it; A's
    commit must be refused on both backends alike (old code: S3 accepted it, the pruned uptime/latest back:
    lost 1; DynamoDB refused it)."""
    events: list[dict] = []
    d = two_phase_store(kind, aws, clock, "d", events)
    a = two_phase_store(kind, second_clients(), clock, "a", events)
    d.sync_run("m", "get_uptime", 100, [])
    a.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    actor = Actor(a, lambda: a.sync_run("m", "get_uptime", 100, []))
    actor.start_until_paused()  # A has pulled m and uploaded; it waits for the global lock
    d.delete_model("m", [])
    report = d.prune([])
    assert report.models == [("system", "m")]
    with pytest.raises(FencedError):
        actor.finish()
    assert not [x for x in snapshot(d.backend)["entries"] if "/system/m/" in x["path"]]
    verdict(events, d.backend)


def test_8_what_a_reader_read_of_a_landed_seal_is_still_there_after_the_retry(aws, clock):
    """Hole 3's DynamoDB schedule with A writing only new paths (m1's first run): B reads A's sealed entries
    and commits on top; A's refused retry must not undo them (old code: B's entries of m1 gone, with no delete
    anywhere, and the checker counted 0 violations)."""
    events: list[dict] = []
    a, b = _landed_seal_retried_after_the_ttl(aws, clock, "per-model", events, "m1")
    read = {r: (m.version, m.digest) for r, m in b.local.items() if "/system/m1/" in r}
    assert len(read) == 5, "B never read A's commit"
    final = {x["path"]: (x["version"], x["digest"]) for x in snapshot(a.backend)["entries"]}
    assert {r: final.get(r) for r in read} == read, "what B read and built on is gone"
    mine = [c for c in events if c.get("type") == "commit" and c["holder"] == "a"][-1]
    assert mine["ok"] or mine.get("indeterminate"), f"a landed seal was reported refused: {mine.get('error')}"
    verdict(events, a.backend)


def _is_content_read(kind: str):
    if kind in ("sharded", "monolith"):
        return "GetObject", "SlowDown", lambda p: "@v" in p["Key"]
    return "GetItem", "ProvisionedThroughputExceededException", lambda p: "CHUNK#" in p["Key"]["sk"]["S"]


@pytest.mark.parametrize("kind", ["per-model", "legacy", "sharded", "monolith"])
def test_10_a_pull_whose_content_read_fails_leaves_the_cursor_with_the_view_it_had(aws, clock, kind):
    """B's pull reads the index, then one content read is throttled past botocore's retries and the pull fails;
    B's next pull must bring what the failed one did not (old code: the cursor had moved on with the index read,
    the next pull short-cut, and B's view lacked A's entries for good: torn reads 1)."""
    events: list[dict] = []
    a, b = trio(aws, clock, kind, events, names=("a", "b"))
    a.sync_run("m", "get_uptime", 100, [])
    clock.advance(0.1)
    op, code, when = _is_content_read(kind)
    failed = fail_once(b.backend.client, op, when, code=code)
    with pytest.raises(ClientError, match=code):
        b.pull(Work())
    assert failed, "no content read was throttled"
    assert b.local == {}, "a failed pull changed the view"
    clock.advance(0.1)
    b.pull(Work())
    sealed = {x["path"]: (x["version"], x["digest"]) for x in snapshot(b.backend)["entries"]}
    assert {r: (m.version, m.digest) for r, m in b.local.items()} == sealed
    verdict(events, b.backend)


@pytest.mark.parametrize("kind", ["monolith", "sharded", "per-model", "legacy"])
def test_11_a_scoped_pull_leaves_the_cursor_knowing_only_what_the_view_took(aws, clock, kind):
    """Two-phase, no fault: A runs m0; B runs m1 (a scoped pull: on the monolith it reads the one shard holding
    every model, m0's entries too); B then pulls everything. B's view must hold m0's entries (old code, S3
    monolith: the cursor held the shard as read, the full pull found nothing changed in it, and B's view lacked
    m0 for good: torn reads 1)."""
    events: list[dict] = []
    a, b = (two_phase_store(kind, c, clock, n, events) for c, n in ((aws, "a"), (second_clients(), "b")))
    a.sync_run("m0", "get_uptime", 100, [])
    clock.advance(0.1)
    b.sync_run("m1", "get_uptime", 100, [])
    clock.advance(0.1)
    b.pull(Work())
    sealed = {x["path"]: (x["version"], x["digest"]) for x in snapshot(b.backend)["entries"]}
    assert {r: (m.version, m.digest) for r, m in b.local.items()} == sealed
    verdict(events, b.backend)
