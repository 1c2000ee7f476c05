"""The suite's modules that share real runs rely on ``--dist loadgroup`` keeping their group in one process.

pytest 9.2 stores node ids where pytest-xdist 3.8 cannot add its group tag, and the groups were then
silently ignored: each of the report e2e's shared runs (45 s and 25 s) was made twice, once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GROUPED = '''
import os, pytest
pytestmark = pytest.mark.xdist_group("shared")

@pytest.fixture(scope="session")
def made():
    with open(os.environ["SETUPS"], "a") as f:
        f.write(f"{os.getpid()}\\n")

def test_a(made): pass
def test_b(made): pass
def test_c(made): pass
'''

OTHERS = '''
import pytest

@pytest.mark.parametrize("i", range(6))
def test_other(i): pass
'''


def test_a_group_stays_in_one_process_and_its_session_fixture_is_made_once(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_others.py").write_text(OTHERS)
    setups = tmp_path / "setups"
    argv = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
            "-o", "addopts=", str(tmp_path)]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "SETUPS": str(setups)},
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    grouped = [line for line in p.stdout.splitlines() if "test_grouped.py::" in line and "PASSED" in line]
    assert len(grouped) == 3, p.stdout
    assert len({line.split("]")[0] for line in grouped}) == 1, p.stdout  # one worker ([gw0] or [gw1]) ran them all
    assert len(setups.read_text().split()) == 1


def test_heavy_tests_go_first_and_the_rest_keep_their_order() -> None:
    from tests.conftest import pytest_collection_modifyitems

    class Item:
        def __init__(self, name: str, heavy: bool) -> None:
            self.name, self.heavy = name, heavy

        def get_closest_marker(self, name: str) -> object | None:
            return object() if name == "heavy" and self.heavy else None

    items = [Item("a", False), Item("b", True), Item("c", False), Item("d", True), Item("e", False)]
    pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["b", "d", "a", "c", "e"]
