"""No test outside tests/bench imports a benchmark (checked from the source, ``ast``).

A benchmark prints figures for a person; a test asserts behaviour. What both need (the synthetic runs, the
forecast's simulated fleets) lives in tests/support, which bench/ may import; tests/bench runs each benchmark's
quick mode, so it is the one tier that imports bench/.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def bench_imports(root: Path = TESTS) -> list[str]:
    """``path:line`` of every import of ``bench`` (or ``bench.x``) under ``root``, tests/bench left out."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "bench"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(n == "bench" or n.startswith("bench.") for n in names):
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_no_test_outside_tests_bench_imports_a_benchmark():
    assert bench_imports() == [], "move what the test needs into tests/support (or the test into tests/bench)"


def test_the_check_finds_an_import_of_a_benchmark(tmp_path):
    (tmp_path / "unit").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "unit" / "test_x.py").write_text("import json\nfrom bench.forecast import simulate\n")
    (tmp_path / "unit" / "test_y.py").write_text("from tests.support.forecast_runs import simulate\nimport bench\n")
    (tmp_path / "bench" / "test_z.py").write_text("from bench import forecast\n")  # the bench tier may
    assert bench_imports(tmp_path) == ["unit/test_x.py:2", "unit/test_y.py:2"]
