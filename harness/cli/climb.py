"""``harness climb SCENARIO --rate LO..HI``: the saturation climb, a command of its own (a closed run, then a
run of open arrivals per rate); ``harness.products.climb`` runs it. Its options are ``harness run``'s."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import run as cli_run
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError


def add_parser(sub: Any) -> None:
    c = sub.add_parser("climb", help="a saturation climb: a closed run, then one run per rate from LO to HI, and "
                       "where the wait grows without bound")
    cli_run.add_arguments(c, climb=True)
    c.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.climb.command import climb

    cli_run.check_seed_dir(args)
    if args.baseline:
        raise HarnessError("--baseline compares one run: a climb makes several")
    return climb(cli_run.run_options(args), env, args.rate, args.steps)
