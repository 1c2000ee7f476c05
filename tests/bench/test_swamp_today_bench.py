"""The two benchmarks that read a swamp-own run (bench/global_lock.py, bench/spec_table.py) on one:
`two-phase-namespaced` as it ships, through real Locust on the embedded stand-in (the one run
tests/e2e/test_swamp_today_e2e.py reads too: ~10 s for both files)."""

from __future__ import annotations

import pytest

from bench import global_lock, spec_table
from tests.e2e.conftest import rows

# the run is tests/conftest.py's swamp_today_run, made once for this file and its twin in the same group
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-today")]


@pytest.fixture
def run_dir(swamp_today_run):
    return swamp_today_run


def test_the_global_lock_benchmark_reads_the_hold_and_what_was_sent_under_it(run_dir):
    f = global_lock.figures(run_dir)
    assert f["fencing"] is False and f["global locks"] == 2 and f["ok"] == rows(run_dir)["ok"].sum()
    assert 0 < f["hold ms p50"] <= f["hold ms p99"] and f["holds/s"] > 0
    # swamp's commit: 3 requests a file (chunks, registry ADD, entry) and the watermark's 2, a model's first run
    # writing its definition, raw, metadata, latest, output and export
    assert f["held requests"] >= 3 * 5 + 2 and f["fencing req/it"] == 0
    assert global_lock.main([str(run_dir / "nowhere")]) == 2


def test_the_spec_table_sets_a_runs_figures_beside_the_seeds(run_dir):
    run = spec_table.figures(run_dir)
    t = spec_table.side_by_side(run)
    assert list(t.index) == list(spec_table.SEED) and (t["seed"] > 0).all()
    assert run["iterations/s"] > 0 and run["write ops/it"] > 0 and run["WCU/it"] > 0 and run["files/sync"] >= 5
    assert t.loc["WCU/s", "run / seed"] == pytest.approx(run["WCU/s"] / 17_500)
