"""`two-phase-namespaced` as it ships (swamp's own) through real Locust on the embedded stand-in: a global lock per
namespace, nothing of fencing's, swamp's file-by-file commit under it. One short run for the module (~10 s); the two
benchmarks that read such runs are tested on one of their own in tests/bench/test_swamp_today_bench.py."""

from __future__ import annotations

import json

import pytest

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
