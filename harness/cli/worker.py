"""``harness worker``: a Locust worker process group for ``harness run --master`` (the supervisor execs it)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    wk = sub.add_parser("worker", help="Locust worker processes for `harness run --master` (scenario, backend and "
                        "run come from the master)")
    wk.add_argument("--master-host", default="127.0.0.1", help="host name or address of the master")
    wk.add_argument("--master-port", type=int, default=5557, help="the master's port for workers (default 5557)")
    wk.add_argument("--processes", type=int, default=1, help="Locust worker processes in this container or machine")
    wk.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.supervisor.distributed import exec_worker

    return exec_worker(args.master_host, args.master_port, args.processes)
