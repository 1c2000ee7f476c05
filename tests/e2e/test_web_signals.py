"""Signals to `harness run --web --processes 2`: the running test is recorded, then nothing is left running."""

from __future__ import annotations

import json
import signal

import pytest

from tests.support.web_session import WebRun, assert_contiguous, rows_of, wait_for

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_stops_locust_its_workers_and_the_server_and_keeps_the_rows(tmp_path, sig):
    run_dir = tmp_path / "session"
    web = WebRun(run_dir, "--users", "2", "--duration", "60s", "--processes", "2")
    try:
        web.wait_ready(workers=2)
        assert web.post("/swarm", {"user_count": 2, "spawn_rate": 2, "host": "", "scenario": "namespaced"})["success"]
        wait_for("rows on disk", lambda: list(run_dir.rglob("*.parquet")), 90)
        web.remember_processes()
        tree = sorted(pid for pid, _ in web.pids)
        assert len(tree) >= 5, f"expected harness, moto, Locust master and 2 workers; got {tree}"
        code = web.stop(sig, timeout=90)
        left = web.alive()
        out = web.output()
    finally:
        web.kill()
    assert left == [], f"processes left running after {sig.name}: {left}\n{out}"
    assert code == 128 + sig, out
    test_dir = run_dir / "tests" / "001"
    info = json.loads((test_dir / "run.json").read_text())
    rows = rows_of(test_dir)
    assert info["status"] == "finished" and info["stop_reason"] == sig.name, info
    assert info["incomplete"] == [] and len(rows) == info["rows_written"] > 0
    per_user = assert_contiguous(rows)
    sent = {name: p["rows_sent"] for name, p in info["processes"].items()}
    assert sum(sent.values()) == len(rows) and set(sent) == {"worker-0", "worker-1"}
    assert sum(per_user.values()) == len(rows)
    session = json.loads((run_dir / "run.json").read_text())
    assert session["status"] == "closed" and session["tests"][0]["rows"] == len(rows)
    assert f"harness: reports not built ({sig.name})" in out
