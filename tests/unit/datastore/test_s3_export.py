"""swamp's S3 catalog export with ``export_at = "swamp"`` (harness/datastore/swamp_push.py): a file of the push,
uploaded by the prepare outside the global lock, its entry committed under the lock in the ``_root`` shard.

In-process moto; the requests are logged by botocore hooks (test_s3_swamp.py's ``Calls``), so the tests
assert on sequences and counts, never on time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.catalog import Catalog
from harness.datastore.sync import MODEL_TYPE, Datastore, SyncConfig
from harness.safety.checker import check
from tests.conftest import FAST_LOCK, step
from tests.unit.datastore.test_s3_swamp import SWAMP, Calls, backend, kind

T = MODEL_TYPE
PLAIN = replace(SWAMP, prepare_read="none", command_requests="none", retries="harness")


def exporting(be, *, holder: str, events: list | None = None, clock=None,
              pauses=None) -> Datastore:
    cfg = SyncConfig(namespace="w1", lock=FAST_LOCK, heartbeat=False, sync="two-phase",
                     global_poll_s=0.05, export_at="swamp", catalog_export="swamp")
    return Datastore(be, Catalog(), cfg, clock=clock or FakeClock(), holder=holder,
                     recorder=events.append if events is not None else None, pauses=pauses)


@pytest.mark.parametrize("fencing", [True, False])
def test_the_export_is_uploaded_in_the_push_and_indexed_in_root_under_the_lock(aws, fencing):
    be = backend(aws, PLAIN, fencing=fencing)
    calls = Calls(aws[1])
    store = exporting(be, holder="w")
    store.sync_run("m0", "get_uptime", 100, [])  # the run's four shards exist now, _root among them
    under: list = []
    real = be.commit

    def spy(*a, **k):
        out = []
        under.extend(calls.during(lambda: out.append(real(*a, **k))))
        return out[0]

    be.commit = spy
    steps: list = []
    pushed = calls.during(lambda: store.sync_run("m0", "get_uptime", 100, steps))
    shards = [f"data--{T}--m0", f"data--{T}--m0--uptime", f"outputs--{T}--m0", "_root"]
    pairs = [x for s in shards for x in (("GetObject", s), ("PutObject", s))]
    # GET _meta.json, GET + PUT of each of the 4 dirty shards in turn, PUT _meta.json, the harness's DeleteObjects
    # (fenced: after the release, in the step "collect")
    tail = [] if fencing else [("DeleteObjects", "-")]
    assert [(op, kind(k)) for op, k in under] == [("GetObject", "meta"), *pairs, ("PutObject", "meta"), *tail]
    assert step(steps, "commit").work.total_requests == len(under) == 11 - fencing
    # the export's content went up in the push, before the global lock was taken; no export step after the commit
    export_put = [i for i, (op, k) in enumerate(pushed) if op == "PutObject" and k.startswith("w1/.catalog-export")]
    lock_put = [i for i, (op, k) in enumerate(pushed) if op == "PutObject" and k == ".locks/w1.lock"]
    assert len(export_put) == 1 and export_put[0] < lock_put[0]
    assert "export" not in [s.name for s in steps]
    assert step(steps, "push").work.catalog_rows == 2
    root = be.objects.get_json("w1/_index/_meta.json", Work())[0]["shards"]["w1/_root"]
    assert list(be.objects.get_json(root, Work())[0]["entries"]) == ["w1/.catalog-export.json"]


@pytest.mark.parametrize("fencing", [True, False])
def test_a_second_worker_of_the_namespace_overwrites_the_export_without_failing_or_a_lost_write(aws, fencing):
    """B pulls its model, then (paused before its commit) A runs and commits its export; B's commit then puts
    its own export over A's, from a view that never saw A's: swamp's last writer wins. Neither fails, and the
    checker counts no lost write; it would, were the export not named an overwrite."""
    be = backend(aws, PLAIN, fencing=fencing)
    events: list = []
    clock = FakeClock()
    a = exporting(be, holder="a", events=events, clock=clock)
    ran: list = []

    def a_runs_meanwhile(point: str) -> float:
        if point == "commit" and not ran:
            ran.append(a.sync_run("m0", "get_uptime", 100, []))
        return 0.0

    b = exporting(be, holder="b", events=events, clock=clock, pauses=a_runs_meanwhile)
    a.sync_run("m0", "get_uptime", 100, [])
    b.sync_run("m1", "get_uptime", 100, [])  # its pull saw A's first run only
    a.sync_run("m0", "get_uptime", 100, [])  # and A's next push right after B's: no conflict either
    commits = [e for e in events if e["type"] == "commit"]
    assert [(c["holder"], c["ok"]) for c in commits] == [("a", True), ("a", True), ("b", True), ("a", True)]
    assert all(c["overwrites"] == ["w1/.catalog-export.json"] for c in commits)
    state = be.index_snapshot(Work())
    export = [e for e in state["entries"] if e["path"] == "w1/.catalog-export.json"]
    assert [(e["version"], e["content_digest"] == e["digest"]) for e in export] == [(3, True)]  # A's third
    report = check(events, state)
    assert (report["violations"], report["lost"], report["acknowledged"]) == (0, 0, 4)
    blind = [{k: v for k, v in e.items() if k != "overwrites"} for e in events]
    b_over_a = check(blind, state)["details"]["lost"]  # the one rule the export is kept out of
    assert [(x["path"], x["expected"][0]) for x in b_over_a] == [("w1/.catalog-export.json", 2)]


def test_the_two_phase_scenarios_put_the_export_in_the_push_on_s3_and_in_the_commit_on_dynamodb(aws):
    from harness.config.scenario import load, parse

    for name in ("two-phase-namespaced", "two-phase-shared-lock", "two-phase-safety"):
        assert load(name).datastore.export_at == "swamp", name
    ds = parse({"name": "x", "backend": "s3", "datastore": {"sync": "two-phase", "export_at": "swamp"}}).datastore
    assert ds.export_at == "swamp"  # (the parser takes it for S3 as for DynamoDB)
    s3 = exporting(backend(aws, PLAIN), holder="w")
    assert (s3.exports_in_push, s3.exports_in_commit, s3.overwrites) == (True, False, {"w1/.catalog-export.json"})
