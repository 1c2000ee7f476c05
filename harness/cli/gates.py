"""The gates' arguments: ``harness run``'s thresholds, JUnit file and baseline, and ``harness report
--baseline``; what they do is ``harness.supervisor.gates``.

Beside ``harness.cli.run`` (the run's own options), as ``harness.cli.open`` is, so the run's options grow here.
Every expression is parsed as its argument is read: a malformed one is argparse's one line, exit 2, before
anything starts.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.parser import add_threshold_argument
from harness.core.errors import HarnessError
from harness.gates import columns, expr


def _threshold(text: str) -> expr.ThresholdSpec:
    """``--check``: parsed (and its columns checked) now, so a typo is one line before anything starts."""
    try:
        columns.check([expr.parse(text, "threshold")], "threshold")
    except HarnessError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return expr.ThresholdSpec(text)


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
    add_threshold_argument(g)


def add_report_arguments(rep: argparse.ArgumentParser) -> None:
    g = rep.add_argument_group("baseline", "one run against an earlier one (exit 3 on a regression)")
    add_baseline_arguments(g)
    g.add_argument("--junit", metavar="FILE", help="write the run's checks (and the baseline's items) as JUnit XML")


def checks(args: argparse.Namespace) -> dict[str, Any]:
    """The scenario [checks] fields these arguments add (RunOptions.checks: with_checks appends thresholds)."""
    specs = (*args.check, *(expr.ThresholdSpec(s.check, abort=True) for s in args.abort_check))
    return {"thresholds": specs, "undecided": args.undecided}
