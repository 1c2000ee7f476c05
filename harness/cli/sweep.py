"""``harness sweep SCENARIO --users 1,2,4,8,16``: one run per fleet size, the scaling law fitted
(``harness.products.sweep``)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.parser import duration, old_option
from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    sw = sub.add_parser("sweep", help="one run per fleet size (and trial), each on a fresh table or bucket, and the "
                        "Universal Scalability Law fitted to their rates: contention, coherency, the peak")
    sw.add_argument("scenario", help="scenario name (see `harness scenarios`) or a .toml path")
    sw.add_argument("-u", "--users", metavar="LIST", help="fleet sizes in Locust users, comma-separated (default "
                    "1,2,4,8,16; --quick 1,2)")
    old_option(sw, "--workers", "--users (-u), Locust's word for the fleet's size")
    sw.add_argument("--duration", type=duration, help="each run's time, e.g. 60s (default the scenario's; --quick 8s)")
    sw.add_argument("--backend", choices=["dynamodb", "s3"], help="override the scenario's backend")
    sw.add_argument("--processes", default="0", metavar="auto|N", help="Locust worker processes per run: N, or auto "
                    "(one more per 50 users, up to the cores; default 0: one process)")
    sw.add_argument("--trials", type=int, default=1, help="runs per fleet size (default 1)")
    sw.add_argument("--quick", action="store_true", help="sizes 1,2 and 8 s runs unless given (CI: about a minute)")
    sw.add_argument("--run-dir", help="the sweep directory (default runs/sweep-<scenario>-<time>)")
    sw.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.sweep.command import SweepOptions, cmd_sweep

    return cmd_sweep(SweepOptions(scenario=args.scenario, workers=args.users, duration_s=args.duration,
                                  backend=args.backend, processes=args.processes, trials=args.trials,
                                  quick=args.quick, run_dir=args.run_dir), env)
