"""The gates' arguments: ``harness run``'s thresholds, JUnit file and baseline, ``harness report
--baseline``, and ``harness runs`` (the history and a scenario's trend); what they do is
``harness.supervisor.gates`` and ``harness.products.runs.command``.

Beside ``harness.cli.main`` (the parser of every command), as ``cli_open`` is, so the run's options grow here.
Every expression is parsed as its argument is read: a malformed one is argparse's one line, exit 2, before
anything starts.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from harness.core.errors import HarnessError
from harness.gates import columns, expr


def _threshold(text: str) -> expr.ThresholdSpec:
    """``--check``: parsed (and its columns checked) now, so a typo is one line before anything starts."""
    try:
        columns.check([expr.parse(text, "threshold")], "threshold")
    except HarnessError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return expr.ThresholdSpec(text)


def _tolerance(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not m or float(m.group(1)) >= 100:
        raise argparse.ArgumentTypeError(f"a tolerance is a percentage below 100, e.g. 10% (got {text!r})")
    return float(m.group(1)) / 100


def add_run_arguments(r: argparse.ArgumentParser) -> None:
    g = r.add_argument_group("gates", "thresholds on any column, an early stop, JUnit results, a baseline (exit 3)")
    g.add_argument("--check", type=_threshold, action="append", default=[], metavar="EXPR",
                   help="a threshold that must hold, e.g. \"p95(commit_ms) < 200ms\", \"rate(last 30s) >= 2/s\", "
                   "\"failure_ratio(throttled) < 1%%\" (repeatable; beside [checks] thresholds); exit 3 when it "
                   "credibly fails")
    g.add_argument("--abort-check", type=_threshold, action="append", default=[], metavar="EXPR",
                   help="a --check that also stops the test early, judged every window while it runs, once it is "
                   "credibly breached (the report is still built; exit 3)")
    g.add_argument("--undecided", choices=expr.UNDECIDED, help="how a threshold whose interval straddles its "
                   "limit counts (default: the scenario's [checks] undecided, pass)")
    g.add_argument("--junit", metavar="FILE", help="write the checks as JUnit XML (one test case per check)")
    add_baseline_arguments(g)


def add_baseline_arguments(g: Any) -> None:
    g.add_argument("--baseline", metavar="RUN_DIR", help="compare the rate, the floor and each step's time with this "
                   "run of the same scenario, backend, fleet size and latency profile; exit 3 on a credible "
                   "regression beyond --threshold")
    g.add_argument("--threshold", type=_tolerance, default=0.10, metavar="PCT",
                   help="how much credibly worse --baseline tolerates (default 10%%)")


def add_report_arguments(rep: argparse.ArgumentParser) -> None:
    g = rep.add_argument_group("baseline", "one run against an earlier one (exit 3 on a regression)")
    add_baseline_arguments(g)
    g.add_argument("--junit", metavar="FILE", help="write the run's checks (and the baseline's items) as JUnit XML")


def add_runs_parser(sub: Any) -> None:
    rs = sub.add_parser("runs", help="the history: run directories under runs/ newest first (scenario, backend, "
                        "fleet, rate, verdict, checks); --trend SCENARIO draws its rate and a step across them")
    rs.add_argument("--runs-dir", default="runs", metavar="DIR", help="where to look (default runs)")
    rs.add_argument("--scenario", help="only runs of this scenario")
    rs.add_argument("--since", metavar="WHEN", help="only runs started since: a date (2026-08-01), a time "
                    "(2026-08-01T12:00) or a duration ago (90m, 12h, 7d)")
    rs.add_argument("--trend", metavar="SCENARIO", help="write a page of this scenario's rate and one step "
                    "across its reported runs (RUNS_DIR/trend-SCENARIO/index.html)")
    rs.add_argument("--step", help="with --trend: the step to draw, e.g. commit, lock wait (default: the newest "
                    "run's dominant step)")
    rs.add_argument("--out", help="with --trend: the page's directory (default RUNS_DIR/trend-SCENARIO)")
    rs.add_argument("--json", action="store_true", help="print the entries as JSON lines instead of a table")


def checks(args: argparse.Namespace) -> dict[str, Any]:
    """The scenario [checks] fields these arguments add (RunOptions.checks: with_checks appends thresholds)."""
    specs = (*args.check, *(expr.ThresholdSpec(s.check, abort=True) for s in args.abort_check))
    return {"thresholds": specs, "undecided": args.undecided}
