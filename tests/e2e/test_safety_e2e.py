"""lock-safety end to end: real Locust processes, the embedded moto server, paused holders, `harness check`."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import SCENARIOS, harness


def figures(run_dir) -> dict:
    return json.loads((run_dir / "safety.json").read_text())


@pytest.mark.e2e
def test_fenced_run_across_processes_has_no_violation_and_checks_again(tmp_path):
    """Master + 2 workers: the workers' history rides their reports to the master; 0 violations, twice.

    Six workers, three per namespace (the scenario's groups): each process's group contends its own lock.
    """
    run_dir = tmp_path / "fenced"
    proc = harness("run", "lock-safety", "--duration", "15s", "--processes", "2", "--users", "6",
                   "--run-dir", str(run_dir), "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = figures(run_dir)
    assert report["acknowledged"] >= 1 and report["violations"] == 0, report["details"]
    assert report["entries"] >= 5 and report["state_source"] == "captured at the end of the run"
    events = [json.loads(x) for p in (run_dir / "history").glob("*.jsonl") for x in p.read_text().splitlines()]
    assert {e["worker"] for e in events} == {"worker-0", "worker-1"}  # written by the master, from both workers
    assert sum(e["type"] == "grant" for e in events) == report["acquisitions"]
    users: dict[str, set] = {}
    contended: dict[str, int] = {}
    for e in events:
        if e["type"] in ("grant", "lock_timeout"):
            users.setdefault(e["key"], set()).add(e["user"])
        if e["type"] == "grant" and e["attempts"] > 1:  # found the lock held by another of its group first
            contended[e["key"]] = contended.get(e["key"], 0) + 1
    # two locks, one per process's group of three, each wanted by its whole group and contended
    assert set(users) == {".locks/w0-ns0.lock", ".locks/w1-ns0.lock"}, users
    assert all(len(u) == 3 for u in users.values()), users
    # (the report also counts a grant made while another worker waited for the key: at least these)
    assert set(contended) == set(users) and sum(contended.values()) <= report["contended"], contended
    again = harness("check", str(run_dir))
    assert again.returncode == 0, again.stderr
    assert re.search(rf"{report['acknowledged']} acknowledged commits .* 0 violations", again.stdout)


@pytest.mark.e2e
def test_unfenced_run_with_every_holder_paused_is_caught(tmp_path):
    """swamp's own commit (no fencing) with every holder frozen past its TTL before committing: the stale
    commits land, the run fails its safety check (exit 3), and `harness check` says the same."""
    text = (SCENARIOS / "lock-safety.toml").read_text()
    text = re.sub(r"(?m)^fencing = true.*$", "fencing = false", text)
    text = re.sub(r"(?m)^probability = .*$", "probability = 1.0", text)
    scenario = tmp_path / "unfenced.toml"
    scenario.write_text(text)
    run_dir = tmp_path / "unfenced"
    proc = harness("run", str(scenario), "--backend", "s3", "--duration", "15s", "--users", "3",
                   "--run-dir", str(run_dir), "--no-report")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = figures(run_dir)
    assert report["violations"] >= 1 and report["overlaps"] >= 1 and report["pauses"] >= 1
    assert f"safety: {report['violations']} violations" in proc.stderr
    again = harness("check", str(run_dir))
    assert again.returncode == 3 and f"{report['violations']} violations" in again.stdout


@pytest.mark.e2e
def test_check_live_reads_the_table_on_the_users_server(tmp_path):
    """With an endpoint the user runs, the table outlives the run: `harness check --live` reads it there."""
    from harness.aws.moto_server import EmbeddedMoto
    from tests.e2e.conftest import clean_env

    server = EmbeddedMoto().start()
    try:
        env = clean_env(AWS_ENDPOINT_URL=server.url)
        run_dir = tmp_path / "live"
        proc = harness("run", "lock-safety", "--duration", "10s", "--users", "3", "--run-dir", str(run_dir),
                       "--no-report", env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        at_end = figures(run_dir)
        live = harness("check", str(run_dir), "--live", env=env)
        assert live.returncode == 0, live.stderr
        report = figures(run_dir)
        assert report["state_source"] == "live" and report["violations"] == 0
        assert report["entries"] == at_end["entries"] >= 1 and report["acknowledged"] == at_end["acknowledged"]
    finally:
        server.stop()
    gone = harness("check", str(run_dir), "--live", env=clean_env(AWS_ENDPOINT_URL=server.url))
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1
    assert "cannot read the run's dynamodb state" in gone.stderr
