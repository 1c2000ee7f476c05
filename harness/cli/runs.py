"""``harness runs``: the history of run directories and a scenario's trend (``harness.products.runs``)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
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
    rs.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.runs.command import cmd_runs

    return cmd_runs(args)
