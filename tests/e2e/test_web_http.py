"""The web UI over plain HTTP (as Locust 2.47 serves it): automatic stops keep the workers; the form is checked."""

from __future__ import annotations

import json
import re
import signal

import pytest

from tests.e2e.conftest import ROOT, senders
from tests.support.run_keys import changes, run_json_keys, summary_keys
from tests.support.web_session import WebRun, assert_contiguous, rows_of, wait_for

pytestmark = pytest.mark.e2e


def test_after_the_run_time_the_workers_stay_and_the_next_test_runs(tmp_path):
    run_dir = tmp_path / "session"
    web = WebRun(run_dir, "--users", "2", "--duration", "45s", "--processes", "2")
    try:
        web.wait_ready(workers=2)
        form = {"user_count": 2, "spawn_rate": 2, "host": "", "scenario": "disposable", "run_time": "6s"}
        refused = web.post("/swarm", {**form, "run_dir": str(tmp_path / "elsewhere")})
        assert not refused["success"] and "cannot be changed" in refused["message"]
        assert not web.post("/swarm", {**form, "scenario": "no-such"})["success"]
        assert web.post("/swarm", form)["success"]
        wait_for("test 001 to stop by itself", lambda: (web.test_entry(1) or {}).get("status") == "finished", 90)
        assert web.test_entry(1)["stop_reason"] == "run time reached (6 s)"
        # the workers came back for the next test (Locust's UI would read "Workers 2", not 0)
        wait_for("both workers ready", lambda: web.get("/stats/requests")["worker_count"] == 2, 30)
        assert web.post("/swarm", {**form, "scenario": "namespaced", "run_time": ""})["success"]
        # stopped once both workers have rows in it (stopped at its first row, one worker's may come first)
        wait_for("test 002 rows from both workers",
                 lambda: senders(run_dir / "tests" / "002") == {"worker-0", "worker-1"}, 90)
        assert web.post("/stop")["success"]
        wait_for("test 002 recorded", lambda: (web.test_entry(2) or {}).get("status") == "finished", 60)
        assert web.stop(signal.SIGINT) == 128 + signal.SIGINT
    finally:
        web.kill()
    session = json.loads((run_dir / "run.json").read_text())
    t1, t2 = session["tests"]
    assert (t1["scenario_name"], t2["scenario_name"]) == ("disposable", "namespaced")
    assert t1["run_time_s"] == 6 and t2["run_time_s"] is None and t2["stop_reason"] == "stopped from the web UI"
    # Stop is how a web test without a run time ends: completed, not cut short (harness/record/outcome.py)
    assert (t1["outcome"], t2["outcome"]) == ("completed", "completed")
    assert re.fullmatch(r"completed \(\d+ s\)", t1["outcome_line"]), t1
    assert t2["outcome_line"].startswith("completed (stopped from the web UI at "), t2
    info2 = json.loads((run_dir / t2["dir"] / "run.json").read_text())
    assert info2["scenario"]["fleet"]["duration_s"] == 60  # no run time in the form: the scenario's duration bounds it
    for t in (t1, t2):
        d = run_dir / t["dir"]
        plan = json.loads((d / "plan.json").read_text())  # the test's own plan: the session's, as the form set it
        assert (plan["test"]["number"], plan["scenario"]["name"]) == (t["number"], t["scenario_name"])
        assert plan["test"]["capacity_share"] == 0.5 and plan["run_id"] == session["run_id"]
        rows = rows_of(d)
        assert_contiguous(rows)
        assert len(rows) == t["rows"] and set(rows["worker"]) == {"worker-0", "worker-1"}
    # the run directory contract, as before the plan (whose session ran one process: its test's `processes` was
    # empty); a report the UI finished adds `report` / `report_error` (on a busy machine it may not finish
    # before Ctrl-C: `harness run` then builds it, and they stay unset)
    before = json.loads((ROOT / "tests" / "fixtures" / "run_keys_before.json").read_text())

    def stable(keys: list[str]) -> set[str]:
        return {k for k in keys if k not in ("report", "report_error", "tests[].report_error")
                and not k.startswith("processes.")}

    assert changes(stable(run_json_keys(session)), stable(before["session"]["run_json"])) == \
        {"lost": [], "added": []}
    t1_dir = run_dir / t1["dir"]
    assert changes(stable(run_json_keys(json.loads((t1_dir / "run.json").read_text()))),
                   stable(before["session_test"]["run_json"])) == {"lost": [], "added": []}
    assert changes(summary_keys(json.loads((t1_dir / "report" / "summary.json").read_text())),
                   before["session_test"]["summary_json"]) == {"lost": [], "added": []}
    out = web.output()
    log = (run_dir / "locust.log").read_text()
    assert "test 002 started: namespaced on dynamodb, 2 users at 2/s, run time 60 s (the scenario's duration" in log
    assert "test 001 (disposable) stopped: run time reached (6 s)" in out
    assert f"report {run_dir / 'tests' / '001' / 'report' / 'index.html'}" in out
