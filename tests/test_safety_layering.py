"""The import layering (README, Layout), checked from the source (``ast``), so a new edge fails CI.

- harness/datastore imports nothing from harness/aws, harness/load, harness/jobs/pacing or harness/config
  (it reports work through ``harness.core.work`` and classifies errors through ``harness.core.aws_errors``);
- harness/aws imports nothing from harness/datastore or harness/config;
- harness/config (the run plan, its builder and factory) sits below harness/load and harness/commands: it
  imports neither, nor harness/jobs/pacing, harness/safety or harness/record;
- harness/jobs/pacing and harness/load do not import each other;
- the neutral modules (``harness.core.work``, ``harness.core.aws_errors``, ``harness.core.clock``, ``harness.core.environment``) import no
  other layer;
- harness/safety (the checker) imports nothing from harness/load, harness/jobs/pacing or harness/config;
- harness/products/suite (a benchmark suite's runner) drives the datastore and reads its suite file from harness/config:
  it imports nothing from harness/aws, harness/load or harness/jobs/pacing (its tables and buckets come from the
  command, through the plan's factory);
- harness/load/drivers (what a Locust user runs) imports neither harness/load nor harness/commands; harness/record/otlp
  (spans in) imports no layer but the row's schema; harness/refcmd (the reference command) no driver or load;
- harness/gates (threshold expressions, their judge, the live abort) imports no layer that runs anything (aws,
  datastore, load, pacing, plan, commands): the plan, the Locust master and the report all use it;
  ``harness.core.intervals`` (the intervals the report and the gates share) is neutral;
- harness/jobs/observer (the observer) imports no Locust layer, run plan or record, and of the datastore model
  only the key rule that is the layout (``items.gsi_keys``);
- nothing below harness/commands (the top layer: `harness run`, the bulk jobs, worker/standin) imports it.

``KNOWN`` lists edges that exist and are scheduled for removal (empty now: pacing <-> load
was untangled by moving the run and job commands up to harness/commands and the seed state
into the datastore). An edge listed here that no longer exists fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {  # layer -> module prefixes it must not import
    "harness.datastore": ("harness.aws", "harness.load", "harness.jobs.pacing", "harness.config", "harness.commands"),
    "harness.aws": ("harness.datastore", "harness.load", "harness.jobs.pacing", "harness.config", "harness.commands"),
    "harness.config": ("harness.load", "harness.jobs.pacing", "harness.safety", "harness.record", "harness.commands"),
    "harness.jobs.pacing": ("harness.load", "harness.commands"),
    "harness.load": ("harness.jobs.pacing", "harness.commands"),
    "harness.record": ("harness.load", "harness.jobs.pacing", "harness.config", "harness.commands"),
    "harness.core.work": ("harness",),
    "harness.core.aws_errors": ("harness",),
    "harness.core.clock": ("harness",),
    "harness.core.environment": ("harness",),
    "harness.core.item_size": ("harness",),
    "harness.core.atomic": ("harness",),
    "harness.safety": ("harness.load", "harness.jobs.pacing", "harness.config", "harness.commands"),
    "harness.products.suite": ("harness.aws", "harness.load", "harness.jobs.pacing", "harness.commands"),
    # the live meters and CloudWatch's reader: fed by the load's processes and the commands, never importing them
    "harness.telemetry": ("harness.load", "harness.jobs.pacing", "harness.config", "harness.commands", "harness.datastore"),
    # the drivers sit between the Locust user (harness/load) and what they drive; the OTLP plumbing is neutral
    "harness.load.drivers": ("harness.load", "harness.jobs.pacing", "harness.commands"),
    "harness.record.otlp": ("harness.aws", "harness.datastore", "harness.load.drivers", "harness.load", "harness.jobs.pacing",
                     "harness.config", "harness.commands"),
    "harness.refcmd": ("harness.load.drivers", "harness.load", "harness.jobs.pacing", "harness.commands"),
    # the gates' grammar and judge run in the plan, the Locust master and the report alike
    "harness.gates": ("harness.aws", "harness.datastore", "harness.load", "harness.jobs.pacing", "harness.config",
                      "harness.commands"),
    "harness.core.intervals": ("harness",),
    # the observer reads the datastore as a stranger would: primitives in, no plan, no Locust, no model
    "harness.jobs.observer": ("harness.load", "harness.config", "harness.commands", "harness.record", "harness.safety",
                        "harness.datastore.sync", "harness.datastore.backends.dynamodb.backend",
                        "harness.datastore.backends.dynamodb.pull", "harness.datastore.backends.s3"),
}
REPORTS_CALLERS = ("harness.commands", "harness.cli.main")  # the report package reads run directories; only the
# top layer and the CLI call into it

KNOWN: set[tuple[str, str]] = set()


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, at top level or inside functions (``from a import b``: a, and a.b if
    b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            for a in node.names:
                sub = root.joinpath(*node.module.split("."), a.name)
                if sub.is_dir() or sub.with_suffix(".py").is_file():
                    found.add(f"{node.module}.{a.name}")
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def edges(root: Path = ROOT) -> set[tuple[str, str]]:
    out = set()
    for path in sorted((root / "harness").rglob("*.py")):
        me = module_name(path, root)
        for layer, banned in FORBIDDEN.items():
            if _within(me, layer):
                out |= {(me, t) for t in imports(path, root)
                        if any(_within(t, b) for b in banned) and not _within(t, layer)}
    return out


def test_only_the_commands_and_the_cli_import_reports():
    found = set()
    for path in sorted((ROOT / "harness").rglob("*.py")):
        me = module_name(path, ROOT)
        if not any(_within(me, c) for c in REPORTS_CALLERS):
            found |= {(me, t) for t in imports(path, ROOT) if _within(t, "reports")}
    assert sorted(found) == []


def test_no_new_import_edges_across_layers():
    assert sorted(edges() - KNOWN) == [], "new import edges that break the layering (see the README's Layout)"


def test_known_exceptions_still_exist():
    """When one is removed, delete it from KNOWN so it cannot come back unnoticed."""
    assert sorted(KNOWN - edges()) == []


def test_the_check_can_fail(tmp_path):
    """A datastore module that imports harness.aws, or a neutral one that imports the datastore, is found."""
    for rel, text in {"harness/datastore/x.py": "from harness.aws.instrument import recording\n",
                      "harness/core/work.py": "def f():\n    import harness.datastore.sync\n",
                      "harness/aws/instrument.py": "", "harness/datastore/sync.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert edges(tmp_path) == {("harness.datastore.x", "harness.aws.instrument"),
                               ("harness.core.work", "harness.datastore.sync")}
