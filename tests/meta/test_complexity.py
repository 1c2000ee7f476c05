"""No function under harness/ is past cyclomatic complexity 25 (the project's standard, issue 53).

The count is radon's (``radon cc``, boolean operators included), written here as a small AST visitor so the
test needs no dependency the project does not ship: a function starts at 1 and adds one per ``if``/``elif``
and ternary, ``for``/``while`` (and one more for their ``else``), ``except`` handler (and one for a ``try``'s
``else``), ``assert``, comprehension ``for`` and each of its ``if`` clauses, each ``match`` case but a bare
``case _``, and a boolean operator's operands less one. A nested function or class is counted on its own,
not in the function around it (radon's rule); a lambda's body counts in the function that holds it.
Checked against ``radon cc -s -j harness/`` on every function of harness/ when written (all agreed).
"""

from __future__ import annotations

import ast
from pathlib import Path

LIMIT = 25
HARNESS = Path(__file__).resolve().parents[2] / "harness"
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _is_wildcard(case: ast.match_case) -> bool:
    """``case _`` (or a bare capture ``case x``): radon does not count it, it is the match's else."""
    return isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None


def _points(node: ast.AST) -> int:
    """The decision points ``node`` itself adds (its children are counted by the walk)."""
    if isinstance(node, ast.Try):
        return len(node.handlers) + bool(node.orelse)
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, (ast.If, ast.IfExp)):
        return 1
    if isinstance(node, ast.Match):
        return max(0, len(node.cases) - any(_is_wildcard(c) for c in node.cases))
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return 1 + bool(node.orelse)
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    return 0


def _decisions(node: ast.AST) -> int:
    """Decision points in ``node`` and below, stopping at nested functions and classes; an ``assert`` counts
    one and is not looked into (radon's rule)."""
    if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
        return 0
    if isinstance(node, ast.Assert):
        return 1
    return _points(node) + sum(_decisions(child) for child in ast.iter_child_nodes(node))


def complexity(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The cyclomatic complexity of one function, as radon counts it (its body only: not its decorators or
    defaults)."""
    return 1 + sum(_decisions(stmt) for stmt in fn.body)


def functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int, int]]:
    """Every function in ``tree``, nested ones and methods included: (dotted name, line, complexity)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            out.append((f"{prefix}{node.name}", node.lineno, complexity(node)))
    return out


def too_complex(root: Path, limit: int = LIMIT) -> dict[str, int]:
    """Every function under ``root`` past ``limit``, as ``path:line name`` with its complexity."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line, n in functions(tree):
            if n > limit:
                out[f"{path.relative_to(root.parent)}:{line} {name}"] = n
    return out


def test_no_function_under_harness_is_past_complexity_25():
    assert too_complex(HARNESS) == {}, f"split these functions (cyclomatic complexity past {LIMIT})"


def _one(src: str) -> int:
    (fn,) = [n for n in ast.walk(ast.parse(src)) if isinstance(n, FUNCTIONS) and n.name == "f"]
    return complexity(fn)


def test_each_decision_counts_as_radon_counts_it():
    assert _one("def f():\n    return 1\n") == 1
    assert _one("def f(a, b, c):\n    if a and b or c:\n        pass\n    elif a:\n        pass\n") == 5
    assert _one("def f(x):\n    for i in x:\n        pass\n    else:\n        pass\n    while x:\n        break\n") == 4
    assert _one("def f(x):\n    try:\n        pass\n    except ValueError:\n        pass\n"
                "    except KeyError:\n        pass\n    else:\n        pass\n") == 4
    assert _one("def f(x):\n    assert x and x\n    return [i for i in x if i if i] if x else None\n") == 6
    assert _one("def f(x):\n    match x:\n        case 1:\n            pass\n        case 2:\n            pass\n"
                "        case _:\n            pass\n") == 3
    assert _one("def f(x):\n    with x:\n        pass\n    g = lambda y: y if y else 0\n") == 2


def test_a_nested_function_is_counted_on_its_own():
    src = "def outer(x):\n    def f(y):\n        if y:\n            return 1\n    return f if x else None\n"
    tree = ast.parse(src)
    assert sorted((name, n) for name, _, n in functions(tree)) == [("f", 2), ("outer", 2)]


def test_a_function_past_the_limit_is_named_with_its_complexity(tmp_path):
    pkg = tmp_path / "harness"
    (pkg / "sub").mkdir(parents=True)
    ifs = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(LIMIT))
    (pkg / "sub" / "big.py").write_text(f"def big(x):\n{ifs}\n")
    (pkg / "small.py").write_text("def small(x):\n" + "".join(
        f"    if x == {i}:\n        return {i}\n" for i in range(LIMIT - 1)))
    assert too_complex(pkg) == {"harness/sub/big.py:1 big": LIMIT + 1}
