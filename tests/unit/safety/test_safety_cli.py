"""``harness check RUN_DIR``: exit 0 / 3, one-line errors (exit 2), safety.json written."""

from __future__ import annotations

import gzip
import json

import pytest

from harness.cli.main import main
from harness.record.writer import HistoryWriter
from harness.safety.state import STATE_FILE, capture
from tests.unit.safety.test_safety_checker import run_some, two_writers


@pytest.fixture
def run_dir(aws, clock, tmp_path):
    """A run directory as `harness run` leaves it: run.json, history, the captured final state."""
    be, events, a, b = two_writers(aws, clock, "per-model")
    run_some(a, b, 2)
    d = tmp_path / "run"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"backend": "dynamodb", "endpoint": {"kind": "moto"}}))
    writer = HistoryWriter(d)
    writer.add(events)
    writer.flush()
    capture(be, d)
    return d


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_clean_run_checks_out(run_dir, capsys):
    assert main(["check", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "4 acknowledged commits of 4" in out and "0 violations" in out
    report = json.loads((run_dir / "safety.json").read_text())
    assert report["violations"] == 0 and report["acknowledged"] == 4 and report["state_source"] == "final-state"


def test_a_corrupted_final_state_exits_3_and_names_it(run_dir, capsys):
    path = run_dir / STATE_FILE
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    dropped = json.loads(lines[1])["path"]
    with gzip.open(path, "wt") as f:
        f.write("\n".join([lines[0]] + lines[2:]) + "\n")
    assert main(["check", str(run_dir)]) == 3
    captured = capsys.readouterr()
    assert "1 lost" in captured.out and "check failed: safety: 1 violations (1 lost)" in captured.err
    assert json.loads((run_dir / "safety.json").read_text())["details"]["lost"][0]["path"] == dropped


def test_not_a_run_directory(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert "is not a run directory (no run.json)" in one_line_error(capsys)


def test_a_run_without_history(run_dir, capsys):
    import shutil

    shutil.rmtree(run_dir / "history")
    assert main(["check", str(run_dir)]) == 2
    assert "has no history" in one_line_error(capsys)


def test_a_run_without_captured_state(run_dir, capsys):
    (run_dir / STATE_FILE).unlink()
    assert main(["check", str(run_dir)]) == 2
    err = one_line_error(capsys)
    assert "no captured final state" in err and "harness check --live" in err


def test_live_reads_the_endpoint_the_run_recorded_not_the_environment(run_dir, capsys, monkeypatch):
    """An embedded stand-in is gone with its run: --live says so, whatever AWS_ENDPOINT_URL now says."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert main(["check", str(run_dir), "--live"]) == 2
    assert "was on the embedded stand-in, which ended with the run" in one_line_error(capsys)
