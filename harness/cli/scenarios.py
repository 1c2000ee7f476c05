"""``harness scenarios``: the scenarios shipped and in ``$HARNESS_SCENARIOS_DIR``, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    sub.add_parser("scenarios", help="list the scenarios").set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config import scenario as scenarios

    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    found = scenarios.available(extra)
    width = max((len(n) for n in found), default=0)
    for name, path in found.items():
        sc = scenarios.load(str(path))
        print(f"{name:{width}s}  {sc.description}")
    return 0
