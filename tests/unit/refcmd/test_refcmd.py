"""The reference command's command line: swamp's shape for the spec's loop, bad input as one line and exit 2,
and its repository made by init from the test's plan (the calls themselves run in the e2e and the bench)."""

from __future__ import annotations

import json

import pytest

from harness.core.work import Work
from harness.datastore.lock import LockConfig
from harness.record.otlp.decode import Span
from harness.record.otlp.mapping import DURATION, SWAMP, TEARDOWN
from harness.record.schema import STEP_COLUMNS
from harness.refcmd.main import main, parse
from harness.refcmd.tracing import TEARDOWN_STEPS, Invocation, _step_attributes
from tests.support.plans import make_plan


def test_it_reads_swamps_command_line_for_the_seeds_loop():
    assert parse(["model", "@webframp/system", "method", "run", "get_uptime", "w0-0-i3", "--skip-checks",
                  "--skip-reports", "--json"]) == {"command": "run", "type": "@webframp/system",
                                                   "method": "get_uptime", "instance": "w0-0-i3", "json": True}
    assert parse(["model", "delete", "w0-0-i3", "--force"]) == {"command": "delete", "instance": "w0-0-i3",
                                                               "json": False}
    assert parse(["data", "prune", "--force", "--json"]) == {"command": "prune", "json": True}


@pytest.mark.parametrize("argv, message", [
    (["model", "delete", "x"], "needs --force"),
    (["data", "prune"], "needs --force"),
    (["model", "x", "method", "run", "m"], "unknown command"),
    (["data", "prune", "--force", "--yes"], "unknown option --yes"),
    (["init"], "init needs --plan"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err.splitlines()[0]


def test_outside_a_repository_it_says_how_to_make_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["data", "prune", "--force", "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a harness-swamp repository" in err and "harness-swamp init --plan" in err and "\n" not in err


def test_init_keeps_the_tests_plan_and_the_workers_settings(tmp_path, monkeypatch):
    plan = make_plan("namespaced", driver="command", run_dir=str(tmp_path / "run"))
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--plan", str(path), "--namespace", "w0-1", "--holder", "w0-1"]) == 0
    repo = tmp_path / ".harness-swamp"
    assert json.loads((repo / "settings.json").read_text()) == {"namespace": "w0-1", "holder": "w0-1"}
    assert json.loads((repo / "plan.json").read_text())["scenario"]["name"] == "namespaced-command"
    assert main(["init", "--plan", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
@pytest.mark.parametrize("step", [*STEP_COLUMNS, "collect"])
def test_each_model_step_becomes_a_span_the_mapping_counts_where_the_model_driver_does(backend, step):
    """A step's span (and its place under swamp.cli or its teardown) must land in the column the model driver's
    summarize() puts the step in: a step the reference command did not know once fell through to
    swamp.data.prune, and a fenced run's collection after the release read as a prune."""
    inv = Invocation(command={"command": "run", "instance": "m", "method": "get"}, backend=backend,
                     lock_key="k", lock=LockConfig(), catalog_rows=0, steps=[], calls=[], started_ns=0,
                     ready_ns=0, done_ns=0, saved_ns=0)
    name, _ = _step_attributes(inv, step, Work(), 0)
    above = [TEARDOWN if step in TEARDOWN_STEPS else "swamp.cli"]
    span = Span("t", "s", "p", name, 0, 1)
    cols = {c for c, rules in SWAMP.columns.items() for r in rules
            if c.endswith("_ms") and (r.value == DURATION or r.value.endswith("_ms")) and r.matches(span, above)}
    assert cols == {STEP_COLUMNS.get(step, "release_ms")}, (name, cols)
