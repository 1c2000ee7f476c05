"""Every command the README shows exists, with every option it shows (docs and code cannot drift apart)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _block(title: str) -> str:
    """The first fenced block after a heading."""
    section = README.split(f"## {title}\n", 1)[1]
    return section.split("```", 2)[1]


def _command_lines() -> list[str]:
    """`harness ...` lines of the command-line block (continuation lines joined) and inline `harness ...` spans."""
    lines: list[str] = []
    for raw in _block("Command line").splitlines():
        if raw.startswith("harness "):
            lines.append(raw)
        elif raw.startswith(" ") and lines and lines[-1].startswith("harness "):
            lines[-1] += " " + raw.strip()
    lines += [m for m in re.findall(r"`(harness [^`<]+)`", README) if not m.startswith("harness:")]
    return lines


def _subcommands() -> dict:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


COMMANDS = _command_lines()


def test_the_readme_shows_every_command():
    shown = {line.split()[1] for line in COMMANDS}
    assert shown == set(_subcommands())


@pytest.mark.parametrize("line", COMMANDS)
def test_each_command_and_option_in_the_readme_exists(line, capsys):
    words = line.split()
    command = words[1]
    assert command in _subcommands(), f"README shows `harness {command}`, which the CLI does not have"
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    help_text = capsys.readouterr().out
    known = _subcommands()[command]._option_string_actions
    for opt in OPTION.findall(line):
        assert opt in known and opt in help_text, f"README: `{line}` shows {opt}, unknown to `harness {command}`"
    for opt, choices in re.findall(r"(--[a-z-]+) ([a-z0-9-]+(?:\|[a-z0-9-]+)+)", line):
        assert set(choices.split("|")) == set(known[opt].choices), (opt, choices)


def test_demo_arguments_go_to_harness_run():
    example = re.search(r"`bash demo\.sh ([^`]+)`", README).group(1)
    known = _subcommands()["run"]._option_string_actions
    assert all(opt in known for opt in OPTION.findall(example))
    assert "harness run" in (ROOT / "demo.sh").read_text()


def test_every_benchmark_in_the_readme_has_a_quick_mode_that_a_test_runs():
    scripts = re.findall(r"python (bench/\w+\.py)", _block("Benchmarks"))
    assert len(scripts) >= 4
    tests = {p: p.read_text() for p in (ROOT / "tests").rglob("test_*.py")}
    for script in scripts:
        assert '"--quick"' in (ROOT / script).read_text(), f"{script} has no --quick mode"
        name = Path(script).name
        assert any(name in text and "--quick" in text for text in tests.values()), f"no test runs {script} --quick"


def test_plain_locust_takes_the_options_the_readme_shows():
    """``--list`` parses the whole command line (the locustfile's options included) and exits."""
    lines = re.findall(r"`(locust -f [^`]+)`", README) + re.findall(r"^(locust -f .+)$", _block("Command line"), re.M)
    assert len(lines) >= 2
    for line in lines:
        words = line.split()[1:]
        argv = words[:next((i for i, w in enumerate(words) if w.startswith("[")), len(words))]
        if "NAME" in argv:
            argv[argv.index("NAME")] = "namespaced"
        p = subprocess.run([sys.executable, "-m", "locust", *argv, "--list"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
        assert p.returncode == 0 and "Available Users" in p.stdout, f"`{line}`: {p.stderr}"
