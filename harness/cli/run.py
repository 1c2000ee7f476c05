"""``harness run SCENARIO``: one load test; its options are shared with ``harness climb`` (a run per rate).

Parses and calls the layers below: the plan from ``harness.config.build``, the run from ``harness.supervisor``,
the report from ``harness.report``. The user's environment arrives read once (``harness.cli.main``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli import gates as cli_gates
from harness.cli import open as cli_open
from harness.cli import telemetry as cli_telemetry
from harness.cli.parser import add_stand_in_arguments, duration, old_option
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode

if TYPE_CHECKING:
    from harness.config.build import RunOptions


def add_parser(sub: Any) -> None:
    r = sub.add_parser("run", help="run a load test (on embedded stand-ins on loopback unless an endpoint "
                       "is configured: dynalite for DynamoDB, SeaweedFS for S3)")
    add_arguments(r)
    r.set_defaults(run=run)


def add_arguments(r: argparse.ArgumentParser, climb: bool = False) -> None:
    """Every option of one run (``climb``: the rate is a range with its steps, as ``harness climb`` takes it)."""
    r.add_argument("scenario", help="scenario name (see `harness scenarios`) or a .toml path")
    r.add_argument("--backend", choices=["dynamodb", "s3"], help="override the scenario's backend")
    r.add_argument("-u", "--users", type=int, help="Locust users: the fleet's size (default the scenario's "
                   "[fleet] workers)")
    old_option(r, "--workers", "--users (-u), Locust's word for the fleet's size")
    r.add_argument("--spawn-rate", type=float, help="users started per second")
    r.add_argument("--duration", type=duration, help="run time, e.g. 90s, 5m, 1h")
    r.add_argument("--processes", type=int, default=0, help="Locust master + N worker processes on this machine")
    r.add_argument("--run-dir", help="run directory (default runs/<run id>)")
    r.add_argument("--web", action="store_true", help="open Locust's web UI on 127.0.0.1 instead of headless")
    r.add_argument("--web-port", type=int, default=8089, help="the web UI's port (default 8089)")
    r.add_argument("--no-report", action="store_true", help="skip building the report at the end")
    r.add_argument("--aws", action="store_true", help="target AWS itself through the credential chain")
    r.add_argument("--table", help="DynamoDB table to use (default: a new one per run)")
    r.add_argument("--bucket", help="S3 bucket to use (default: a new one per run)")
    r.add_argument("--allow-foreign-resources", action="store_true",
                   help="write into a table/bucket the harness did not create")
    r.add_argument("--cleanup", action="store_true", help="delete the table/bucket this run created, at the end")
    r.add_argument("--latency", help="latency profile: local, aws-dynamodb, aws-s3-vpce, aws, or a .toml file")
    r.add_argument("--pre-age-models", dest="seed_models", type=int, metavar="N",
                   help="pre-age first (paced): this many models per namespace ...")
    r.add_argument("--pre-age-versions", dest="seed_versions", type=int, default=10, metavar="N",
                   help="... each run this many times ...")
    r.add_argument("--pre-age-orphans", dest="seed_orphans", type=int, default=0, metavar="N",
                   help="... this many of them deleted, data left behind")
    r.add_argument("--pre-age-dir", dest="seed_dir", metavar="DIR", help="start the workers from the catalogs "
                   "`harness jobs pre-age` wrote (with --table: the pre-aged table)")
    for old in ("models", "versions", "orphans", "dir"):
        old_option(r, f"--seed-{old}", f"--pre-age-{old} (pre-age is the one verb for a datastore's history)")
    add_stand_in_arguments(r)
    r.add_argument("--driver", metavar="KIND", help="run the scenario's twin on this driver: model (the harness's "
                   "own model of the sync layer), command (the datastore's own command line, timed by its spans; "
                   "the scenario's [driver] twin names it) or swamp (the real swamp CLI with the scenario's loop "
                   "built in: needs --swamp-repo)")
    r.add_argument("--swamp", metavar="PATH", help="--driver swamp: the swamp executable (default: swamp on PATH; "
                   "scenario key [driver] swamp)")
    r.add_argument("--swamp-repo", metavar="DIR", help="--driver swamp: the repository template each user's swamp "
                   "repository is made from (its extensions/, and deno.json for S3; scenario key [driver] swamp_repo)")
    r.add_argument("--front", action="store_true", help="put the loopback front between the command driver's "
                   "processes and the service: the fidelity model (latency, capacity, throttles, faults) and "
                   "per-command counts for any client (the scenario's [fidelity] front = true)")
    cli_open.add_arguments(r, climb=climb)
    cli_telemetry.add_arguments(r)
    cli_gates.add_run_arguments(r)
    _add_distributed_arguments(r)


def _add_distributed_arguments(r: argparse.ArgumentParser) -> None:
    d = r.add_argument_group("beyond one machine", "a Locust master for workers started elsewhere "
                             "(`harness worker`), and a web UI others can reach")
    d.add_argument("--master", action="store_true", help="run the Locust master only; workers join with "
                   "`harness worker --master-host HOST` (needs an endpoint every worker reaches, or --aws)")
    d.add_argument("--expect-workers", type=int, default=1, help="headless --master: start when N Locust worker "
                   "processes are in")
    d.add_argument("--expect-workers-max-wait", type=duration, default=600.0, metavar="DURATION",
                   help="headless --master: give up if they are not all in by then (default 10m)")
    d.add_argument("--master-bind-host", default="*", help="interface the master listens on for workers (default *)")
    d.add_argument("--master-bind-port", type=int, default=5557, help="port the master listens on (default 5557)")
    d.add_argument("--web-host", default="127.0.0.1", help="interface of the web UI (default 127.0.0.1; any other "
                   "needs --web-login)")
    d.add_argument("--web-login", action="store_true", help="require a login: HARNESS_WEB_USERNAME (default "
                   "harness) and HARNESS_WEB_PASSWORD (12+ characters) from the environment")


def check_seed_dir(args: argparse.Namespace) -> None:
    """A pre-aged table without the workers' pre-aged catalogs (or the reverse) would misrepresent the run."""
    if not args.seed_dir:
        return
    if args.seed_models:
        raise HarnessError("--pre-age-dir starts from an earlier pre-age and --pre-age-models pre-ages now: give one "
                           "of them")
    if not args.table:
        raise HarnessError("--pre-age-dir needs --table, the table `harness jobs pre-age` filled for these catalogs")
    if not Path(args.seed_dir).is_dir() or not any(Path(args.seed_dir).glob("*.catalog.sqlite")):
        raise HarnessError(f"--pre-age-dir {args.seed_dir}: no pre-aged catalogs there (`harness jobs pre-age ... "
                           "--state-dir` writes them; the default is runs/seeds/TABLE)")


def run_options(args: argparse.Namespace) -> RunOptions:
    """``harness run``'s arguments as the options its plan is built from."""
    from harness.config.build import RunOptions
    from harness.config.plan import PreAge

    opened = cli_open.options(args)
    opened["checks"].update(cli_gates.checks(args))  # --check, --abort-check, --undecided beside the limits
    return RunOptions(
        scenario=args.scenario, backend=args.backend, workers=args.users, duration_s=args.duration,
        spawn_rate=args.spawn_rate, processes=args.processes, run_dir=args.run_dir, web=args.web,
        web_port=args.web_port, report=not args.no_report, aws=args.aws, table=args.table, bucket=args.bucket,
        allow_foreign=args.allow_foreign_resources, cleanup=args.cleanup, latency=args.latency,
        preage=PreAge(args.seed_models, args.seed_versions, args.seed_orphans) if args.seed_models else None,
        seed_dir=args.seed_dir, stand_in=args.stand_in, s3_stand_in=args.s3_stand_in,
        web_host=args.web_host, web_login=args.web_login, master=args.master, expect_workers=args.expect_workers,
        expect_workers_max_wait_s=args.expect_workers_max_wait, master_bind_host=args.master_bind_host,
        master_bind_port=args.master_bind_port, driver=args.driver,
        swamp=args.swamp, swamp_repo=args.swamp_repo, front=args.front, **opened, **cli_telemetry.options(args))


def run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import plan_run
    from harness.core.environment import WEB_PASSWORD_ENV, secret
    from harness.supervisor import gates
    from harness.supervisor.run import run as run_plan

    check_seed_dir(args)
    plan = plan_run(run_options(args), env, password=secret(WEB_PASSWORD_ENV) if args.web_login else "")
    gates.refuse_baseline(args, plan)  # another scenario, backend, fleet size or latency: before anything starts
    res = run_plan(plan)
    print(f"harness: {res.rows} iterations recorded in {res.run_dir}")
    compared = gates.compare(args.baseline, [d for _, d, _, _ in res.checked], args.threshold)
    if res.signal in ("SIGTERM", "SIGHUP") and res.to_report:  # being shut down: record, do not linger
        print(f"harness: reports not built ({res.signal}); build them with `harness report {res.run_dir}`")
    elif not args.no_report:
        from harness.report.run.build import build_report

        for run_dir in res.to_report:  # headless: the run; web: tests whose report was not built yet
            out = build_report([run_dir], baseline=compared.get(run_dir))
            print(f"harness: report {out / 'index.html'}")
    gates.write_junit(args.junit, res, compared)
    if res.failed_parts and not res.signal:  # one line: what died first (the rest are in run.json); no check lines
        more = len(res.failed_parts) - 1
        also = f" (and {more} more part{'s' if more > 1 else ''}: run.json failed_parts)" if more else ""
        print(f"harness: {res.failed_parts[0]['line']}{also}", file=sys.stderr)
        return ExitCode.DID_NOT_COMPLETE
    for line in res.failed_checks:
        print(f"harness: check failed: {line}", file=sys.stderr)
    for line in gates.regressed(compared):
        print(f"harness: regression against the baseline: {line}", file=sys.stderr)
    if res.signal:
        return 128 + int(getattr(signal, res.signal))
    return ExitCode.CHECKS_FAILED if res.failed_checks or gates.regressed(compared) else ExitCode.OK
