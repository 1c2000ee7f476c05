"""Every option of every command has help text: walk the parser (subcommands of subcommands included) and fail
on an option or positional argument without it. The old spellings (hidden, one line naming the new one) are
the only options without help, by their class."""

from __future__ import annotations

import argparse

from harness.cli.main import build_parser
from harness.cli.parser import OldSpelling


def _parsers(p: argparse.ArgumentParser, prog: str = "harness"):
    yield prog, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, f"{prog} {name}")


def _without_help(p: argparse.ArgumentParser) -> list[str]:
    missing = []
    for a in p._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction, OldSpelling)):
            continue
        if not a.help or a.help == argparse.SUPPRESS:
            missing.append("/".join(a.option_strings) or a.dest)
    return missing


def test_every_option_of_every_command_has_help():
    missing = {prog: m for prog, p in _parsers(build_parser()) if (m := _without_help(p))}
    assert not missing, f"options without help text: {missing}"


def test_every_command_has_help():
    def commands(p: argparse.ArgumentParser, prog: str = "harness"):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                helped = {c.dest for c in a._choices_actions}
                for name, sub in a.choices.items():
                    yield f"{prog} {name}", name in helped
                    yield from commands(sub, f"{prog} {name}")

    assert [c for c, helped in commands(build_parser()) if not helped] == []


def test_the_walk_sees_a_missing_help():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["report"].add_argument("--frobnicate", action="store_true")
    assert "--frobnicate" in _without_help(sub.choices["report"])
