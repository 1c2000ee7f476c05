"""`two-phase-namespaced` as it ships (swamp's own) through real Locust on the embedded stand-in: a global lock per
namespace, nothing of fencing's, swamp's file-by-file commit under it. One short run (~10 s) for this module and
tests/bench/test_swamp_today_bench.py, whose two benchmarks read the same run."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import rows

# the run is tests/conftest.py's swamp_today_run, made once for this file and its twin in the same group
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-today")]


@pytest.fixture
def run_dir(swamp_today_run):
    return swamp_today_run


def test_a_swamp_own_run_takes_one_global_lock_a_namespace_and_makes_nothing_of_fencings(run_dir):
    d = rows(run_dir)
    assert len(d) and d["ok"].any()
    assert (d["fencing_requests"] == 0).all() and (d[d["ok"]]["write_requests"] > 0).all()
    keys = {json.loads(line)["key"] for p in (run_dir / "history").glob("*.jsonl")
            for line in p.read_text().splitlines() if '"grant"' in line}
    assert {k for k in keys if not k.endswith("/.lock") or "/data/" not in k} == {".locks/w0-0.lock",
                                                                                   ".locks/w0-1.lock"}
