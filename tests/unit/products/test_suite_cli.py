"""``harness suite``'s bad input: one line saying what is wrong, exit 2, no traceback and no run directory."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main


@pytest.mark.parametrize(("argv", "message"), [
    (["suite", "nope"], "unknown suite 'nope': choose one of swamp-datastore"),
    (["suite", "swamp-datastore", "--backend", "dynamodb", "--layout", "sharded"],
     "--layout sharded: dynamodb's layouts are legacy, per-model"),
    (["suite", "swamp-datastore", "--trials", "0"], "--trials must be at least 1"),
    (["suite", "swamp-datastore", "--scenarios", "1,42"], "has no scenario '42'"),
    (["suite", "swamp-datastore", "--baseline", "/nonexistent/suite.json"], "--baseline /nonexistent/suite.json: no"),
    (["suite", "swamp-datastore", "--latency", "nope"], "unknown latency profile 'nope'"),
    (["suite", "swamp-datastore", "--min-ms", "-5"], "--threshold and --min-ms must be 0 or more"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    run_dir = tmp_path / "run"
    assert main([*argv, "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not run_dir.exists()


def test_a_threshold_is_a_percentage_as_on_run_and_report(tmp_path, capsys):
    """``--threshold`` is the same type on suite, run and report: ``-5`` is argparse's one line, exit 2."""
    with pytest.raises(SystemExit) as e:
        main(["suite", "swamp-datastore", "--threshold", "-5", "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "a tolerance is a percentage below 100" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_compare_refuses_a_baseline_of_the_other_backend(tmp_path, capsys):
    other = tmp_path / "suite.json"
    other.write_text(json.dumps({"suite": "swamp-datastore", "backend": "dynamodb", "results": []}))
    assert main(["suite", "swamp-datastore", "--backend", "s3", "--baseline", str(other),
                 "--run-dir", str(tmp_path / "run")]) == 2
    assert "is a dynamodb run and this one is s3" in capsys.readouterr().err


def test_compare_refuses_what_is_not_a_suite_json(tmp_path, capsys):
    bad = tmp_path / "summary.json"
    bad.write_text("{not json")
    assert main(["suite", "swamp-datastore", "--baseline", str(bad), "--run-dir", str(tmp_path / "run")]) == 2
    assert f"--baseline {bad}: not a suite.json" in capsys.readouterr().err
