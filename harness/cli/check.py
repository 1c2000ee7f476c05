"""``harness check RUN_DIR [--live]``: the run's history against its final state, from the files or the store.

``--live`` reads the state from the run's table or bucket now, at the
endpoint the run's plan recorded (AWS only with ``--aws``), through the
plan's factory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode


def add_parser(sub: Any) -> None:
    ck = sub.add_parser("check", help="check a run's history against its final remote state (exit 3 on a violation)")
    ck.add_argument("run_dir", metavar="RUN_DIR", help="the run directory `harness run` made")
    ck.add_argument("--live", action="store_true",
                    help="read the state from the run's table/bucket now, at the endpoint its plan.json records")
    ck.add_argument("--aws", action="store_true", help="with --live: the run's table/bucket are on AWS itself")
    ck.set_defaults(run=run)


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    return cmd_check(args.run_dir, args.live, args.aws)


def live_state(run_dir: str | Path, *, aws: bool = False) -> dict:
    """What readers of the run's table/bucket see now."""
    from botocore.exceptions import BotoCoreError, ClientError

    from harness.config.factory import Factory
    from harness.config.recorded import recorded_plan, usable_connection
    from harness.safety.fresh import with_fresh_reads
    from harness.safety.history import read_events
    from harness.safety.state import snapshot

    plan = recorded_plan(run_dir)
    usable_connection(plan, aws, "read")
    factory = Factory(plan)
    clients = factory.clients(total_attempts=2, services=[plan.backend])
    backend = factory.backend(clients, create=False)
    try:
        return with_fresh_reads(backend, read_events(Path(run_dir)), snapshot(backend))
    except (BotoCoreError, ClientError) as e:
        where = plan.connection.service(plan.backend).where
        raise HarnessError(f"cannot read the run's {plan.backend} state at {where}: {e}") from None


def cmd_check(run_dir: str, live: bool, aws: bool) -> int:
    from harness.safety import audit

    audit_dir = Path(run_dir)
    if not (audit_dir / audit.RUN_JSON).is_file():
        raise HarnessError(f"{run_dir} is not a run directory (no {audit.RUN_JSON}): give the directory "
                           "`harness run` made")
    state = live_state(run_dir, aws=aws) if live else None
    report = audit.check_run(run_dir, state=state)
    print(f"harness: {audit.summary(report)}")
    for line in audit.failed_checks(report):
        print(f"harness: check failed: {line}", file=sys.stderr)
    return ExitCode.CHECKS_FAILED if report["violations"] else ExitCode.OK
