"""harness explore: its arguments, its schedules, and the quick exploration of each backend and fencing mode.

The quick runs are real ``harness explore`` processes (each minutes at most): fenced, no schedule violates;
unfenced (swamp's own commit, ``--ops prune``), violating schedules are named on both sync profiles, step by step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.products.explore.faults import label
from harness.products.explore.schedules import ops_for, schedules, targets
from harness.products.explore.world import Target

ROOT = Path(__file__).resolve().parents[3]


def test_the_targets_cover_every_backend_profile_and_layout_unless_asked():
    names = [t.name for t in targets(None, None, None, True)]
    assert len(names) == 8 and "s3/two-phase/monolith/fencing-on" in names
    assert [t.name for t in targets("s3", "one-lock", None, False, quick=True)] == ["s3/one-lock/sharded/fencing-off"]
    assert ops_for("one-lock") == ("sync", "delete", "prune", "pull")
    assert ops_for("two-phase") == ("model-run", "delete", "prune", "pull")


def test_every_boundary_gets_every_disturbance_and_gsi_lag_only_on_a_dynamodb_gsi_query():
    seq = ["UpdateItem grant", "Query GSI", "UpdateItem seal"]
    got = list(schedules(Target("dynamodb", "one-lock", "per-model", True), "sync", seq, quick=False))
    by = {(s.boundary, s.disturbance) for s in got}
    assert by == ({(k, d) for k in range(3) for d in ("freeze", "lost-answer")} | {(0, "crash"), (2, "crash")}
                  | {(1, "gsi-lag")})  # a crash before a read is the crash before the next write
    assert sum(s.disturbance == "freeze" for s in got) == 3 * 4  # B's three operations, and its m0 held at commit
    s3 = list(schedules(Target("s3", "one-lock", "sharded", True), "sync", ["Query GSI"], quick=True))
    assert {s.disturbance for s in s3} == {"freeze"}  # quick: no lost answer of a read; no GSI on S3


def test_quick_keeps_the_first_of_a_run_of_identical_requests():
    seq = ["PutObject lock", "PutObject content", "PutObject content", "PutObject content", "PutObject head"]
    got = list(schedules(Target("s3", "one-lock", "sharded", True), "sync", seq, quick=True))
    assert sorted({s.boundary for s in got}) == [0, 1, 4]
    assert len(list(schedules(Target("s3", "one-lock", "sharded", True), "sync", seq, quick=False))) == 5 * 6


def test_requests_are_labelled_by_what_they_touch():
    assert label("UpdateItem", {"UpdateExpression": "SET #s = :new DELETE pending :c",
                                "Key": {"pk": {"S": "LOCK#x"}}}) == "UpdateItem seal"
    assert label("UpdateItem", {"UpdateExpression": "SET #c0 = :s", "Key": {"pk": {"S": "PARTITIONS#registry#w1"}}}) \
        == "UpdateItem registry"
    assert label("PutObject", {"Key": "w1/_index/_meta.json"}) == "PutObject head"
    from harness.core.clock import FakeClock
    from harness.core.work import sending

    with sending(FakeClock()):  # a commit's head swap: its seal
        assert label("PutObject", {"Key": "w1/_index/_meta.json"}) == "PutObject seal"
    assert label("Query", {"IndexName": "gsi1"}) == "Query GSI"


@pytest.mark.parametrize("argv, words", [
    (["--layout", "monolith", "--backend", "dynamodb"], "layout 'monolith' is s3's"),
    (["--layout", "nope"], "unknown layout 'nope'"),
    (["--ops", "sync,frob"], "unknown operation frob in --ops"),
    (["--ops", "model-run", "--sync", "one-lock"], "nothing to explore under --sync one-lock"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    from harness.cli.main import main

    assert main(["explore", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_check_args_accepts_what_it_should():
    from harness.products.explore.command import check_args

    assert check_args("s3", None, "monolith", "sync,delete") == ["sync", "delete"]
    with pytest.raises(HarnessError):
        check_args(None, None, None, " , ")


@pytest.mark.e2e
@pytest.mark.heavy
@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
@pytest.mark.parametrize("fencing", ["on", "off"])
def test_quick_exploration(tmp_path, backend, fencing):
    # Fenced, every operation of both profiles is explored and none may violate. Unfenced, the holes of both
    # profiles only need showing: prune, the one operation both profiles share with the fewest requests, has
    # them (a holder frozen mid-prune while another worker commits), at a quarter of the schedules of them all.
    ops = [] if fencing == "on" else ["--ops", "prune"]
    out = tmp_path / "ex"
    proc = subprocess.run([sys.executable, "-m", "harness", "explore", "--quick", "--backend", backend,
                           "--fencing", fencing, *ops, "--run-dir", str(out)], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    result = json.loads((out / "explore.json").read_text())
    assert result["quick"] and result["explored"] == len(result["schedules"]) >= (100 if fencing == "on" else 20)
    for s in result["schedules"]:
        assert {"op", "boundary", "disturbance", "violations", "steps"} <= set(s)
        assert 1 <= s["boundary"] <= s["requests"] and s["steps"][0].startswith(f"A: {s['op']}, request ")
    explored = {(s["sync"], s["op"]) for s in result["schedules"]}
    if fencing == "on":
        assert {("one-lock", "sync"), ("two-phase", "model-run"), ("one-lock", "prune"),
                ("two-phase", "delete")} <= explored
    else:  # what --ops asked for, on both profiles, and nothing else
        assert explored == {("one-lock", "prune"), ("two-phase", "prune")}
    page = (out / "explore.html").read_text()
    if fencing == "on":
        bad = [s["steps"] for s in result["schedules"] if s["violations"]]
        assert proc.returncode == 0 and result["violating"] == 0, (proc.stderr[-2000:], bad[:5])
        assert "No schedule violates" in page
    else:  # swamp's lock has no fence: both profiles' holes are named, and listed first
        assert proc.returncode == 3, proc.stderr[-2000:]
        violating = [s for s in result["schedules"] if s["violations"]]
        assert {s["sync"] for s in violating} == {"one-lock", "two-phase"}
        assert result["schedules"][0]["violations"] > 0
        assert any("frozen" in step for s in violating for step in s["steps"])
        assert page.index("Violating schedules") < page.index("What was explored")
        assert "violates:" in proc.stderr


def test_a_world_forked_from_one_prelude_finds_what_a_world_made_anew_finds():
    """``Forked`` plays the prelude once and each schedule in a forked child; ``Fresh`` makes each world anew.
    Unfenced prune has holes to find: the same schedules must find the same findings in the same steps."""
    from harness.products.explore.replayers import Forked, Fresh, choose
    from harness.products.explore.runner import explore

    got = {}
    for replayer in (Fresh(), Forked()):
        out = explore(backend="s3", sync="one-lock", layout=None, fencing=False, ops=["prune"], quick=True,
                      replayer=replayer)
        got[type(replayer).__name__] = out["schedules"]
    assert sum(1 for s in got["Fresh"] if s["violations"]) >= 2, got["Fresh"]
    assert got["Forked"] == got["Fresh"]
    assert isinstance(choose(), Forked if sys.platform == "linux" else Fresh)


def test_a_schedule_that_breaks_the_explorer_in_its_forked_process_is_raised_with_its_traceback(monkeypatch):
    from harness.products.explore import replayers
    from harness.products.explore.runner import explore

    def broken(*_a, **_k):
        raise RuntimeError("the checker broke")

    monkeypatch.setattr(replayers, "disturb", broken)
    with pytest.raises(HarnessError, match="failed in its process:(.|\n)*RuntimeError: the checker broke"):
        explore(backend="s3", sync="one-lock", layout=None, fencing=True, ops=["prune"], quick=True,
                replayer=replayers.Forked())


def test_found_by_the_explorer_a_holder_frozen_mid_pull_reads_no_torn_view(aws):
    """The explorer's first fenced find: A's pull, under A's own grant, froze at its registry read past its TTL;
    B took the lock and committed; A's queries then read B's seal across (the view "at" A's sequence lacked what
    B's seal had superseded and collected). A fenced pull now reads the lock item again after its queries."""
    from harness.products.explore.schedules import Schedule, learn, replay
    from harness.products.explore.world import Lab
    from tests.conftest import SESSION

    lab = Lab(SESSION)
    target = Target("dynamodb", "one-lock", "per-model", True)
    seq = learn(target, "sync", lab)
    k = seq.index("GetItem registry")
    s = replay(Schedule(target, "sync", k, len(seq), seq[k], "freeze", "sync m0"), lab)
    assert s.steps[0] == f"A: sync, request {k + 1} of {len(seq)} (GetItem registry) frozen 7 s"
    assert s.violations == 0, s.steps


@pytest.mark.parametrize("k, disturbance", [(0, "freeze"), (6, "freeze"), (20, "lost-answer")])
def test_found_by_the_explorer_a_scoped_pull_learns_its_partition_was_pruned(aws, k, disturbance):
    """The explorer's second fenced find (two-phase, not --quick): A froze before its model run while B deleted
    and pruned m0; A's scoped pull planned from its cursor alone, so its view kept m0's pruned files "at" the new
    sequence (a torn view). And a partition read whole dropped the worker's own entries it did not report. The
    scoped pull now reads the registry for its partitions too (dropped, born again), and a whole read reports
    everything it read."""
    from harness.products.explore.schedules import Schedule, learn, replay
    from harness.products.explore.world import Lab
    from tests.conftest import SESSION

    lab = Lab(SESSION)
    target = Target("dynamodb", "two-phase", "per-model", True)
    seq = learn(target, "model-run", lab)
    other = "delete m0, prune" if disturbance == "freeze" else None
    s = replay(Schedule(target, "model-run", k, len(seq), seq[k], disturbance, other), lab)
    assert s.violations == 0, s.steps


@pytest.mark.parametrize("sync", ["one-lock", "two-phase"])
def test_found_by_the_explorer_a_legacy_gsi_behind_is_waited_for(aws, sync):
    """The explorer's third fenced find: the legacy layout's one FILE partition had no record of its newest
    commit, so a GSI query missing it went unnoticed (a torn view). The seal now records the domain's newest
    commit on the lock item (``lastc``), and a legacy pull checks its query against it."""
    from harness.products.explore.schedules import Schedule, learn, replay
    from harness.products.explore.world import Lab
    from tests.conftest import SESSION

    lab = Lab(SESSION)
    target = Target("dynamodb", sync, "legacy", True)
    op = "sync" if sync == "one-lock" else "model-run"
    seq = learn(target, op, lab)
    k = seq.index("Query GSI")
    s = replay(Schedule(target, op, k, len(seq), seq[k], "gsi-lag", None), lab)
    assert s.violations == 0, s.steps


def test_the_page_is_the_shared_frame_verdict_first_then_violating_schedules_then_what_was_explored(tmp_path):
    from harness.products.explore.page import write_page

    bad = {"target": "t", "op": "sync", "boundary": 1, "requests": 3, "request": "PutItem", "disturbance": "freeze",
           "violations": 1, "steps": ["A: sync, request 1 (PutItem): frozen"]}
    result = {"explored": 2, "violating": 1, "seconds": 3.0, "quick": True, "schedules": [bad],
              "totals": [{"target": "t", "op": "sync", "disturbance": "freeze", "schedules": 2, "violating": 1}]}
    page = write_page(result, tmp_path).read_text()
    assert page.index("class='verdict bad'") < page.index("Violating schedules") < page.index("What was explored")
    assert "1 of 2 schedules violate" in page and "<details open>" in page and "frozen" in page
