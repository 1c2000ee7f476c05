"""An open fleet end to end: `harness run --rate` on the embedded default, gated by `--max-p99-wait` (exit 3).

One short run (5 s, two users, iterations capped by the run's time and the fleet's own bound) shared by every
assertion: the failed gate is one line naming it and the measured p99, the rows carry their intended starts and
waits, and the report's findings give the same p99.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import harness, rows

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("open-e2e")]


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("open") / "run"
    p = harness("run", "namespaced", "--rate", "20/s", "--users", "2", "--duration", "5s",
                "--max-p99-wait", "1ms", "--run-dir", str(run_dir), timeout=120)
    return p, run_dir


def test_a_tiny_max_p99_wait_fails_the_run_with_one_line(gated):
    p, run_dir = gated
    assert p.returncode == 3, p.stdout + p.stderr
    failed = [line for line in p.stderr.splitlines() if "check failed" in line]
    assert len(failed) == 1, p.stderr
    m = re.search(r"check failed: max_p99_wait: the wait's p99 ([\d.e-]+)s \(\d+ arrivals; .*\) is above the "
                  r"allowed 0.001s", failed[0])
    assert m, failed[0]
    d = rows(run_dir)
    assert float(m.group(1)) == pytest.approx(d["wait_ms"].quantile(0.99) / 1000, rel=0.01)


def test_rows_carry_their_intended_start_and_wait(gated):
    _, run_dir = gated
    d = rows(run_dir)
    assert len(d) >= 5 and d["ts_intended"].notna().all()
    assert (d["ts_intended"] <= d["ts_start"]).all()  # a free user sleeps until the arrival is due, never before
    waited = (d["ts_end"] - d["ts_intended"]).dt.total_seconds() * 1000
    assert (abs(waited - d["wait_ms"]) < 1).all() and (d["wait_ms"] >= d["total_ms"] - 0.01).all()
    assert d["user"].nunique() <= 2  # --workers caps the pool


def test_the_report_gives_the_wait_and_the_failed_gate(gated):
    _, run_dir = gated
    f = json.loads((run_dir / "report" / "summary.json").read_text())["runs"][0]["findings"]
    w = f["wait"]
    assert w["arrivals_per_s"] == pytest.approx(20.0, rel=0.05) and w["p99_ms"] >= w["p50_ms"] > 0
    assert w["sentence"].startswith("arrivals 20.0/s, served ")
    gate = next(c for c in f["checks"] if c["name"] == "max_p99_wait")
    assert not gate["passed"] and gate["value"] == pytest.approx(w["p99_ms"] / 1000, rel=0.01)
    assert (run_dir / "report" / "figures" / "wait.png").stat().st_size > 10_000
