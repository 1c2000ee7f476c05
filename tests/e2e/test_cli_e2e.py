"""The command line and Locust entry points, end to end, and bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pandas as pd
import pytest

from tests.e2e.conftest import ROOT, SCENARIOS, clean_env, harness, rows, senders
from tests.support.web_session import assert_contiguous, wait_for

pytestmark = pytest.mark.e2e


def test_processes_two_gives_rows_from_both_worker_processes(tmp_path):
    run_dir = tmp_path / "dist"
    p = harness("run", "namespaced", "--processes", "2", "--users", "4", "--duration", "12s",
                "--run-dir", str(run_dir), "--no-report")
    assert p.returncode == 0, p.stdout + p.stderr
    d = rows(run_dir)
    assert set(d["worker"]) == {"worker-0", "worker-1"}
    assert d.groupby("worker")["user"].nunique().to_dict() == {"worker-0": 2, "worker-1": 2}
    assert d["ok"].all() and len(d) >= 8
    info = json.loads((run_dir / "run.json").read_text())
    assert info["fleet"] == {"workers": 4, "processes": 2, "spawn_rate": 4.0}
    assert info["stop_reason"] == "run time reached (12 s)" and info["incomplete"] == []
    # Nothing lost between the workers and the master: each user's iterations run 0..n-1 without a gap,
    # and each worker process's rows on disk are exactly the rows it says it sent.
    assert_contiguous(d)
    on_disk = d.groupby("worker").size().to_dict()
    assert {name: p["rows_sent"] for name, p in info["processes"].items()} == on_disk
    # the observer runs in the master: its last sample, after the load, reads every worker's namespace
    observed = pd.read_csv(run_dir / "observed.csv")
    assert set(observed.loc[observed["what"] == "index_entries", "key"]) == set(d["user"])


def test_a_killed_worker_is_named_and_the_others_rows_are_complete(tmp_path):
    """A scenario that accepts a lost worker ([checks] allow_lost_workers): the run goes on, exit 0 (without it,
    a lost worker stops the test and the run exits 5: tests/e2e/test_fail_loud_e2e.py)."""
    run_dir = tmp_path / "killed"
    sc = (SCENARIOS / "namespaced.toml").read_text()
    scenario = tmp_path / "lost-ok.toml"
    scenario.write_text(sc.replace("[lock]", "[checks]\nallow_lost_workers = true\n\n[lock]"))
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(scenario), "--processes", "2", "--users",
                             "4", "--duration", "20s", "--run-dir", str(run_dir), "--no-report"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env(), cwd=ROOT,
                            start_new_session=True)
    try:
        wait_for("rows from both worker processes", lambda: senders(run_dir) >= {"worker-0", "worker-1"}, 90)
        victim = _worker_pids(proc.pid)[0]
        os.kill(victim, signal.SIGKILL)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    info = json.loads((run_dir / "run.json").read_text())
    d = rows(run_dir)
    by_pid = {p["pid"]: name for name, p in info["processes"].items()}
    killed, survivor = by_pid[victim], next(n for pid, n in by_pid.items() if pid != victim)
    assert [x["process"] for x in info["incomplete"]] == [killed], info["incomplete"]
    assert "killed or lost" in info["incomplete"][0]["reason"]
    assert info["processes"][survivor]["complete"] and not info["processes"][killed]["complete"]
    # the survivor's rows are all there; the killed worker's, up to its last report, without gaps
    assert_contiguous(d)
    assert (d["worker"] == survivor).sum() == info["processes"][survivor]["rows_sent"]
    assert (d["worker"] == killed).sum() == info["processes"][killed]["rows"] > 0
    assert d.loc[d["worker"] == survivor, "ts_end"].max() > d.loc[d["worker"] == killed, "ts_end"].max()


def _worker_pids(harness_pid: int) -> list[int]:
    """The Locust worker processes: Locust's master (a child of `harness run`) forks them under its own command
    line, which tells them apart from its other children (the stand-in probe, a report)."""
    import psutil

    for child in psutil.Process(harness_pid).children():
        if "locust" in " ".join(child.cmdline()):
            workers = [c.pid for c in child.children() if c.cmdline() == child.cmdline()]
            if len(workers) == 2:
                return workers
    raise AssertionError("no Locust master with two worker processes under harness run")


def test_checks_gate_the_exit_code(tmp_path):
    sc = (SCENARIOS / "namespaced.toml").read_text()
    sc = sc.replace("[lock]", "[checks]\nmin_rate_last_window = 10000.0\nwindow = \"5s\"\n\n[lock]")
    path = tmp_path / "impossible.toml"
    path.write_text(sc)
    p = harness("run", str(path), "--duration", "5s", "--users", "2", "--run-dir", str(tmp_path / "r"),
                "--no-report")
    assert p.returncode == 3, p.stdout + p.stderr
    assert re.search(r"check failed: fleet rate [\d.]+ it/s in the last \d+s is below the required 10000", p.stderr)


def test_plain_locust_single_process_uses_embedded_default(tmp_path):
    run_dir = tmp_path / "plain"
    p = subprocess.run([sys.executable, "-m", "locust", "-f", str(ROOT / "locustfile.py"), "--headless",
                        "-u", "2", "-r", "2", "-t", "6s", "--scenario", "disposable", "--run-dir", str(run_dir),
                        "--exit-code-on-error", "0"], capture_output=True, text=True, env=clean_env(),
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    d = rows(run_dir)
    assert set(d["user"]) == {"w0-0", "w0-1"} and d["ok"].all()
    assert json.loads((run_dir / "run.json").read_text())["endpoint_kind"] == "embedded"
    # every step and the iteration itself are Locust request events
    assert re.search(r"dynamodb\s+iteration\s+\d+", p.stderr)
    for step in ("lock", "pull", "method", "push", "commit", "export", "delete", "release"):
        assert re.search(rf"dynamodb\s+{step}\s+\d+", p.stderr), step


# ---- bad input: one line, non-zero exit, no traceback ----------------------------------


def _one_line_error(p: subprocess.CompletedProcess, code: int = 2) -> str:
    assert p.returncode == code, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_unknown_scenario(tmp_path):
    line = _one_line_error(harness("run", "no-such-thing", "--run-dir", str(tmp_path / "x")))
    assert "unknown scenario 'no-such-thing'" in line and "legacy-gsi" in line


def test_malformed_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \"x\"\n[fleet\nworkers = 3\n")
    line = _one_line_error(harness("run", str(bad), "--run-dir", str(tmp_path / "x")))
    assert "bad.toml: malformed TOML" in line


def test_invalid_scenario_value_names_key_and_file(tmp_path):
    bad = tmp_path / "neg.toml"
    bad.write_text("[fleet]\nworkers = -3\n")
    line = _one_line_error(harness("run", str(bad), "--run-dir", str(tmp_path / "x")))
    assert "neg.toml: fleet.workers must be at least 1, got -3" in line


def test_unreachable_endpoint(tmp_path):
    env = clean_env(AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    line = _one_line_error(harness("run", "namespaced", "--run-dir", str(tmp_path / "x"), env=env))
    assert "cannot reach dynamodb at http://127.0.0.1:9" in line


def test_missing_credentials_for_a_real_endpoint(tmp_path):
    env = clean_env(HOME=str(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "none"),
                    AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    line = _one_line_error(harness("run", "namespaced", "--aws", "--run-dir", str(tmp_path / "x"), env=env))
    assert line == ("harness: no AWS credentials found for AWS: "
                    "set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")


def test_run_dir_not_empty_is_refused_and_kept(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    line = _one_line_error(harness("run", "namespaced", "--run-dir", str(tmp_path)))
    assert "is not empty" in line and (tmp_path / "keep.txt").read_text() == "mine"


def test_scenarios_lists_every_file():
    p = harness("scenarios")
    assert p.returncode == 0
    names = [ln.split()[0] for ln in p.stdout.splitlines()]
    assert names == sorted(x.stem for x in SCENARIOS.glob("*.toml"))
