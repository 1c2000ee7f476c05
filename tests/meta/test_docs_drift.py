"""The docs and the code cannot drift apart: each statement the docs make in a table or synopsis is checked here.

- every option of every command is in docs/cli.md's synopsis, and every option it (or any page) names exists;
- the iteration columns in docs/run-directory.md are the schema's; the files are checked against a real run in
  tests/e2e/test_report_e2e.py;
- the scenario table lists what `harness scenarios` lists, and the scenarios' README every key the parser reads;
- the "why is my short run flat?" numbers are what harness/report/stats.py computes;
- the README's links and anchors lead somewhere, and the docs build with Sphinx in strict mode.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import build_parser, main
from harness.config import scenario as scenarios
from harness.record import schema
from tests.support.docs_text import (
    DOCS,
    OPTION,
    ROOT,
    command_mentions,
    command_name,
    every_page,
    fenced_blocks,
    heading_slugs,
    read,
    scenario_keys,
    synopsis,
    table,
    ticked,
)

CLI_PAGE = "docs/cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command by its name, a group's commands as ``jobs pre-age`` (the group itself left out)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out: dict[str, argparse.ArgumentParser] = {}
    for name, p in sub.choices.items():
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        out.update({f"{name} {n}": q for n, q in nested[0].choices.items()} if nested else {name: p})
    return out


def _options(p: argparse.ArgumentParser) -> set[str]:
    """The options a user is shown (an old spelling, hidden, answers one line naming its new one)."""
    return {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"
            and a.help != argparse.SUPPRESS}


def drift(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """Every difference between the CLI and a synopsis, in both directions, one sentence each."""
    shown, commands, out = synopsis(text), _subcommands(parser), []
    for name, p in commands.items():
        if name not in shown:
            out.append(f"`harness {name}` is not in the synopsis")
            continue
        documented, real = set(OPTION.findall(shown[name])), _options(p)
        if "[every option of harness run]" in shown[name]:  # harness climb: a run per rate, with run's options
            documented |= set(OPTION.findall(shown.get("run", "")))
        out += [f"`harness {name} {o}` exists but the synopsis does not show it" for o in sorted(real - documented)]
        out += [f"the synopsis shows `harness {name} {o}`, which does not exist" for o in sorted(documented - real)]
        known = p._option_string_actions
        for opt, choices in re.findall(r"(--[a-z-]+) ([a-z0-9-]+(?:\|[a-z0-9-]+)+)", shown[name]):
            if opt in known and set(choices.split("|")) != set(known[opt].choices or ()):
                out.append(f"the synopsis gives {opt} the choices {choices}; the CLI has {known[opt].choices}")
    out += [f"the synopsis shows `harness {n}`, which does not exist" for n in sorted(set(shown) - set(commands))]
    return out


def test_the_synopsis_and_the_cli_match_in_both_directions():
    assert drift(build_parser(), read(CLI_PAGE)) == []


def test_an_option_added_without_its_documentation_fails():
    parser = build_parser()
    _subcommands(parser)["report"].add_argument("--frobnicate", action="store_true")
    assert drift(parser, read(CLI_PAGE)) == ["`harness report --frobnicate` exists but the synopsis does not show it"]


def test_a_documented_option_or_command_that_does_not_exist_fails():
    text = read(CLI_PAGE).replace("harness jobs list [--journal PATH]", "harness jobs list [--journal PATH] [--all]", 1)
    text = text.replace("harness scenarios\n", "harness scenarios\nharness frob\n", 1)
    assert drift(build_parser(), text) == ["the synopsis shows `harness jobs list --all`, which does not exist",
                                           "the synopsis shows `harness frob`, which does not exist"]


MENTIONS = [(page, line) for page, text in every_page().items() for line in command_mentions(text)]


def test_every_page_is_searched_for_commands():
    pages = {page for page, _ in MENTIONS}
    assert {"README.md", CLI_PAGE, "docs/jobs.md", "docs/notebook.md"} <= pages
    assert any(line.startswith("harness notebook") for page, line in MENTIONS if page == "README.md")


@pytest.mark.parametrize(("page", "line"), MENTIONS)
def test_each_command_and_option_any_page_shows_exists(page, line, capsys):
    command = command_name(line)
    commands = _subcommands(build_parser())
    assert command in commands, f"{page}: `{line}` names `harness {command}`, which the CLI does not have"
    with pytest.raises(SystemExit) as e:
        main([*command.split(), "--help"])
    assert e.value.code == 0
    help_text = capsys.readouterr().out
    for opt in OPTION.findall(line):
        assert opt in _options(commands[command]) and opt in help_text, f"{page}: `{line}`: {opt} is unknown"


def test_the_readme_shows_the_everyday_commands_in_its_first_screen():
    first_screen = read("README.md").split("\n## ", 1)[0]
    shown = {command_name(line) for line in command_mentions(first_screen)}
    assert {"scenarios", "run", "report", "notebook"} <= shown
    assert "harness run SCENARIO --web" in first_screen and "http://127.0.0.1:8089" in first_screen
    assert "bash demo.sh" in first_screen and "bash .ci/run" in first_screen and "docs/report.png" in first_screen


def test_ci_runs_the_test_command_the_readme_gives_and_builds_the_docs_strictly():
    ci = read(".ci/run")
    commands = re.findall(r"^python -m pytest( .+)?$", ci, re.M)
    assert commands == [" -n 3"]  # every tier in one invocation: the in-process tests fill the e2e runs' waits
    first = read("README.md").split("\n## ", 1)[0]
    assert all(f"`python -m pytest{t}`" in first for t in commands)
    assert re.search(r"^sphinx-build -W .*docs build/docs$", ci, re.M)


def test_demo_arguments_go_to_harness_run():
    example = re.search(r"`bash demo\.sh ([^`]+)`", read("README.md")).group(1)
    known = _options(_subcommands(build_parser())["run"])
    assert OPTION.findall(example) and all(opt in known for opt in OPTION.findall(example))
    assert "harness run" in read("demo.sh")


# ---- the run directory, the scenarios, the statistics ----------------------------------------------


def documented_columns() -> set[str]:
    steps = list(schema.STEP_COLUMNS)
    out: set[str] = set()
    for row in table(read("docs/run-directory.md"), "## Iteration columns"):
        for name in ticked(row[0]):
            out |= {name.replace("<step>", s) for s in steps} if "<step>" in name else {name}
    return out


def test_the_iteration_columns_the_docs_list_are_the_schema():
    documented, written = documented_columns(), set(schema.COLUMNS)
    assert sorted(written - documented) == [], "columns a run writes that docs/run-directory.md does not list"
    assert sorted(documented - written) == [], "columns docs/run-directory.md lists that no run writes"


def test_the_outcome_every_reader_prints_is_documented_field_by_field():
    """run.json's ``outcome`` fields and each state in docs/run-directory.md; summary.json's ``findings.outcome``
    keys in docs/reports.md (harness/record/outcome.py writes them)."""
    import dataclasses

    from harness.record import outcome

    page = read("docs/run-directory.md")
    assert [k for k in outcome.run_json_fields({"status": "finished"}) if f"`{k}`" not in page] == []
    states = (outcome.COMPLETED, outcome.INTERRUPTED, outcome.STOPPED_EARLY, outcome.DID_NOT_COMPLETE)
    assert [s for s in states if f"| `{s}` |" not in page] == []
    reports = read("docs/reports.md")
    assert [f.name for f in dataclasses.fields(outcome.Outcome) if f"`{f.name}`" not in reports] == []


def test_the_scenario_table_lists_what_harness_scenarios_lists(capsys):
    assert main(["scenarios"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    tabled = {ticked(row[0])[0] for row in table(read("docs/scenarios.md"), "# Scenarios")}
    assert tabled == listed == set(scenarios.available())


def test_the_scenario_tables_lock_settings_are_the_files():
    for row in table(read("docs/scenarios.md"), "# Scenarios"):
        sc = scenarios.load(ticked(row[0])[0])
        assert row[2] == f"{sc.lock.ttl_s:g} s / {sc.lock.wait_s:g} s", row[0]


def read_keys(data: dict) -> set[str]:
    """Every ``section.key`` the scenario parser reads for ``data``, by watching its reader."""
    seen: set[str] = set()
    original = scenarios._Reader.get

    def spy(self, key, default):
        seen.add(f"{self.section}.{key}" if self.section else key)
        return original(self, key, default)

    scenarios._Reader.get = spy
    try:
        scenarios.parse(data)
    finally:
        scenarios._Reader.get = original
    sections = {k.rsplit(".", 1)[0] for k in seen if "." in k} | {"fidelity.faults"}
    return {k for k in seen if k not in sections}  # a section is read as a key of its parent


def test_the_scenarios_readme_shows_every_key_the_parser_reads():
    parsed = read_keys({"fidelity": {"faults": {"*": {}}}})
    shown = scenario_keys(read("harness/config/scenarios/README.md"))
    assert sorted(parsed - shown) == [], "keys the parser reads that scenarios/README.md does not show"
    assert sorted(shown - parsed) == [], "keys scenarios/README.md shows that the parser does not read"


def test_the_key_spy_sees_a_key_added_to_the_parser(monkeypatch):
    """The key check reads the parser itself: a key the lead adds is found without editing this test."""
    original = scenarios.parse

    def parse_with_extra(data, *a, **kw):
        scenarios._Reader(data.get("datastore", {}), "datastore", "x").get("sync", "one-lock")
        return original(data, *a, **kw)

    monkeypatch.setattr(scenarios, "parse", parse_with_extra)
    assert "datastore.sync" in read_keys({})


def _needed(ratio: float) -> int:
    from harness.report.stats import poisson_interval

    return next(n for n in range(2, 10_000)
                if float(poisson_interval(n * ratio)[1]) < float(poisson_interval(n)[0]))


def test_the_short_run_numbers_are_what_the_statistics_compute():
    from harness.report.run.verdict import MAX_SEGMENTS, MIN_SEGMENTS, PER_SEGMENT

    page = read("docs/reports.md")
    falls = table(page, '## Why is my short run "flat"?')
    assert len(falls) == 3
    for fall, needed in falls:
        assert int(needed) == _needed(float(fall.lstrip("x"))), fall
    runs = table(page.split("run needs about", 1)[1], "seconds after the warm-up:")
    assert len(runs) == 4
    for rate, seconds in runs:
        assert round(MAX_SEGMENTS * _needed(0.5) / float(rate.split()[0])) == int(seconds.split()[0]), rate
    assert f"at least {MAX_SEGMENTS * PER_SEGMENT} successful iterations" in page and MIN_SEGMENTS == 3
    assert re.search(r"--duration (\d+)s", read("demo.sh")).group(1) == "90"  # x2 at ~4.5 it/s needs 67 s


# ---- links, and the strict build ----------------------------------------------------------------------


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md"])
def test_relative_links_lead_to_a_file_and_heading(page):
    links = re.findall(r"\]\(([^)#:]+)(?:#([^)]+))?\)", read(page))
    assert links
    for target, anchor in links:
        path = ROOT / target
        assert path.exists(), f"{page} links to {target}, which does not exist"
        if anchor:
            assert anchor in heading_slugs(path.read_text()), f"{page}: {target} has no heading #{anchor}"


def _sphinx(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", str(src), str(out)],
                          capture_output=True, text=True, timeout=300)


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The build .ci/run makes fails on a link to nothing (the docs proper build in .ci/run itself)."""
    for readme in ("harness/config/scenarios", "harness/products/story/stories"):  # included by docs/*.md
        shutil.copytree(ROOT / readme, tmp_path / readme)
    shutil.copy(ROOT / "CONTRIBUTING.md", tmp_path / "CONTRIBUTING.md")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("_build"))
    (tmp_path / "docs" / "benchmarks.md").write_text(read("docs/benchmarks.md") + "\n[gone](no-such-page.md)\n")
    p = _sphinx(tmp_path / "docs", tmp_path / "out")
    assert p.returncode != 0 and "no-such-page.md" in p.stderr, p.stderr


def test_every_page_is_in_the_docs_table_of_contents():
    index = read("docs/index.md")
    toc = {line.strip() for block in fenced_blocks(index) for line in block.splitlines() if line and ":" not in line}
    assert toc == {p.stem for p in DOCS.glob("*.md")} - {"index"}


def test_every_benchmark_in_the_docs_has_a_quick_mode_that_a_test_runs():
    scripts = re.findall(r"python (bench/\w+\.py)", read("docs/benchmarks.md"))
    assert len(scripts) >= 4
    tests = {p: p.read_text() for p in (ROOT / "tests").rglob("test_*.py")}
    for script in scripts:
        assert '"--quick"' in (ROOT / script).read_text(), f"{script} has no --quick mode"
        name = Path(script).name
        assert any(name in text and "--quick" in text for text in tests.values()), f"no test runs {script} --quick"


def test_plain_locust_takes_the_options_the_docs_show():
    """``--list`` parses the whole command line (the locustfile's options included) and exits."""
    text = read(CLI_PAGE) + read("docs/web-ui.md")
    lines = re.findall(r"`(locust -f [^`]+)`", text) + re.findall(r"^(locust -f .+)$", fenced_blocks(text)[0], re.M)
    assert len(lines) >= 2
    for line in lines:
        words = line.split()[1:]
        argv = words[:next((i for i, w in enumerate(words) if w.startswith("[")), len(words))]
        if "NAME" in argv:
            argv[argv.index("NAME")] = "namespaced"
        p = subprocess.run([sys.executable, "-m", "locust", *argv, "--list"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
        assert p.returncode == 0 and "Available Users" in p.stdout, f"`{line}`: {p.stderr}"


def test_every_stand_in_is_documented_in_the_cli_page_and_the_stand_ins_page():
    from harness.aws import standin

    for page in (CLI_PAGE, "docs/stand-ins.md"):
        text = read(page)
        missing = [n for n in (*standin.NAMES, *standin.S3_NAMES) if n not in text]
        assert missing == [], f"{page} does not name the stand-in(s) {', '.join(missing)}"
