"""The layers of docs/layout.md, checked from the source (``ast``), so an import that goes up fails CI.

The page's numbered list is the order, bottom to top: a module in a folder imports only from its own folder
and the folders listed before it. Beside the order: no module of ``harness`` is in an import cycle (imports
under ``TYPE_CHECKING`` and inside functions count: a cycle hidden in a function is still a cycle), every
folder of ``harness/`` is listed, at most ``__init__.py`` and ``__main__.py`` are loose at ``harness/``'s top,
and the narrower rules the page states hold.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOOSE = {"__init__", "__main__"}
# the page's narrower rules: a module prefix -> the prefixes it may not import, and the exceptions
NARROWER = {
    "harness.jobs.observer": (("harness.datastore",), ("harness.datastore.backends.dynamodb.items",)),
    "harness.record.otlp": (("harness.record",), ("harness.record.schema", "harness.record.otlp")),
}


def layers(root: Path = ROOT) -> list[str]:
    """The folders of docs/layout.md's numbered list, in order (``core``, ``datastore``, ...)."""
    text = (root / "docs" / "layout.md").read_text()
    return re.findall(r"^\d+\. `harness/(\w+)/`", text, re.M)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "harness").rglob("*.py"))}


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The harness modules ``path`` imports, anywhere in it (``from a import b``: a, and a.b if b is one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known)
    return {m for m in found if m in known}


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {m: imports(p, known) - {m} for m, p in known.items()}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def level(name: str, order: list[str]) -> int | None:
    """A module's place in the order (-1: the package itself, ``harness``); None: a folder not listed."""
    parts = name.split(".")
    if len(parts) == 1:
        return -1
    if parts[1] == "__main__":
        return len(order)
    return order.index(parts[1]) if parts[1] in order else None


def upward(root: Path = ROOT) -> set[tuple[str, str]]:
    order = layers(root)
    out = set()
    for me, targets in graph(root).items():
        mine = level(me, order)
        out |= {(me, t) for t in targets if mine is not None and (level(t, order) or 0) > mine}
    return out


def narrower(root: Path = ROOT) -> set[tuple[str, str]]:
    out = set()
    for me, targets in graph(root).items():
        for prefix, (banned, allowed) in NARROWER.items():
            if _within(me, prefix):
                out |= {(me, t) for t in targets if any(_within(t, b) for b in banned)
                        and not any(_within(t, a) for a in allowed)}
    return out


def cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    g = graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in g:
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(g[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def test_the_page_lists_every_folder_once():
    order = layers()
    folders = sorted(p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert len(order) == len(set(order)) >= 10
    assert sorted(order) == folders


def test_no_import_goes_up():
    assert sorted(upward()) == [], "an import that goes up a layer (docs/layout.md)"


def test_the_narrower_rules_hold():
    assert sorted(narrower()) == []


def test_no_import_cycle():
    assert cycles() == []


def test_at_most_the_package_files_are_loose():
    loose = {p.stem for p in (ROOT / "harness").glob("*.py")}
    assert loose <= LOOSE


def test_the_check_can_fail(tmp_path):
    """A datastore module that imports the AWS layer, and two modules importing each other, are found."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "layout.md").write_text("1. `harness/core/`: x\n2. `harness/datastore/`: y\n"
                                                 "3. `harness/aws/`: z\n")
    for rel, text in {"harness/datastore/x.py": "from harness.aws.instrument import recording\n",
                      "harness/core/a.py": "def f():\n    import harness.core.b\n",
                      "harness/core/b.py": "from harness.core import a\n",
                      "harness/aws/instrument.py": "from harness.core import a\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert upward(tmp_path) == {("harness.datastore.x", "harness.aws.instrument")}
    assert cycles(tmp_path) == [["harness.core.a", "harness.core.b"]]
