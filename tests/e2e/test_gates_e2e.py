"""The gates end to end, real `harness run` processes on the embedded stand-ins: an abort threshold on
lock_wait_ms stops shared-lock early from inside Locust (exit 3, the report says when and why, its rows kept),
and --baseline passes the same code twice and fails a build whose commit was made slower (exit 3, naming it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from tests.e2e.conftest import ROOT, SCENARIOS, clean_env, harness

pytestmark = [pytest.mark.e2e]

ABORT = '[checks]\nthresholds = [{ check = "p95(lock_wait_ms, all) < 500ms", abort = true }]\n'
SLOWER = '[fidelity.pauses]\nprobability = 1.0\nduration = "200ms"  # every commit waits 200 ms more\n'


def _scenario(tmp_path: Path, extra: str, name: str) -> Path:
    """shared-lock with ``extra`` appended (its name kept: a baseline must be of the same scenario)."""
    path = tmp_path / f"{name}.toml"
    path.write_text((SCENARIOS / "shared-lock.toml").read_text() + "\n" + extra)
    return path


@pytest.mark.xdist_group("gates-abort")
def test_an_abort_threshold_stops_shared_lock_early_and_the_report_says_why(tmp_path):
    run_dir = tmp_path / "aborted"
    proc = harness("run", str(_scenario(tmp_path, ABORT, "abort")), "--duration", "60s", "--run-dir", str(run_dir),
                   "--junit", str(tmp_path / "junit.xml"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    info = json.loads((run_dir / "run.json").read_text())
    a = info["aborted"]
    assert a["check"] == "p95(lock_wait_ms, all) < 500ms" and a["at_s"] <= 35, a  # judged every 10 s: early
    assert info["stop_reason"].startswith(f"aborted at {a['at_s']:.0f} s by the threshold"), info["stop_reason"]
    rows = pd.read_parquet(run_dir / "iterations")
    assert len(rows) == info["rows_written"] > 0  # every row recorded, through the test's own stop
    assert (rows["ts_end"].max() - rows["ts_start"].min()).total_seconds() < 45  # the load did stop early
    page = (run_dir / "report" / "index.html").read_text()
    said = f"Check failed: stopped early at {a['at_s']:.0f} s of the load: p95 lock wait (all iterations) "
    assert re.search(re.escape(said) + r"[0-9,.]+ ms \[", page), "the first screen says when and why"
    assert "check failed: stopped early" in proc.stderr
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    assert cases["aborted"].find("failure") is not None


@pytest.mark.xdist_group("gates-baseline")
def test_the_baseline_passes_the_same_code_and_fails_a_slower_commit(tmp_path):
    base, same, slow = tmp_path / "base", tmp_path / "same", tmp_path / "slow"
    common = ("--duration", "10s", "--users", "4")
    twice = [subprocess.Popen([sys.executable, "-m", "harness", "run", "shared-lock", *common, "--run-dir", str(d),
                               "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=clean_env(), cwd=ROOT) for d in (base, same)]  # the same code, side by side
    for proc in twice:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, out
    p = harness("report", str(same), "--baseline", str(base))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 regressions past the 10 % tolerance" in p.stdout and "REGRESSION" not in p.stdout
    p = harness("run", str(_scenario(tmp_path, SLOWER, "slower")), *common, "--run-dir", str(slow),
                "--baseline", str(base))
    assert p.returncode == 3, p.stdout + p.stderr
    assert re.search(r"REGRESSION commit: [0-9.]+ against [0-9.]+ ms", p.stdout), p.stdout
    assert "regression against the baseline: slow: commit" in p.stderr
    summary = json.loads((slow / "report" / "summary.json").read_text())["runs"][0]["findings"]["baseline"]
    assert "commit" in summary["regressions"]
    other = harness("run", "shared-lock", "--duration", "8s", "--users", "2", "--run-dir", str(tmp_path / "x"),
                    "--baseline", str(base))
    assert other.returncode == 2 and "its fleet size is 4, this run's 2" in other.stderr
    assert not (tmp_path / "x").exists()  # refused before anything started
