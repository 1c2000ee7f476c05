"""The harness's own parts fail loudly: each part a run starts, killed in a real run, stops it with exit 5.

Each test starts `harness run` on the embedded default, waits for its first rows, kills one part (the stand-in,
the probe, the Locust process, a Locust worker process under --processes 2) with SIGKILL and checks what the
user and CI see: the exit code, the one stderr line, run.json's `failed_parts`, the rows kept, and that the
fleet did not spin on failures after the death. The disk: a run directory on a small tmpfs (mounted here when
the machine allows it), refused before the run and filled during one. An endpoint that refuses connections
from the start, and one that dies during the run (a user's, not watched: the workers back off and the
built-in `dead_endpoint` check fails the run).
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.e2e.conftest import ROOT, SCENARIOS, clean_env, harness, rows, senders
from tests.support.web_session import assert_contiguous, wait_for

pytestmark = pytest.mark.e2e


def _start(run_dir: Path, *args: str, env: dict[str, str] | None = None,
           scenario: str = "namespaced") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "run", scenario, "--run-dir", str(run_dir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or clean_env(),
                            cwd=ROOT, start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _shards(run_dir: Path) -> list[Path]:
    d = run_dir / "iterations"
    return sorted(d.glob("*.parquet")) if d.is_dir() else []


def _rows_on_disk(run_dir: Path) -> int:
    parts = _shards(run_dir)
    return len(pd.read_parquet(parts, columns=["ok"])) if parts else 0


def _first_rows(proc: subprocess.Popen, run_dir: Path) -> int:
    wait_for("the run's first rows", lambda: proc.poll() is not None or _rows_on_disk(run_dir) > 0, 90)
    assert proc.poll() is None, "the run ended before its first rows"
    return _rows_on_disk(run_dir)


def _children(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _find(pid: int, what: str, match) -> psutil.Process:  # noqa: ANN001 - a predicate on a command line
    def look() -> psutil.Process | None:
        for p in _children(pid):
            try:
                if match(p.cmdline()):
                    return p
            except psutil.Error:
                continue
        return None
    return wait_for(what, look, 30)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _info(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def _failed_after(run_dir: Path, t: float) -> int:
    d = rows(run_dir)
    started = d["ts_start"].map(lambda ts: ts.timestamp())
    return int(((~d["ok"]) & (started >= t)).sum())


def _killed(p: psutil.Process) -> float:
    t = time.time()
    p.send_signal(signal.SIGKILL)
    return t


def _check_stopped(run_dir: Path, err: str, pattern: str, part: str, pid: int, killed_at: float,
                   before: int) -> dict:
    """What every killed part must give: the one line, its record, the rows kept, no spin after the death."""
    line = _one_line(err)
    assert re.fullmatch(r"harness: " + pattern, line), line
    info = _info(run_dir)
    first = info["failed_parts"][0]
    assert (first["part"], first["pid"], first["signal"]) == (part, pid, "SIGKILL"), first
    assert first["at"] - killed_at < 3.0, "noticed within about a second (a poll is 0.5 s)"
    assert "harness: " + first["line"] == line
    assert _rows_on_disk(run_dir) >= before > 0  # every row written before the death is kept
    assert _failed_after(run_dir, killed_at) < 50
    return info


def _kill_one(run_dir: Path, what: str, match, pattern: str, part: str, *args: str) -> tuple[dict, float]:  # noqa: ANN001
    """A 40 s run, one part killed once its first rows are written: the checks every kill gets, and run.json."""
    proc = _start(run_dir, "--duration", "40s", *args)
    before = _first_rows(proc, run_dir)
    victim = _find(proc.pid, what, match)
    killed_at = _killed(victim)
    out, err = _finish(proc)
    assert proc.returncode == 5, out + err
    return _check_stopped(run_dir, err, pattern, part, victim.pid, killed_at, before), killed_at


def test_a_killed_stand_in_stops_the_test_and_the_report_says_so(tmp_path):
    run_dir = tmp_path / "standin"
    info, killed_at = _kill_one(run_dir, "dynalite", lambda c: any("dynalite_server.js" in x for x in c),
                                r"the embedded stand-in dynalite exited at \d+ s \(killed by SIGKILL\); the test was "
                                r"stopped", "stand-in")
    assert info["failed_parts"][0]["log"].endswith("dynalite.log")
    assert info["stop_reason"] == info["failed_parts"][0]["line"] and info["status"] == "finished"
    assert info["outcome"] == "did not complete"  # beside status, which keeps its meaning
    assert info["outcome_line"].startswith("did not complete: the embedded stand-in dynalite exited at ")
    assert pd.Timestamp(info["ended_at"]).timestamp() - killed_at < 10, "stopped at the death, not at 40 s"
    page = (run_dir / "report" / "index.html").read_text()
    first_screen = page[: page.index("<details")]
    assert "The run did not complete: the embedded stand-in dynalite exited at" in first_screen


def test_a_killed_probe_stops_the_test(tmp_path):
    info, killed_at = _kill_one(tmp_path / "probe", "the probe", lambda c: "harness.aws.fidelity.probe" in c,
                                r"the stand-in probe exited at \d+ s \(killed by SIGKILL\); the test was stopped",
                                "probe", "--users", "2", "--no-report")
    assert info["failed_parts"][0]["log"].endswith("probe.log")
    assert pd.Timestamp(info["ended_at"]).timestamp() - killed_at < 10


def test_a_killed_locust_process_is_not_a_pass(tmp_path):
    info, _ = _kill_one(tmp_path / "locust", "Locust", lambda c: "locust" in c[:3],
                        r"the Locust process \(local\) exited at \d+ s \(killed by SIGKILL\); the run did not "
                        r"complete \(rows up to its last flush are kept\)", "locust", "--users", "2", "--no-report")
    assert info["status"] == "running"  # its record was never closed: run.json says so, and what died


def test_a_killed_worker_process_stops_the_test_and_keeps_the_others_rows(tmp_path):
    run_dir = tmp_path / "worker"
    proc = _start(run_dir, "--processes", "2", "--users", "4", "--duration", "40s", "--no-report")
    wait_for("rows from both worker processes", lambda: senders(run_dir) >= {"worker-0", "worker-1"}, 90)
    before = _rows_on_disk(run_dir)
    master = _find(proc.pid, "the master", lambda c: "--processes" in c)
    victim = wait_for("two workers", lambda: [p for p in master.children() if p.cmdline() == master.cmdline()][:1]
                      if len(master.children()) >= 2 else None, 30)[0]
    killed_at = _killed(victim)
    out, err = _finish(proc)
    assert proc.returncode == 5, out + err
    info = _info(run_dir)
    by_pid = {p["pid"]: name for name, p in info["processes"].items()}
    killed, survivor = by_pid[victim.pid], next(n for pid, n in by_pid.items() if pid != victim.pid)
    _check_stopped(run_dir, err, rf"the Locust worker process {killed} exited at \d+ s \(killed by SIGKILL\); the "
                   r"test was stopped", "locust-worker", victim.pid, killed_at, before)
    assert [x["process"] for x in info["incomplete"]] == [killed]  # today's record is kept
    d = rows(run_dir)
    assert_contiguous(d)
    assert (d["worker"] == survivor).sum() == info["processes"][survivor]["rows_sent"]
    assert pd.Timestamp(info["ended_at"]).timestamp() - killed_at < 20


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_that_refuses_from_the_start_is_one_line(tmp_path):
    run_dir = tmp_path / "refused"
    env = clean_env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{_closed_port()}", AWS_ACCESS_KEY_ID="x",
                    AWS_SECRET_ACCESS_KEY="y")
    p = harness("run", "namespaced", "--duration", "10s", "--run-dir", str(run_dir), "--no-report", env=env,
                timeout=60)
    assert p.returncode != 0
    assert re.fullmatch(r"harness: cannot reach dynamodb at http://127\.0\.0\.1:\d+: is the server running\? "
                        r"check AWS_ENDPOINT_URL", _one_line(p.stderr))
    assert not run_dir.exists()  # refused before the load: not one row, and no directory a rerun would refuse


def test_an_endpoint_that_dies_is_backed_off_and_fails_the_run(tmp_path):
    """A user's endpoint (not the harness's: not watched) dies: the workers back off, the last window is only
    connection failures, the built-in check fails the run with one line."""
    sc = (SCENARIOS / "namespaced.toml").read_text().replace("[lock]", '[checks]\nwindow = "3s"\n\n[lock]')
    scenario = tmp_path / "short-window.toml"
    scenario.write_text(sc)
    port = _closed_port()
    server = subprocess.Popen([sys.executable, "-m", "harness", "standin", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(), cwd=ROOT,
                              start_new_session=True)
    try:
        wait_for("the user's endpoint", lambda: socket.create_connection(("127.0.0.1", port), 1).close() or True,
                 30)
        run_dir = tmp_path / "dies"
        env = clean_env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="x",
                        AWS_SECRET_ACCESS_KEY="y")
        proc = _start(run_dir, "--duration", "11s", "--no-report", env=env, scenario=str(scenario))
        wait_for("the test's start", lambda: (run_dir / "run.json").exists(), 90)
        time.sleep(3)  # a few successful iterations first
        killed_at = time.time()
        os.killpg(server.pid, signal.SIGKILL)
        out, err = _finish(proc)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)
    assert proc.returncode == 3, out + err
    assert re.fullmatch(r"harness: check failed: dead_endpoint: every one of the \d+ iterations in the last 3s "
                        r"failed to connect .*", _one_line(err))
    d = rows(run_dir)
    assert d["ok"].any()  # it answered before it died
    after = d[d["ts_start"].map(lambda ts: ts.timestamp()) >= killed_at + 1]
    assert len(after) and (after["error_kind"] == "connection").all()
    seconds = pd.Timestamp(_info(run_dir)["ended_at"]).timestamp() - killed_at
    assert len(after) < 4 * seconds, f"{len(after)} failed rows in {seconds:.0f} s: 4 workers spun"  # backed off


# ---- the disk ------------------------------------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path):
    """A tmpfs of the size asked for, mounted for the test (root and a kernel that allows it), else skipped."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        d = tmp_path / f"fs-{size}"
        d.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], capture_output=True,
                           text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({(p.stderr or p.stdout).strip() or p.returncode})")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_run_that_cannot_fit_is_refused_before_it_starts(small_fs):
    fs = small_fs("6m")
    p = harness("run", "namespaced", "--run-dir", str(fs / "run"), "--no-report", timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    line = _one_line(p.stderr)
    assert re.fullmatch(r"harness: the run directory \S+ has 6 MiB free and this run would write about [\d.]+ MiB "
                        r"\([\d,]+ iterations at most: rows .*, lock history .*, dynalite's data .*\): free some "
                        r"space, choose another --run-dir, or shorten the run \(--duration, --workers\)", line), line
    assert not (fs / "run").exists()  # nothing started (no stand-in, no Locust) and nothing left behind


def test_a_disk_that_fills_during_the_run_stops_it_and_keeps_the_rows(small_fs):
    fs = small_fs("10m")
    run_dir = fs / "run"
    proc = _start(run_dir, "--users", "1", "--duration", "15s", "--no-report")
    before = _first_rows(proc, run_dir)
    filled_at = time.time()
    try:  # another writer takes the rest of the filesystem (on a slow machine the run's own rows may have already)
        with open(fs / "filler", "wb") as f:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    try:
        out, err = _finish(proc)
    finally:
        (fs / "filler").unlink(missing_ok=True)
    assert proc.returncode == 5, out + err
    line = _one_line(err)
    assert re.fullmatch(r"harness: .* (filled|exited) at \d+ s \(.*No space left on device.*\); the test was stopped",
                        line), line
    info = _info(run_dir)
    assert info["failed_parts"][0]["at"] - filled_at < 3.0 and info["stop_reason"] == line[len("harness: "):]
    shards = _shards(run_dir)
    assert len(pd.read_parquet(shards)) >= before  # every shard whole: each one reads
    assert not list(run_dir.glob("*/*.tmp")) and not (run_dir / ".harness-reserve").exists()
    assert info["status"] == "finished"  # the stop was recorded, in the reserve given back
