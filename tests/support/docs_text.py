"""What the docs say, read back as data: the command synopsis, the tables, the scenario keys.

The drift tests (``tests/meta/test_docs_drift.py``, and the run-directory check in ``tests/e2e/test_report_e2e.py``)
compare these with what the code does, so a page that says something the code does not is a failing test.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def read(name: str) -> str:
    return (ROOT / name).read_text()


def every_page() -> dict[str, str]:
    """Every page a user reads: the README, CONTRIBUTING, docs/*.md and the scenarios', suites' and stories' READMEs."""
    pages = {p: read(p) for p in ("README.md", "CONTRIBUTING.md", "harness/config/scenarios/README.md",
                                  "harness/products/suite/suites/README.md",
                                  "harness/products/story/stories/README.md") if (ROOT / p).exists()}
    pages.update({f"docs/{p.name}": p.read_text() for p in sorted(DOCS.glob("*.md"))})
    return pages


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)


GROUPS = ("jobs",)  # the commands whose next word is a command of their own


def command_name(line: str) -> str:
    """``harness jobs pre-age SCENARIO ...`` -> ``jobs pre-age``; ``harness run SCENARIO ...`` -> ``run``."""
    words = line.split()
    return " ".join(words[1:3]) if words[1] in GROUPS and len(words) > 2 else words[1]


def synopsis(text: str) -> dict[str, str]:
    """The first fenced block's ``harness COMMAND ...`` lines (continuation lines joined), by command; a
    command's several lines (``harness report``'s forms) joined into one."""
    lines: list[str] = []
    for raw in fenced_blocks(text)[0].splitlines():
        if raw.startswith("harness "):
            lines.append(raw)
        elif raw.startswith(" ") and lines and lines[-1].startswith("harness "):
            lines[-1] += " " + raw.strip()
    out: dict[str, str] = {}
    for line in lines:
        name = command_name(line)
        out[name] = f"{out[name]} {line}" if name in out else line
    return out


def command_mentions(text: str) -> list[str]:
    """``harness ...`` as a page shows it: inline code spans and code-block lines (comments cut). The old
    spellings' table (docs/cli.md) is left out: its left column names what no longer exists, on purpose."""
    text = text.split("\n## Old spellings\n", 1)[0]
    out = [m for m in re.findall(r"`(harness [^`<]+)`", text) if not m.startswith("harness:")]
    for block in fenced_blocks(text):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            m = re.match(r"^(?:\S+=\S+ )*(?:\.venv/bin/)?(harness [a-z].*)$", line)  # `VAR=x harness ...` too
            if m and not m.group(1).startswith("harness:"):
                out.append(m.group(1))
    return out


def table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table under ``heading``, header and rule left out."""
    section = text.split(f"{heading}\n", 1)[1]
    rows = []
    for line in section.split("\n## ", 1)[0].splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def scenario_keys(text: str) -> set[str]:
    """``section.key`` for every key the scenarios' README shows in its TOML block (commented-out ones too)."""
    block = next(b for b in fenced_blocks(text) if "[fleet]" in b)
    keys, section = set(), ""
    for line in block.splitlines():
        m = re.match(r"^\[([^\]]+)\]", line)
        if m:
            section = m.group(1).replace('"', "")
            continue
        m = re.match(r"^(?:# )?([a-z_0-9]+) = ", line)
        if m:
            keys.add(f"{section}.{m.group(1)}" if section else m.group(1))
    return keys


def heading_slugs(text: str) -> set[str]:
    """GitHub's (and MyST's) anchors of a page's headings."""
    out = set()
    for h in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out
