"""The old spellings of issue 53's renamed commands: each answers one line naming the new one, exit 2.

The options' old spellings are ``harness.cli.parser.OldSpelling`` on their commands; the commands' are here,
checked before parsing (a removed command has no parser to hold them). docs/cli.md has the whole table.
"""

from __future__ import annotations

from harness.cli.jobs import VERBS

OLD_COMMANDS = {
    "seed": "harness jobs pre-age",
    "fill": "harness jobs fill",
    "cleanup": "harness jobs cleanup",
    "resume": "harness jobs resume",
}


def old_command(argv: list[str]) -> str | None:
    """The one line an old command's spelling answers with, or None when ``argv`` is not one."""
    if not argv:
        return None
    if argv[0] in OLD_COMMANDS:
        return f"harness: `harness {argv[0]}` is now `{OLD_COMMANDS[argv[0]]}` (docs/cli.md: old spellings)"
    rest = argv[1:]
    if argv[0] == "jobs" and not (rest and (rest[0] in VERBS or rest[0] in ("-h", "--help"))):
        return "harness: `harness jobs` (the list) is now `harness jobs list` (docs/cli.md: old spellings)"
    return None
