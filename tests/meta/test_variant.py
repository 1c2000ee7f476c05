"""The datastore's two systems are classes chosen once, not flags threaded through calls (issue 53, part 3).

"swamp as its code reads" and "the fenced harness design" are strategy objects chosen from the scenario's
``Variant`` (``harness/datastore/variant.py``) in one place per backend (``backends/*/choose.py``). This
fails when code under ``harness/datastore`` compares against the string ``"swamp"`` again (the knobs are
enums: compare members), or when a function there takes a mode flag named ``fencing``, ``fenced`` or
``bookkeeping`` (the backend and the sync coordinator were built with their strategies).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATASTORE = ROOT / "harness" / "datastore"
FLAGS = {"fencing", "fenced", "bookkeeping"}


def _modules(root: Path) -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(root.parent)), ast.parse(p.read_text(), str(p))) for p in sorted(root.rglob("*.py"))]


def swamp_compares(root: Path = DATASTORE) -> list[str]:
    """Every comparison under ``root`` with the constant "swamp" on either side (or in a literal tuple there)."""
    out = []
    for rel, tree in _modules(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "swamp"]
                # ``x in ("a", "swamp")``: a tuple of constants holding it
                consts += [e for s in sides if isinstance(s, (ast.Tuple, ast.List, ast.Set)) for e in s.elts
                           if isinstance(e, ast.Constant) and e.value == "swamp"]
                if consts:
                    out.append(f"{rel}:{node.lineno}")
    return out


def flag_parameters(root: Path = DATASTORE) -> list[str]:
    """Every function under ``root`` with a parameter named like a mode flag."""
    out = []
    for rel, tree in _modules(root):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
                for bad in sorted(names & FLAGS):
                    out.append(f"{rel}:{node.lineno} {getattr(node, 'name', 'lambda')}({bad}=)")
    return out


def test_no_comparison_against_swamp_under_the_datastore():
    found = swamp_compares()
    assert not found, f"compare an enum member of harness/datastore/variant.py, not the string: {found}"


def test_no_mode_flag_parameters_under_the_datastore():
    found = flag_parameters()
    assert not found, f"a mode is a strategy chosen once (backends/*/choose.py), not a parameter: {found}"


def test_the_checks_find_what_they_look_for(tmp_path):
    """Each check finds what it forbids (so a pass means something): the code as it was before issue 53's part 3
    would fail both."""
    pkg = tmp_path / "datastore"
    pkg.mkdir()
    (pkg / "old.py").write_text(
        "def commit(entries, *, fencing=True, bookkeeping='harness'):\n"
        "    if bookkeeping == 'swamp' or 'swamp' != entries or entries in ('one', 'swamp'):\n"
        "        return 1\n"
        "    return lambda fenced: fenced\n")
    (pkg / "new.py").write_text("from enum import StrEnum\n\nclass B(StrEnum):\n    SWAMP = 'swamp'\n\n"
                                "def commit(entries):\n    return entries == B.SWAMP\n")
    assert swamp_compares(pkg) == ["datastore/old.py:2"] * 3  # the three comparisons, none of new.py
    assert flag_parameters(pkg) == ["datastore/old.py:1 commit(bookkeeping=)", "datastore/old.py:1 commit(fencing=)",
                                    "datastore/old.py:4 lambda(fenced=)"]
