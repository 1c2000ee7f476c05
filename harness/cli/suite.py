"""``harness suite NAME``: a benchmark suite, optionally against a baseline suite run
(``harness.products.suite``)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.parser import add_stand_in_arguments, add_threshold_argument, old_option
from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    su = sub.add_parser("suite", help="a benchmark suite (suites/NAME.toml): one sync operation per trial, per phase, "
                        "a fresh datastore per scenario and layout; --baseline gates on another run (exit 3)")
    su.add_argument("suite", help="suite name (suites/NAME.toml, e.g. swamp-datastore) or a .toml path")
    su.add_argument("--backend", choices=["dynamodb", "s3"], help="default: the suite's (swamp-datastore: s3)")
    su.add_argument("--layout", help="only these index layouts, comma-separated (s3: monolith,sharded; dynamodb: "
                    "legacy,per-model; default both)")
    su.add_argument("--trials", type=int, help="measured trials per scenario and layout (default: the suite's, 5)")
    su.add_argument("--quick", action="store_true", help="the suite's quick shape and trials (swamp-datastore: 100 "
                    "files over 10 models, 2 trials), every scenario")
    su.add_argument("--scenarios", metavar="LIST", help="only these scenarios: numbers or exact names, comma-separated")
    su.add_argument("--run-dir", help="run directory (default runs/<run id>)")
    su.add_argument("--baseline", dest="compare", metavar="SUITE_RUN", help="compare every phase with another suite "
                    "run (its run directory or its suite.json); exit 3 when one is credibly slower by more than "
                    "--threshold")
    old_option(su, "--compare", "--baseline")
    add_threshold_argument(su)
    su.add_argument("--min-ms", type=float, default=1.0, help="--baseline flags no phase whose median moved by less "
                    "(default 1 ms)")
    su.add_argument("--latency", help="latency profile added to every request: local, aws-dynamodb, aws-s3-vpce, aws, "
                    "or a .toml file")
    add_stand_in_arguments(su)
    su.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.suite.command import SuiteOptions, run_suite

    return run_suite(SuiteOptions(
        suite=args.suite, backend=args.backend, layouts=args.layout, trials=args.trials, quick=args.quick,
        scenarios=args.scenarios, run_dir=args.run_dir, compare=args.compare, threshold=round(args.threshold * 100, 9),
        min_ms=args.min_ms, latency=args.latency, stand_in=args.stand_in, s3_stand_in=args.s3_stand_in), env)
