"""The environment is read at the command line's edge only, and written nowhere (checked from the source, ``ast``).

Settings travel in the run plan: a module that writes ``os.environ`` (to reach a child process, or a later
reader in this one) or reads it past the edge fails here. ``harness/core/environment.py`` is the edge: the one module
that reads the user's environment (and copies it for a child process, never changing this process's own).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EDGE = {"harness/core/environment.py"}
WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
OS_WRITES = {"putenv", "unsetenv"}


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os") or (isinstance(node, ast.Name) and node.id == "environ")


def findings(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """(writes anywhere under harness/, reads outside the edge), as ``path:line``."""
    writes, reads = [], []
    for path in sorted((root / "harness").rglob("*.py")):
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text(), rel)
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets) or \
                        any(_is_environ(t) for t in targets):
                    writes.append(where)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in WRITES and _is_environ(node.func.value):
                    writes.append(where)
                if node.func.attr in OS_WRITES and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
                    writes.append(where)
                if node.func.attr == "getenv" and isinstance(node.func.value, ast.Name) and node.func.value.id == "os" \
                        and rel not in EDGE:
                    reads.append(where)
            if _is_environ(node) and rel not in EDGE:
                reads.append(where)
            if isinstance(node, ast.ImportFrom) and node.module == "os" and \
                    any(a.name in ("environ", "getenv", "putenv") for a in node.names) and rel not in EDGE:
                reads.append(where)
    return sorted(set(writes)), sorted(set(reads))


def test_no_module_writes_the_environment():
    writes, _ = findings()
    assert writes == [], "a setting must travel in the run plan, not through os.environ"


def test_only_the_edge_reads_the_environment():
    _, reads = findings()
    assert reads == [], "read the user's environment in harness/core/environment.py (once, into the plan)"


def test_the_check_can_fail(tmp_path):
    (tmp_path / "harness" / "load").mkdir(parents=True)
    (tmp_path / "harness" / "core").mkdir(parents=True)
    (tmp_path / "harness" / "core" / "environment.py").write_text(
        "import os\nURL = os.environ.get('AWS_ENDPOINT_URL')\nos.environ['X'] = '1'\n")
    (tmp_path / "harness" / "load" / "a.py").write_text(
        "import os\nfrom os import environ\n"
        "def f():\n    os.environ.update(A='1')\n    os.environ.setdefault('B', '2')\n    os.putenv('C', '3')\n"
        "    del os.environ['D']\n    environ['E'] = '5'\n    return os.getenv('F')\n")
    writes, reads = findings(tmp_path)
    assert writes == ["harness/core/environment.py:3", "harness/load/a.py:4", "harness/load/a.py:5",
                      "harness/load/a.py:6", "harness/load/a.py:7", "harness/load/a.py:8"]
    # the environment's reader may read, never write
    assert {r.split(":")[1] for r in reads} == {"2", "4", "5", "7", "8", "9"} and all("a.py" in r for r in reads)
