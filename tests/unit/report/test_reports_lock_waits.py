"""The report measures both profiles' lock waits alike: two-phase's commit-lock wait (and a timeout there)
counts with the lock step's, in the failure story and the lock-wait histogram."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.report.run.compute import lock_wait_histogram, lock_waits
from harness.report.run.findings import _failure_story

KEY = ".datastore.lock"


def two_phase_rows() -> pd.DataFrame:
    """Ten successes that waited 5 ms for the model lock and 40 ms for the global one; ten timeouts of the
    global (commit) acquire after 2 ms at the model lock and 1,000 ms at the commit lock."""
    ok = pd.DataFrame({"ok": True, "error_kind": "", "lock_wait_ms": 5.0, "commit_lock_ms": 40.0}, index=range(10))
    bad = pd.DataFrame({"ok": False, "error_kind": "lock_timeout", "lock_wait_ms": 2.0, "commit_lock_ms": 1000.0},
                       index=range(10, 20))
    return pd.concat([ok, bad])


def findings(rows: pd.DataFrame) -> dict:
    failures = int((~rows["ok"]).sum())
    message = f"lock not acquired within 1000 ms on key: {KEY}"
    return {"failures": failures, "failure_ratio": failures / len(rows), "errors": {"lock_timeout": failures},
            "failures_table": [{"kind": "lock_timeout", "message": message, "count": failures}],
            "utilization": []}


def test_lock_waits_add_the_commit_locks_wait():
    rows = two_phase_rows()
    assert list(lock_waits(rows)) == [45.0] * 10 + [1002.0] * 10
    one_lock = rows.drop(columns=["commit_lock_ms"])
    assert list(lock_waits(one_lock)) == list(one_lock["lock_wait_ms"])


def test_the_failure_story_of_a_commit_lock_timeout_reads_the_commit_locks_wait():
    rows = two_phase_rows()
    story = _failure_story(rows, rows["ok"].to_numpy(dtype=bool), findings(rows))
    assert story is not None and story["kind"] == "lock_timeout" and story["key"] == KEY
    assert story["failed_wait_ms"] == 1002.0 and story["ok_wait_ms"] == 45.0  # not 2 ms and 5 ms


def test_the_lock_wait_histogram_places_the_commit_lock_timeouts_at_their_wait():
    edges, ok, failed = lock_wait_histogram(two_phase_rows())
    assert ok.sum() == 10 and failed.sum() == 10
    i = int(np.searchsorted(edges, 1002.0, side="right")) - 1
    assert failed[i] == 10 and edges[-1] > 1002.0


def test_the_report_names_the_global_lock_a_two_phase_run_took():
    from harness.report.run.words import global_lock_said

    ns = {"sync": "two-phase", "lock_scope": "namespace", "namespaces": "per-worker"}
    for backend in ("dynamodb", "s3"):
        assert ".locks/<ns>.lock" in global_lock_said({"datastore": {**ns, "global_lock": "swamp"}}, backend)
        assert "<ns>/.datastore.lock" in global_lock_said({"datastore": {**ns, "global_lock": "per-namespace"}},
                                                          backend)
    assert "one LOCK#.datastore.lock for every namespace" in global_lock_said(
        {"datastore": {**ns, "global_lock": "one-item"}}, "dynamodb")
    assert "<ns>/.datastore.lock" in global_lock_said({"datastore": {**ns, "global_lock": "one-item"}}, "s3")
    assert global_lock_said({"datastore": {**ns, "sync": "one-lock"}}, "dynamodb") is None


def test_the_report_says_whose_lock_commit_and_reads_a_run_made():
    from harness.report.run.words import reads_said

    assert reads_said({"datastore": {"fencing": False, "bookkeeping": "swamp"}}).startswith("swamp's own")
    assert "eventually consistent" in reads_said({"datastore": {"fencing": False, "bookkeeping": "swamp"}})
    assert reads_said({"datastore": {"fencing": True, "bookkeeping": "swamp"}}).startswith("fenced")
    assert "fencing_requests" in reads_said({"datastore": {"fencing": True}})
    assert reads_said({"datastore": {"fencing": False, "bookkeeping": "harness"}}).startswith("unfenced")
    assert reads_said({}) is None
