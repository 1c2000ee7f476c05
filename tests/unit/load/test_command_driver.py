"""The command driver with real processes and its real OTLP receiver (no Locust): each way a command can end
gives a clear row, and the iterations after it go on.

A fake swamp (``tests/fixtures/fake_swamp.py``) exports spans as swamp does (OTLP/JSON, one POST per span),
exits 75 with swamp's --json lock timeout, exits 1, hangs past its timeout (with a grandchild), sends no
spans, sends them after it exited, or posts a body no receiver can read; one driver runs them in turn.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness.config import scenario as scenarios
from harness.core.errors import HarnessError
from harness.load import drivers
from harness.load.drivers._spawn import Exit
from harness.load.drivers.command import classify
from tests.support.plans import make_plan

FAKE = str(Path(__file__).parents[2] / "fixtures" / "fake_swamp.py")
MODES = ["ok", "lock75", "fail1", "hang", "nospans", "late", "malformed", "ok"]


def _scenario(tmp_path: Path, driver: str, extra: str = "") -> Path:
    p = tmp_path / "fake.toml"
    p.write_text(f'name = "fake"\n[fleet]\nworkers = 1\nduration = "10s"\n[driver]\nkind = "command"\n{driver}\n'
                 f'{extra}')
    return p


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """One worker through every mode, in order (module-scoped: the processes run once)."""
    tmp = tmp_path_factory.mktemp("cmd")
    path = _scenario(tmp, f'run = ["{{python}}", "{FAKE}", "cycle:{{iteration}}", "{{instance}}"]\n'
                          'timeout = "1.5s"\nlate_wait = "1.5s"\nquiet = "0.8s"\n'
                          f'env = {{ MODES = "{",".join(MODES)}" }}')
    plan = make_plan(str(path), run_dir=str(tmp / "run"))
    drivers.check(plan.scenario)
    shared: dict = {}
    d = drivers.make(drivers.DriverContext(plan, process="local", user="w0-0", namespace="w0-0", rng_seed=1,
                                           shared=shared))
    try:
        outs = [d.run_once() for _ in MODES]
        _, strays = d.stop()
    finally:
        shared["otlp"].close()
    return outs, strays, d.workdir


def test_swamp_json_spans_become_the_row(outcomes):
    out = outcomes[0][0]
    r = out.row
    assert r["ok"] and r["error_kind"] == "" and r["spans"] == 7 and r["spans_rejected"] == 0
    assert r["lock_wait_ms"] == 7.0  # lock.wait_duration_ms (intValue as a JSON number), not the span's 10 ms
    assert r["pull_ms"] == pytest.approx(6.0) and r["commit_ms"] == pytest.approx(28.0)
    assert r["files_pulled"] == 3 and r["files_pushed"] == 6 and r["index_entries_written"] == 42  # string ints
    assert r["lock_requests"] == 1 and r["lock_request_ms"] == pytest.approx(2.0) and r["write_units"] == 1.0
    assert r["commit_requests"] == 0 and r["requests"] == 1
    assert r["method_ms"] is None and r["delete_ms"] is None and r["export_ms"] is None  # no span: null, not 0
    assert r["command_ms"] > 0 and r["total_ms"] >= r["command_ms"]
    names = {s["name"]: s for s in out.spans}
    assert names["dynamodb-datastore lock acquire"]["column"] == "lock_wait_ms"
    assert names["DynamoDB PutItem"]["column"] == "lock_requests"
    own = names["harness.command run"]
    assert own["parent"] is None and names["swamp.cli"]["parent"] == own["span_id"]  # the TRACEPARENT's span
    assert {s["iteration"] for s in out.spans} == {0} and {s["step"] for s in out.spans} == {"run"}


def test_exit_75_is_a_lock_timeout_with_swamps_message(outcomes):
    r = outcomes[0][1].row
    assert not r["ok"] and r["error_kind"] == "lock_timeout"
    assert r["error"] == "exit 75: Lock timeout after 6000ms on key: w0-0-m1"


def test_exit_1_is_other_with_the_json_error(outcomes):
    r = outcomes[0][2].row
    assert not r["ok"] and r["error_kind"] == "other" and r["error"] == "exit 1: Model definition not found: nope"


def test_a_hang_is_killed_with_its_process_group_at_its_timeout(outcomes):
    r = outcomes[0][3].row
    assert not r["ok"] and r["error_kind"] == "timeout" and "timed out after 1.5 s" in r["error"]
    assert 1400 <= r["command_ms"] < 5000
    pid = int((outcomes[2] / "hang.pid").read_text())
    with pytest.raises(ProcessLookupError):  # the grandchild went with it
        os.kill(pid, 0)


def test_a_command_that_sends_no_spans_leaves_its_columns_null(outcomes):
    r = outcomes[0][4].row
    assert r["ok"] and r["spans"] == 0 and r["lock_wait_ms"] is None and r["requests"] is None
    # no fixed wait for spans that never came: the exporter's quiet gap (0.8 s here), not late_wait, in a
    # column of its own, never the command's
    assert 700 <= r["after_exit_ms"] < 1500 and r["total_ms"] >= r["command_ms"] + r["after_exit_ms"] - 1


def test_spans_that_come_after_the_exit_are_attached_within_the_wait(outcomes):
    r = outcomes[0][5].row
    assert r["ok"] and r["spans"] == 7 and r["commit_ms"] == pytest.approx(28.0)
    assert 400 <= r["total_ms"] < 1500 + 1000


def test_a_malformed_body_is_counted_and_the_run_goes_on(outcomes):
    outs, strays, _ = outcomes
    r = outs[6].row
    assert r["ok"] and r["spans"] == 0 and r["spans_rejected"] == 1
    last = outs[7].row
    assert last["ok"] and last["spans"] == 7 and last["iteration"] == 7  # nothing stopped, nothing skipped
    assert [o.row["iteration"] for o in outs] == list(range(len(MODES)))
    assert strays == []


def test_classify_reads_swamps_signals():
    def ex(code, err="", timed_out=False):
        return Exit(["swamp"], code, "", err, 0, 1, timed_out=timed_out)

    assert classify(ex(75), 5) == ("lock_timeout", "exit 75")
    assert classify(ex(1, '{"error": "x", "code": "lock_timeout"}'), 5) == ("lock_timeout", "exit 1: x")
    assert classify(ex(1, "ThrottlingException: slow down"), 5)[0] == "throttled"
    assert classify(ex(-9), 5) == ("other", "killed by signal 9")
    assert classify(ex(None, timed_out=True), 5)[0] == "timeout"
    assert classify(ex(0), 5) == ("", "")


@pytest.mark.parametrize("driver, message", [
    ('run = "swamp model run"', "driver.run must be a list of strings"),
    ('run = ["{python}", "{nope}"]', "unknown placeholder {nope}"),
    ('run = ["no-such-swamp-here", "x"]', "'no-such-swamp-here' is not an executable on PATH"),
    ('run = ["{python}"]\nsetup = ["{python}", "{instance}"]', "setup runs once per worker"),
    ('run = ["{python}"]\ntimeout = "soon"', "driver.timeout must be a duration"),
    ('run = ["{python}"]\nrunn = ["x"]', "driver.runn is not a known key"),
    ('run = ["{python}"]\nspans = { commit_ms = [{ spam = "x" }] }', "unknown key 'spam'"),
])
def test_bad_driver_options_are_one_line(tmp_path, driver, message):
    sc = scenarios.load(str(_scenario(tmp_path, driver)))
    with pytest.raises(HarnessError, match=message.replace("{", r"\{").replace("(", r"\(")) as e:
        drivers.check(sc)
    assert "\n" not in str(e.value)


def test_safety_is_refused_unless_the_command_writes_the_history(tmp_path):
    sc = scenarios.load(str(_scenario(tmp_path, 'run = ["{python}"]', "[checks]\nsafety = true")))
    with pytest.raises(HarnessError, match=r"\[checks\] safety reads the datastore's history"):
        drivers.check(sc)
    ok = scenarios.load(str(_scenario(tmp_path, 'run = ["{python}"]\nhistory = true', "[checks]\nsafety = true")))
    drivers.check(ok)


def test_harness_run_refuses_bad_input_before_anything_starts(tmp_path, capsys):
    from harness.cli.main import main

    run_dir = tmp_path / "never"
    bad = _scenario(tmp_path, 'run = ["{python}", "{nope}"]')
    assert main(["run", str(bad), "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown placeholder {nope}" in err and not run_dir.exists()
    assert main(["run", "write-stress", "--driver", "command", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no command twin" in err and not run_dir.exists()
    assert main(["run", "namespaced", "--driver", "http", "--run-dir", str(run_dir)]) == 2
    assert "unknown driver 'http'" in capsys.readouterr().err


def test_the_twin_inherits_its_model_twins_sections():
    model, twin = scenarios.load("namespaced"), scenarios.twin_for(scenarios.load("namespaced"), "command")
    assert twin.name == "namespaced-command" and twin.driver.kind == "command" and model.driver.kind == "model"
    assert (twin.datastore, twin.lock, twin.workload, twin.fleet) == (model.datastore, model.lock, model.workload,
                                                                      model.fleet)
    assert scenarios.twin_for(twin, "model") == model and scenarios.twin_for(model, "model") is model
    assert sys.executable  # {python} resolves to this interpreter
