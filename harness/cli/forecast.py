"""``harness forecast RUN_DIR --at DURATION|Nit|Nx [--json]``: the report's rate forecast at any horizon.

The run's findings are computed as the report computes them (no page, no figures), with the forecast looking
where ``--at`` says; ``--json`` prints the forecast as ``summary.json`` carries it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.core.environment import UserEnvironment
from harness.core.exit_codes import ExitCode


def add_parser(sub: Any) -> None:
    fc = sub.add_parser("forecast", help="the rate forecast from what grows, at any horizon (the report's is at the "
                        "run's length x10): the step that grew, its count's growth, the fleet's rate there")
    fc.add_argument("run_dir", metavar="RUN_DIR", help="the run directory to forecast from")
    fc.add_argument("--at", default="10x", metavar="DURATION|Nit|Nx", help="where to look: a time from the load's "
                    "start (15m, 2h), the fleet's successful iterations (1900it) or the run's length times N (10x)")
    fc.add_argument("--json", action="store_true", help="print the forecast as summary.json's `forecast`")
    fc.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    return cmd_forecast(args.run_dir, args.at, args.json)


def cmd_forecast(run_dir: str, at: str, as_json: bool) -> int:
    """Exit 0 with a forecast (a flat one included); 2 for bad input (not a run directory, a malformed ``--at``);
    3 when none can be made (too few successful iterations, no success in the end segment)."""
    from harness.report.forecast.forecast import sentence
    from harness.report.forecast.horizon import parse
    from harness.report.load import open_run
    from harness.report.run.build import findings_of, take_lock_intervals
    from harness.report.show import json_safe

    horizon = parse(at)
    run = open_run(Path(run_dir))
    f = findings_of(run, take_lock_intervals(run), horizon=horizon)
    fc = f.get("forecast")
    if as_json:
        print(json.dumps(json_safe({k: v for k, v in (fc or {}).items() if k != "curve"}) if fc else None,
                         indent=2, allow_nan=False))
    else:
        print(sentence(fc) or "No forecast: the run has too few successful iterations to forecast from.")
    return ExitCode.OK if fc and fc.get("rate") else ExitCode.CHECKS_FAILED
