"""`two-phase-namespaced` as it ships (swamp's own) through real Locust on the embedded stand-in: a global lock per
namespace, nothing of fencing's, swamp's file-by-file commit under it; and the two benchmarks that read such runs
(bench/global_lock.py, bench/seed_table.py) on it. One short run for the module (~10 s)."""

from __future__ import annotations

import json

import pytest

from bench import global_lock, seed_table
from tests.e2e.conftest import harness, rows

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-today-e2e")]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("swamp-today") / "run"
    out = harness("run", "two-phase-namespaced", "--users", "2", "--duration", "5s", "--run-dir", str(d),
                  "--no-report")
    assert out.returncode == 0, out.stderr[-2000:]
    return d


def test_a_swamp_own_run_takes_one_global_lock_a_namespace_and_makes_nothing_of_fencings(run_dir):
    d = rows(run_dir)
    assert len(d) and d["ok"].any()
    assert (d["fencing_requests"] == 0).all() and (d[d["ok"]]["write_requests"] > 0).all()
    keys = {json.loads(line)["key"] for p in (run_dir / "history").glob("*.jsonl")
            for line in p.read_text().splitlines() if '"grant"' in line}
    assert {k for k in keys if not k.endswith("/.lock") or "/data/" not in k} == {".locks/w0-0.lock",
                                                                                   ".locks/w0-1.lock"}


def test_the_global_lock_benchmark_reads_the_hold_and_what_was_sent_under_it(run_dir):
    f = global_lock.figures(run_dir)
    assert f["fencing"] is False and f["global locks"] == 2 and f["ok"] == rows(run_dir)["ok"].sum()
    assert 0 < f["hold ms p50"] <= f["hold ms p99"] and f["holds/s"] > 0
    # swamp's commit: 3 requests a file (chunks, registry ADD, entry) and the watermark's 2, a model's first run
    # writing its definition, raw, metadata, latest, output and export
    assert f["held requests"] >= 3 * 5 + 2 and f["fencing req/it"] == 0
    assert global_lock.main([str(run_dir / "nowhere")]) == 2


def test_the_seed_table_sets_a_runs_figures_beside_the_seeds(run_dir):
    run = seed_table.figures(run_dir)
    t = seed_table.side_by_side(run)
    assert list(t.index) == list(seed_table.SEED) and (t["seed"] > 0).all()
    assert run["iterations/s"] > 0 and run["write ops/it"] > 0 and run["WCU/it"] > 0 and run["files/sync"] >= 5
    assert t.loc["WCU/s", "run / seed"] == pytest.approx(run["WCU/s"] / 17_500)
