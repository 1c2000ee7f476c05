"""``harness standin``: the embedded stand-ins served on HOST:PORT for workers on other machines."""

from __future__ import annotations

import argparse
from typing import Any

from harness.core.environment import UserEnvironment


def add_parser(sub: Any) -> None:
    si = sub.add_parser("standin", help="serve the embedded stand-in (DynamoDB and S3) on HOST:PORT until stopped, "
                        "for workers on other machines")
    si.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    si.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    si.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.supervisor.distributed import serve_standin

    return serve_standin(args.host, args.port)
