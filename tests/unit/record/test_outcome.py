"""One outcome, said alike everywhere (issue 54, items 1 and 5).

Four synthetic run directories (tests/support/synthetic.py), each what a user meets: a completed run whose rate fell, a
run stopped with Ctrl-C, a run a part died in (exit 5) and an 8 s web test; each reported once for the module.
``harness runs`` must give four different, true outcomes in the words each report's first screen says. Then
the pieces: the check that cannot fail, the bound that moved, run.json's new fields, the progress line.
"""

from __future__ import annotations

import json
import re
import time
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from tests.support.synthetic import T0, make_run

pytestmark = pytest.mark.xdist_group("outcome")

CHECKS = {"max_failure_ratio": 0.5, "min_rate_last_window": 0.0, "window_s": 30.0}
STEPS = {"commit_ms": lambda t: 200 + 10 * t}
DIED = "the embedded stand-in dynalite exited at 19 s (killed by SIGKILL); the test was stopped"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("outcomes")
    # the demo's shape: the rate falls x4 a third of the way in, then holds; it ran its whole 90 s
    make_run(root / "falling", workers=4, duration_s=90.0, seed=1, t0=T0, steps=STEPS,
             rate=lambda t: np.where(t < 30, 3.0, 0.75))
    # Ctrl-C at 35 s of a 90 s run: the master records stop_reason SIGINT (harness/load/session.py)
    make_run(root / "ctrl-c", workers=4, duration_s=35.0, seed=2, t0=T0 + 3600, steps=STEPS, checks=CHECKS,
             rate=lambda t: np.full_like(t, 2.0), info={"stop_reason": "SIGINT", "options": {"run_time_s": 90}})
    # the stand-in died at 19 s: harness run wrote failed_parts and exited 5 (harness/supervisor/failed_parts.py)
    make_run(root / "exit-5", workers=4, duration_s=20.0, seed=3, t0=T0 + 7200, steps=STEPS, checks=CHECKS,
             rate=lambda t: np.full_like(t, 2.0),
             info={"stop_reason": DIED, "failed_parts": [{"part": "stand-in", "name": "dynalite", "at": T0 + 7219,
                                                          "at_s": 19.0, "signal": "SIGKILL", "line": DIED}]})
    # an 8 s web test of 0.8 s iterations, stopped from the UI: its first iterations had not finished
    make_run(root / "web-8s", workers=10, duration_s=8.0, seed=4, t0=T0 + 9000,
             steps={"commit_ms": lambda t: np.full_like(t, 800.0)}, rate=lambda t: np.where(t < 3, 0.05, 1.2),
             info={"stop_reason": "stopped from the web UI", "options": {"run_time_s": None, "users": 10}})
    for name in ("falling", "ctrl-c", "exit-5", "web-8s"):
        assert main(["report", str(root / name)]) == 0
    return root


def _listed(root: Path, capsys) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["runs", "--runs-dir", str(root), "--json"]) == 0
    return {Path(e["path"]).name: e for e in map(json.loads, capsys.readouterr().out.splitlines())}


def _first_screen(run_dir: Path) -> str:
    """The report's first screen as text: everything before its first <details> section."""
    html = (run_dir / "report" / "index.html").read_text()
    return unescape(re.sub(r"<[^>]+>", " ", html[:html.index("<details")]))


def _findings(run_dir: Path) -> dict:
    return json.loads((run_dir / "report" / "summary.json").read_text())["runs"][0]["findings"]


def test_harness_runs_gives_four_true_outcomes_in_each_reports_own_words(runs, capsys):
    got = _listed(runs, capsys)
    assert set(got) == {"falling", "ctrl-c", "exit-5", "web-8s"}
    # four different outcomes, each true of its run
    assert got["falling"]["outcome"] == "completed (90 s)"
    assert got["falling"]["verdict"].startswith("fell x") and "held at the floor" in got["falling"]["verdict"]
    assert got["ctrl-c"]["outcome"] == "interrupted by Ctrl-C (SIGINT) at 35 s of 90 s"
    assert got["exit-5"]["outcome"] == "did not complete: the embedded stand-in dynalite exited at 19 s"
    assert got["exit-5"]["checks"] == "not evaluated (the run did not complete)"
    assert got["ctrl-c"]["checks"] == "passed 1/1"  # its checks were judged over what ran (docs/cli.md)
    assert got["web-8s"]["outcome"].startswith("completed (stopped from the web UI at 8 s")
    assert got["web-8s"]["verdict"].startswith("too short to judge: ")
    assert len({(e["outcome"], e["verdict"]) for e in got.values()}) == 4
    # the same words on each report's first screen, and in its summary.json
    for name, e in got.items():
        screen = _first_screen(runs / name)
        for key in ("outcome", "verdict", "bound"):
            assert e[key].lower() in screen.lower(), (name, key, e[key], screen)
        if e["checks"] != "no checks":
            assert e["checks"] in screen, (name, e["checks"], screen)
        o = _findings(runs / name)["outcome"]
        assert (o["completion_short"], o["rate"], o["bound"], o["checks"]) == (e["outcome"], e["verdict"],
                                                                              e["bound"], e["checks"])
    # and the table `harness runs` prints holds them too (cut to its columns' widths)
    assert main(["runs", "--runs-dir", str(runs)]) == 0
    table = capsys.readouterr().out
    for e in got.values():
        assert e["outcome"][:40] in table and e["verdict"][:40] in table


def test_a_run_cut_short_says_so_first_and_its_checks_are_not_passed(runs):
    screen = _first_screen(runs / "ctrl-c")
    assert screen.index("Interrupted by Ctrl-C (SIGINT) at 35 s of 90 s") < screen.index("Bound by")
    for name, cut in (("ctrl-c", True), ("exit-5", True), ("falling", False)):  # a cut run's line stands out
        html = (runs / name / "report" / "index.html").read_text()
        assert ('<tr class="warn"><th>Outcome</th>' in html) is cut, name
    exit5 = _findings(runs / "exit-5")
    assert exit5["outcome"]["checks_state"] == "not evaluated" and "passed" not in _first_screen(runs / "exit-5")
    assert "The run did not complete: " + DIED in _first_screen(runs / "exit-5")
    assert "Check failed" not in (runs / "exit-5" / "report" / "index.html").read_text()


def test_an_eight_second_test_is_too_short_to_judge_not_a_rise(runs):
    f = _findings(runs / "web-8s")
    assert f["fleet"]["shape"] == "rising"  # what the segments alone say: the first iterations had not finished
    assert not f["outcome"]["rate_judged"] and "rose" not in f["verdict"]["rate"]
    assert f["verdict"]["rate"].endswith(f"{f['outcome']['rate']}.")
    assert "too short to judge" in _first_screen(runs / "web-8s")


def test_the_default_failure_ratio_cannot_fail_and_is_no_check(runs):
    from harness.report.load import open_run
    from harness.report.run.checks import results

    rows = open_run(runs / "falling").rows
    assert [r.name for r in results(rows, {"max_failure_ratio": 1.0, "min_rate_last_window": 0.0})] == []
    assert [r.name for r in results(rows, {"max_failure_ratio": 0.5})] == ["max_failure_ratio"]
    assert _findings(runs / "falling")["checks"] == []
    assert "passed" not in _first_screen(runs / "falling")


def test_the_first_screen_says_in_one_short_sentence_that_the_bound_moved(runs):
    f = _findings(runs / "falling")
    assert f["bottleneck_moved"] and f["outcome"]["bound_moved"]
    bound = f["outcome"]["bound"]
    assert "; it moved" in bound and len(bound.split()) <= 30, bound
    screen = _first_screen(runs / "falling")
    assert bound in screen and f["bottleneck"]["sentence"] not in screen  # the long sentence is in its section
    html = (runs / "falling" / "report" / "index.html").read_text()
    section = html[html.index("What binds the fleet?"):]
    assert f["bottleneck"]["sentence"].replace("'", "&#x27;") in section


def test_a_bound_that_moved_once_reads_where_and_to_what():
    from harness.record.outcome import bound_words

    seg = [{"kind": "step", "name": "commit", "utilization": 0.99, "seconds": [2, 31]},
           {"kind": "step", "name": "commit", "utilization": 0.97, "seconds": [31, 61]},
           {"kind": "stand-in", "name": "GetItem", "utilization": 0.83, "seconds": [61, 91]}]
    f = {"bottleneck": {"kind": "step", "name": "commit", "utilization": 0.94}, "bottlenecks": seg,
         "bottleneck_moved": True}
    assert bound_words(f) == (True, "the workers' own time in commit (94 %); it moved at 61 s to the stand-in "
                                    "GetItem 83 %")
    assert bound_words({**f, "bottleneck_moved": False}) == (False, "the workers' own time in commit (94 %)")


def test_run_json_says_how_the_run_ended_beside_its_status(tmp_path):
    from harness.record import runinfo
    from harness.record.outcome import run_json_fields
    from harness.record.parts import PartFailure
    from harness.supervisor.failed_parts import record

    assert run_json_fields({"status": "finished", "stop_reason": "SIGINT", "started_at": "2026-01-01T00:00:00+00:00",
                            "ended_at": "2026-01-01T00:00:35+00:00", "options": {"run_time_s": 90}}) == {
        "outcome": "interrupted", "outcome_line": "interrupted by Ctrl-C (SIGINT) at 35 s of 90 s"}
    assert run_json_fields({"status": "finished", "stop_reason": "run time reached (60 s)"})["outcome"] == "completed"
    assert run_json_fields({"status": "running"})["outcome"] == "did not complete"
    assert run_json_fields({"status": "finished", "aborted": {"at_s": 10, "line": "p99 above 1 s"}}) == {
        "outcome": "stopped early", "outcome_line": "stopped early by a check at 10 s"}
    run = make_run(tmp_path / "r", workers=2, duration_s=20.0, rate=lambda t: np.full_like(t, 1.0))
    record(run, [PartFailure("stand-in", "dynalite", T0 + 12, signal="SIGKILL")], stopped_by_us=True)
    info = runinfo.read(run)
    assert info["status"] == "finished" and info["outcome"] == "did not complete"
    assert info["outcome_line"] == "did not complete: the embedded stand-in dynalite exited at 12 s"


# ---- the progress line (item 5) ------------------------------------------------------------------------------


def _watch(run_dir: Path) -> list[str]:
    from harness.supervisor.supervise import Watcher

    said: list[str] = []
    w = Watcher(run_dir, said.append)
    w.next_progress = 0.0  # a progress line is due now
    w.poll()
    return said


def test_progress_shows_the_rate_of_the_last_window_beside_the_total(tmp_path):
    # 60 s of a run that went from 8 it/s to 2 it/s at 30 s: the total's average hides the fall, the window shows it
    now = time.time()
    run = make_run(tmp_path / "r", workers=4, duration_s=60.0, t0=now - 60, status="running", seed=5,
                   rate=lambda t: np.where(t < 30, 2.0, 0.5))
    info = json.loads((run / "run.json").read_text())
    info["scenario"]["fleet"]["duration_s"] = 90
    (run / "run.json").write_text(json.dumps(info))
    import pyarrow.parquet as pq

    ends = np.concatenate([pq.read_table(p, columns=["ts_end"]).column("ts_end").cast("int64").to_numpy()
                           for p in sorted((run / "iterations").glob("*.parquet"))]) / 1e6
    last = ends.max()
    want = ((ends > last - 10) & (ends <= last)).sum() / 10
    (line,) = _watch(run)
    m = re.fullmatch(r"\[\s*(\d+)s/90s\] (\d+) iterations recorded: ([\d.]+) it/s now \(last 10 s\), ([\d.]+) it/s "
                     r"since the start", line)
    assert m, line
    assert 59 <= int(m.group(1)) <= 61 and int(m.group(2)) == len(ends)
    assert float(m.group(3)) == pytest.approx(want, rel=0.01) and float(m.group(3)) < 3.5
    assert float(m.group(4)) > 4.0  # the average since the start: still above the rate now


def test_progress_stops_its_clock_at_the_bound(tmp_path):
    run = make_run(tmp_path / "r", workers=2, duration_s=90.0, t0=time.time() - 98, status="running", seed=6,
                   rate=lambda t: np.full_like(t, 1.0))
    (line,) = _watch(run)
    assert line.startswith("[   90s/90s] ") and "98s" not in line and line.endswith("; stopping (collecting the rows)")
