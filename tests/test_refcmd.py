"""The reference command's command line: swamp's shape for the seed's loop, bad input as one line and exit 2,
and its repository made by init from the test's plan (the calls themselves run in the e2e and the bench)."""

from __future__ import annotations

import json

import pytest

from harness.refcmd.main import main, parse
from tests.plans import make_plan


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
