"""Issue 53's renamed spellings: each old one answers one line on stderr naming the new one, exit 2, and nothing
starts (no silent alias). The table is docs/cli.md's "Old spellings"; every row of it is a case here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[3]

# (old argv, what the one line must name)
OLD = [
    (["run", "namespaced", "--workers", "4"], "--users"),
    (["run", "namespaced", "--stand-in", "moto"], "--dynamodb-stand-in"),
    (["run", "namespaced", "--rate", "1/s..8/s"], "harness climb SCENARIO --rate 1/s..8/s"),
    (["run", "namespaced", "--steps", "3"], "harness climb SCENARIO --rate LO..HI --steps N"),
    (["sweep", "namespaced", "--workers", "1,2"], "--users"),
    (["suite", "swamp-datastore", "--compare", "x/suite.json"], "--baseline"),
    (["suite", "swamp-datastore", "--stand-in", "moto"], "--dynamodb-stand-in"),
    (["seed", "namespaced", "--models", "1", "--versions", "1", "--table", "t"], "harness jobs pre-age"),
    (["fill", "t", "--items", "1"], "harness jobs fill"),
    (["cleanup", "t"], "harness jobs cleanup"),
    (["resume", "job-1"], "harness jobs resume"),
    (["jobs"], "harness jobs list"),
    (["jobs", "--journal", "x.db"], "harness jobs list"),
    (["run", "namespaced", "--seed-models", "5"], "--pre-age-models"),
    (["run", "namespaced", "--seed-versions", "5"], "--pre-age-versions"),
    (["run", "namespaced", "--seed-orphans", "1"], "--pre-age-orphans"),
    (["run", "namespaced", "--seed-dir", "d"], "--pre-age-dir"),
    (["jobs", "pre-age", "namespaced", "--models", "1", "--versions", "1", "--table", "t", "--workers", "2"],
     "--users"),
]


def _answer(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,new", OLD, ids=[" ".join(a) for a, _ in OLD])
def test_an_old_spelling_answers_one_line_naming_the_new_one(capsys, tmp_path, monkeypatch, argv, new):
    monkeypatch.chdir(tmp_path)  # nothing may be written: no runs/ appears
    code, out, err = _answer(capsys, argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and new in err and "docs/cli.md" in err, err
    assert not (tmp_path / "runs").exists()


def test_the_new_spellings_parse():
    from harness.cli.main import build_parser

    p = build_parser()
    assert p.parse_args(["run", "namespaced", "-u", "4", "--dynamodb-stand-in", "moto"]).users == 4
    assert p.parse_args(["run", "namespaced", "--users", "4"]).stand_in is None
    a = p.parse_args(["suite", "swamp-datastore", "--baseline", "x", "--threshold", "5%"])
    assert (a.compare, a.threshold) == ("x", 0.05)
    assert p.parse_args(["suite", "swamp-datastore", "--threshold", "10"]).threshold == 0.10  # percent, as before
    pre_age = ["jobs", "pre-age", "s", "--models", "1", "--versions", "2", "--table", "t", "-u", "3"]
    assert p.parse_args(pre_age).users == 3
    assert p.parse_args(["climb", "namespaced", "--rate", "1/s..4/s"]).rate == (1.0, 4.0)


def test_every_old_spelling_is_in_the_docs_table():
    """docs/cli.md's table of old and new spellings names every old spelling tested here."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    table = doc[doc.index("## Old spellings"):]
    for argv, _ in OLD:
        old = next((a for a in argv if a.startswith("--") and a not in ("--models", "--versions", "--table",
                                                                          "--items", "--journal")), None)
        word = old or ("--rate LO..HI" if "--rate" in argv else f"harness {argv[0]}")
        if "--rate" in argv:
            word = "run --rate LO..HI"
        assert re.search(re.escape(word), table), word


def test_the_installed_command_answers_the_same(tmp_path):
    p = subprocess.run([sys.executable, "-m", "harness", "seed", "namespaced"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "harness: `harness seed` is now `harness jobs pre-age` (docs/cli.md: old spellings)\n"
