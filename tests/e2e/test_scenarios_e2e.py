"""Each scenario, short and headless, on a real moto server with real Locust processes.

The work counts must differ the way the seed predicts. Runs are bounded
(~12 s each) and marked e2e; they run in CI.
"""

from __future__ import annotations

import json

import pytest

from harness.record.schema import COLUMNS

pytestmark = pytest.mark.e2e
BACKENDS = ["dynamodb", "s3"]


def _thirds(d, col):
    n = len(d) // 3
    return d[col].iloc[:n].median(), d[col].iloc[n:2 * n].median(), d[col].iloc[2 * n:].median()


def _common(run_dir, d, scenario, backend, workers):
    assert list(d.columns) == list(COLUMNS)
    assert set(d["user"]) == {f"w0-{i}" for i in range(workers)}  # rows from every worker
    assert (d["scenario"] == scenario).all() and (d["backend"] == backend).all()
    assert (d["ts_end"] >= d["ts_start"]).all()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "finished" and info["endpoint_kind"] == "embedded" and info["backend"] == backend
    assert info["scenario"]["name"] == scenario and info["versions"]["locust"]
    assert (run_dir / "locust_stats_history.csv").stat().st_size > 0
    assert "iteration" in (run_dir / "locust_stats.csv").read_text()


@pytest.mark.parametrize("backend", BACKENDS)
def test_legacy_gsi_items_read_per_pull_grow(run_scenario, backend):
    run_dir, d = run_scenario("legacy-gsi", backend)
    _common(run_dir, d, "legacy-gsi", backend, 4)
    first, mid, last = _thirds(d, "pull_items_read")
    assert last > 1.5 * first and last > mid  # grows with everything ever written


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_lock_waits_and_times_out(run_scenario, backend):
    run_dir, d = run_scenario("shared-lock", backend)
    _common(run_dir, d, "shared-lock", backend, 6)
    assert (d["error_kind"] == "lock_timeout").sum() >= 3
    assert d["lock_wait_ms"].median() > 300 and d["lock_attempts"].max() > 3
    msg = d.loc[d["error_kind"] == "lock_timeout", "error"].iloc[0]
    key = "dynamodb://" if backend == "dynamodb" else ".datastore.lock"
    assert msg.startswith("Lock timeout after 1000ms on key: ") and key in msg
    first, mid, last = _thirds(d[d["ok"]], "pull_items_read")  # per-model / sharded reads do not grow
    assert last < 3 * max(mid, 1) + 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_namespaced_no_contention_but_index_commit_grows(run_scenario, backend):
    run_dir, d = run_scenario("namespaced", backend)
    _common(run_dir, d, "namespaced", backend, 4)
    assert (d["error_kind"] == "lock_timeout").sum() == 0
    assert set(d["lock_attempts"]) == {1}  # every lock taken at the first try
    first, _, last = _thirds(d, "index_entries_written")
    assert last > 2 * first
    if backend == "dynamodb":
        _, mid, last_reads = _thirds(d, "pull_items_read")
        assert last_reads <= mid + 3  # per-model pulls stay flat


@pytest.mark.parametrize("backend", BACKENDS)
def test_disposable_files_constant_catalog_grows(run_scenario, backend):
    run_dir, d = run_scenario("disposable", backend)
    _common(run_dir, d, "disposable", backend, 4)
    ok = d[d["ok"]]
    assert set(ok["files_pushed"]) == {5}
    for _, u in ok.groupby("user"):
        assert list(u["catalog_rows"]) == list(u["iteration"] + 1)  # one orphaned row per iteration
    assert d["catalog_rows"].max() >= 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_pruning_bounds_catalog_rows(run_scenario, backend):
    run_dir, d = run_scenario("pruning", backend)
    _common(run_dir, d, "pruning", backend, 4)
    ok = d[d["ok"]]
    assert len(ok) >= 8 and set(ok["files_pushed"]) == {5}
    assert ok["catalog_rows"].max() == 0
    assert (ok["prune_ms"] > 0).all() and (ok["delete_ms"] > 0).all()
