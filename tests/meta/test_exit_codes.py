"""One ExitCode enum: docs/cli.md names every member, and no module spells an exit status as a bare number or a
constant of its own (``return 3``, ``EXIT_REGRESSION = 3``) any more."""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.exit_codes import ExitCode

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_name_every_exit_code():
    doc = (ROOT / "docs" / "cli.md").read_text()
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5]
    for code in ExitCode:
        assert f"`{code.name}`" in doc, code.name


def test_no_exit_status_is_a_literal_or_a_constant_of_its_own():
    literal = re.compile(r"^\s*return [345](?: if .*)?$|\belse [345]\)?$"
                         r"|^EXIT_[A-Z_]+(?:, EXIT_[A-Z_]+)*\s*=\s*\d", re.M)
    allowed = {"harness/refcmd/main.py", "harness/load/drivers/command.py"}  # swamp's own codes (EX_TEMPFAIL)
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in allowed:
            found += [f"{rel}: {m.group(0).strip()}" for m in literal.finditer(path.read_text())]
    assert found == []
