"""Bad arguments: one line on stderr naming the problem and the command's --help, exit 2, no usage block."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli.main import main

CASES = [
    ([], "harness: the following arguments are required: COMMAND", "harness --help"),
    (["nosuch"], "harness: argument COMMAND: invalid choice: 'nosuch'", "harness --help"),
    (["run"], "harness run: the following arguments are required: scenario", "harness run --help"),
    (["run", "namespaced", "--users", "many"], "harness run: argument -u/--users: invalid int value: 'many'",
     "harness run --help"),
    (["run", "namespaced", "--duration", "5 parsecs"], "harness run: argument --duration:", "harness run --help"),
    (["run", "namespaced", "--backend", "mysql"], "harness run: argument --backend: invalid choice: 'mysql'",
     "harness run --help"),
    (["run", "namespaced", "--seeddir", "x"], "harness run: unrecognized arguments: --seeddir x",
     "harness run --help"),
    (["report"], "harness report: the following arguments are required: RUN_DIR", "harness report --help"),
    (["jobs", "fill", "t"], "harness jobs fill: the following arguments are required: --items",
     "harness jobs fill --help"),
    (["jobs", "pre-age", "namespaced", "--models", "3"],
     "harness jobs pre-age: the following arguments are required: --versions", "harness jobs pre-age --help"),
    (["jobs", "resume"], "harness jobs resume: the following arguments are required: job",
     "harness jobs resume --help"),
    (["climb", "namespaced", "--rate", "2/s"], "harness climb: argument --rate: a climb steps through a range",
     "harness climb --help"),
]


@pytest.mark.parametrize("argv,problem,help_cmd", CASES, ids=[" ".join(c[0]) or "(none)" for c in CASES])
def test_argument_errors_are_one_line(capsys, argv, problem, help_cmd):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(problem), err  # one line, the problem first
    assert f"(see `{help_cmd}`)" in err and "usage:" not in err


def test_the_installed_command_answers_the_same(tmp_path):
    p = subprocess.run([sys.executable, "-m", "harness", "run", "namespaced", "--users"], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "harness run: argument -u/--users: expected one argument (see `harness run --help`)\n"


@pytest.mark.parametrize("argv,message", [
    (["run", "namespaced", "--pre-age-dir", "DIR"], "harness: --pre-age-dir needs --table"),
    (["run", "namespaced", "--pre-age-dir", "DIR", "--table", "t", "--pre-age-models", "3"],
     "harness: --pre-age-dir starts from an earlier pre-age and --pre-age-models pre-ages now"),
    (["run", "namespaced", "--pre-age-dir", "EMPTY", "--table", "t"],
     "harness: --pre-age-dir EMPTY: no pre-aged catalogs"),
])
def test_seed_dir_without_its_table_or_catalogs_is_refused(capsys, tmp_path, argv, message):
    (tmp_path / "EMPTY").mkdir()
    argv = [str(tmp_path / a) if a in ("DIR", "EMPTY") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(message.replace("EMPTY", str(tmp_path / "EMPTY"))), err
