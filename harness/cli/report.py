"""``harness report``: a report rebuilt from its files, its kind said by the command, not guessed.

``harness report RUN_DIR ...`` builds one run's report (or a comparison of several; a web session's tests are
runs); ``--story``, ``--sweep`` and ``--suite`` rebuild a product's page from its directory. A directory of
another kind answers one line naming the command that builds it. Each kind is a class chosen once from the
arguments; the building is the report's and the products' (``harness.report.run.build``, ``harness.products``).
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from harness.cli import gates as cli_gates
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.products.story import STORY_JSON
from harness.products.sweep import SWEEP_JSON


def add_parser(sub: Any) -> None:
    rep = sub.add_parser("report", help="build the report of one or more run directories (--story, --sweep, "
                         "--suite: of a product's directory)")
    rep.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (several: a comparison), or "
                     "with --story/--sweep/--suite that product's directory")
    kind = rep.add_mutually_exclusive_group()
    for k in KINDS[1:]:
        kind.add_argument(f"--{k.name}", dest="kind", action="store_const", const=k.name, help=k.help)
    rep.add_argument("--out", help="output directory (default RUN_DIR/report; for several runs a comparison-* "
                                   "folder beside them when they share a folder, else under runs/)")
    rep.add_argument("--cloudwatch", action="store_true", help="first read what AWS measured for each run (its "
                     "table, GSIs or bucket, over its window) into RUN_DIR/cloudwatch.csv, where its plan.json says "
                     "CloudWatch is (AWS on an --aws run)")
    rep.add_argument("--prices", metavar="FILE", help="a TOML price table over the shipped one (harness/report/cost/"
                     "prices.toml: us-east-1, dated): the run's requests and units are priced with it")
    cli_gates.add_report_arguments(rep)
    rep.set_defaults(run=run, kind="run")


class _Kind:
    """A kind of directory ``harness report`` builds: how to recognise one, and how to build it."""

    name = ""
    help = ""

    def holds(self, d: str) -> bool:
        raise NotImplementedError

    def build(self, args: argparse.Namespace) -> int:
        raise NotImplementedError

    def command(self, d: str) -> str:
        return f"harness report --{self.name} {d}"


class _Run(_Kind):
    name = "run"

    def holds(self, d: str) -> bool:
        return not any(k.holds(d) for k in KINDS[1:])

    def command(self, d: str) -> str:
        return f"harness report {d}"

    def build(self, args: argparse.Namespace) -> int:
        from harness.record.runinfo import expand_runs, is_session
        from harness.report.cost.cost import load as load_prices
        from harness.report.run.build import build_report
        from harness.supervisor import gates

        sessions = [d for d in args.run_dirs if is_session(d)]  # a web session: each of its tests is a run
        out_dir = args.out or (f"{sessions[0]}/report" if len(args.run_dirs) == 1 and sessions else None)
        run_dirs = expand_runs(args.run_dirs)
        if not run_dirs:
            raise HarnessError(f"{args.run_dirs[0]} is a web session with no test yet: start a test in its web UI")
        if args.cloudwatch:  # what AWS measured, read now; a run without it is a one-line error
            from harness.telemetry.cloudwatch.after_run import for_report

            for d in run_dirs:
                for_report(d)
        compared, code = gates.report_gates(args, [Path(d) for d in run_dirs])
        prices = load_prices(args.prices)  # a bad --prices file: one line, before anything is built
        out = build_report(run_dirs, out_dir, baseline=next(iter(compared.values()), None), prices=prices)
        print(f"harness: report {out / 'index.html'}")
        if args.junit:
            gates.report_junit(args.junit, json.loads((out / "summary.json").read_text()), compared)
        return code


class _Product(_Kind):
    """A product's directory (a story's, a sweep's): its record file says a directory is one, its module rebuilds
    the page; the kinds differ only in those two, the module imported when asked (``harness report RUN_DIR``
    never loads it: asking through the modules cost each report 0.7 s of CPU)."""

    def __init__(self, name: str, module: str, record: str, help: str) -> None:
        self.name, self.module, self.record, self.help = name, module, record, help

    def holds(self, d: str) -> bool:
        return (Path(d) / self.record).is_file()

    def build(self, args: argparse.Namespace) -> int:
        out = importlib.import_module(self.module).build(_alone(args), args.out)
        print(f"harness: {self.name} {out / 'index.html'}")
        return 0


_STORY = _Product("story", "harness.products.story.story", STORY_JSON,
                  "rebuild a story's page from its directory (`harness story` wrote it): every chapter judged again")
_SWEEP = _Product("sweep", "harness.products.sweep.sweep", SWEEP_JSON,
                  "rebuild a sweep's page from its directory (`harness sweep` wrote it): every size's run and the fit")


class _Suite(_Kind):
    name = "suite"
    help = "rebuild a suite run's table, page and suite.json from its files (`harness suite` wrote them)"

    def holds(self, d: str) -> bool:
        from harness.products.suite.suite import RUN_JSON

        return (Path(d) / RUN_JSON).is_file()

    def build(self, args: argparse.Namespace) -> int:
        from harness.products.suite.page import build

        if args.out:
            raise HarnessError("--out is not for a suite: its page is written inside its run directory")
        for d in args.run_dirs:
            build(d)
            print(f"harness: suite report {Path(d) / 'suite.html'}")
        return 0


KINDS: tuple[_Kind, ...] = (_Run(), _STORY, _SWEEP, _Suite())


def _alone(args: argparse.Namespace) -> str:
    if len(args.run_dirs) != 1:
        raise HarnessError(f"--{args.kind} rebuilds one directory at a time (got {len(args.run_dirs)})")
    return args.run_dirs[0]


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    kind = next(k for k in KINDS if k.name == args.kind)
    for d in args.run_dirs:  # a directory of another kind: one line naming the command that builds it
        if not kind.holds(d):
            raise HarnessError(_wrong_kind(d, kind))
    if kind.name != "run" and (args.baseline or args.junit):
        raise HarnessError(f"--baseline and --junit take run directories, not a {kind.name}'s "
                           "(`harness suite NAME --baseline OTHER_SUITE_RUN` compares suites)")
    return kind.build(args)


def _wrong_kind(d: str, wanted: _Kind) -> str:
    if not Path(d).is_dir():
        return f"{d}: no such directory"
    other = next(k for k in KINDS if k.holds(d))
    if other.name == "run":
        return f"{d} is not a {wanted.name}'s directory: `{other.command(d)}` builds a run's report"
    return f"{d} is a {other.name}'s directory: `{other.command(d)}` builds its report"
