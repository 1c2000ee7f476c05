"""The ``harness`` command line: run, report, notebook, check, scenarios, suite, the jobs.

The command line's edge: the arguments and the user's environment
(``harness.core.environment``, read once here) become a run plan or a job's connection,
and nothing below reads either again.

Exit codes: 0 success; 1 unexpected error (``suite``: a scenario failed); 2 bad input (one line on stderr,
no traceback); 3 the run finished but the scenario's checks failed (``suite --compare``: a regression); 4 a job
paused or failed (its place is kept: `harness resume JOB`); 5 the run did not complete (a part the harness
started died, or the run directory's disk filled: one line on stderr, what was recorded is kept).
"""

from __future__ import annotations

import argparse
import errno
import json
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.cli import gates as cli_gates
from harness.cli import open as cli_open
from harness.cli import telemetry as cli_telemetry
from harness.core.durations import DurationArg
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError

FS_REFUSALS = (errno.EROFS, errno.EACCES, errno.EPERM)  # a file-system refusal, not a bug: one line, exit 2

if TYPE_CHECKING:
    from harness.config.build import RunOptions
    from harness.jobs.pacing.journal import Journal


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line naming the problem and where the usage is, exit 2 (no usage block)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # "-5s" is a (negative) value, not an unknown option: no option of ours starts with a digit, so the
        # option's type says what is wrong with it ("must be positive") instead of "expected one argument"
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


_duration = DurationArg()  # every duration option: one type, one message ("must be positive")


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="harness", description="Load-test swamp-style sync layers on DynamoDB and S3.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run a load test (on embedded stand-ins on loopback unless an endpoint "
                       "is configured: dynalite for DynamoDB, SeaweedFS for S3)")
    r.add_argument("scenario", help="scenario name (see `harness scenarios`) or a .toml path")
    r.add_argument("--backend", choices=["dynamodb", "s3"], help="override the scenario's backend")
    r.add_argument("--workers", type=int, help="fleet size (Locust users)")
    r.add_argument("--spawn-rate", type=float, help="users started per second")
    r.add_argument("--duration", type=_duration, help="run time, e.g. 90s, 5m, 1h")
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
    r.add_argument("--seed-models", type=int, help="pre-age first (paced): this many models per namespace ...")
    r.add_argument("--seed-versions", type=int, default=10, help="... each run this many times ...")
    r.add_argument("--seed-orphans", type=int, default=0, help="... this many of them deleted, data left behind")
    r.add_argument("--seed-dir", metavar="DIR",
                   help="start the workers from the catalogs `harness seed` wrote (with --table: the seeded table)")
    r.add_argument("--s3-stand-in", choices=["seaweedfs", "moto"], help="embedded S3 stand-in when no endpoint is "
                   "set: seaweedfs (default; moto with --stand-in moto|moto-indexed), moto")
    r.add_argument("--stand-in", help="embedded stand-in when no endpoint is set: dynalite (default), "
                   "dynalite-memory, moto, moto-indexed, dynamodb-local (AWS's DynamoDB Local, on Java: "
                   "`bash .ci/install dynamodb-local`)")
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
    cli_open.add_arguments(r)
    cli_telemetry.add_arguments(r)
    cli_gates.add_run_arguments(r)
    d = r.add_argument_group("beyond one machine", "a Locust master for workers started elsewhere "
                             "(`harness worker`), and a web UI others can reach")
    d.add_argument("--master", action="store_true", help="run the Locust master only; workers join with "
                   "`harness worker --master-host HOST` (needs an endpoint every worker reaches, or --aws)")
    d.add_argument("--expect-workers", type=int, default=1, help="headless --master: start when N workers are in")
    d.add_argument("--expect-workers-max-wait", type=_duration, default=600.0, metavar="DURATION",
                   help="headless --master: give up if they are not all in by then (default 10m)")
    d.add_argument("--master-bind-host", default="*", help="interface the master listens on for workers (default *)")
    d.add_argument("--master-bind-port", type=int, default=5557, help="port the master listens on (default 5557)")
    d.add_argument("--web-host", default="127.0.0.1", help="interface of the web UI (default 127.0.0.1; any other "
                   "needs --web-login)")
    d.add_argument("--web-login", action="store_true", help="require a login: HARNESS_WEB_USERNAME (default "
                   "harness) and HARNESS_WEB_PASSWORD (12+ characters) from the environment")

    wk = sub.add_parser("worker", help="a Locust worker for `harness run --master` (scenario, backend and run "
                        "come from the master)")
    wk.add_argument("--master-host", default="127.0.0.1", help="host name or address of the master")
    wk.add_argument("--master-port", type=int, default=5557)
    wk.add_argument("--processes", type=int, default=1, help="worker processes in this container or machine")

    si = sub.add_parser("standin", help="serve the embedded stand-in (DynamoDB and S3) on HOST:PORT until stopped, "
                        "for workers on other machines")
    si.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    si.add_argument("--port", type=int, default=8000)

    rep = sub.add_parser("report", help="build the report of one or more run directories")
    rep.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    rep.add_argument("--out", help="output directory (default RUN_DIR/report; for several runs a comparison-* "
                                   "folder beside them when they share a folder, else under runs/)")
    rep.add_argument("--cloudwatch", action="store_true", help="first read what AWS measured for each run (its "
                     "table, GSIs or bucket, over its window) into RUN_DIR/cloudwatch.csv, where its plan.json says "
                     "CloudWatch is (AWS on an --aws run)")
    rep.add_argument("--prices", metavar="FILE", help="a TOML price table over the shipped one (harness/report/cost/"
                     "prices.toml: us-east-1, dated): the run's requests and units are priced with it")
    cli_gates.add_report_arguments(rep)

    fc = sub.add_parser("forecast", help="the rate forecast from what grows, at any horizon (the report's is at the "
                        "run's length x10): the step that grew, its count's growth, the fleet's rate there")
    fc.add_argument("run_dir", metavar="RUN_DIR")
    fc.add_argument("--at", default="10x", metavar="DURATION|Nit|Nx", help="where to look: a time from the load's "
                    "start (15m, 2h), the fleet's successful iterations (1900it) or the run's length times N (10x)")
    fc.add_argument("--json", action="store_true", help="print the forecast as summary.json's `forecast`")

    nb = sub.add_parser("notebook", help="open the review notebook in JupyterLab on 127.0.0.1 on these runs (default: "
                        "the latest under runs/); needs the notebook extra: `bash .ci/install notebook`")
    nb.add_argument("run_dirs", nargs="*", metavar="RUN_DIR")
    nb.add_argument("--port", type=int, default=8888, help="the server's port on 127.0.0.1 (default 8888)")
    nb.add_argument("--no-browser", action="store_true", help="print the notebook's URL only, open no browser")

    sub.add_parser("scenarios", help="list the scenarios")
    cli_gates.add_runs_parser(sub)

    su = sub.add_parser("suite", help="a benchmark suite (suites/NAME.toml): one sync operation per trial, per phase, "
                        "a fresh datastore per scenario and layout; --compare gates on another run (exit 3)")
    su.add_argument("suite", help="suite name (suites/NAME.toml, e.g. swamp-datastore) or a .toml path")
    su.add_argument("--backend", choices=["dynamodb", "s3"], help="default: the suite's (swamp-datastore: s3)")
    su.add_argument("--layout", help="only these index layouts, comma-separated (s3: monolith,sharded; dynamodb: "
                    "legacy,per-model; default both)")
    su.add_argument("--trials", type=int, help="measured trials per scenario and layout (default: the suite's, 5)")
    su.add_argument("--quick", action="store_true", help="the suite's quick shape and trials (swamp-datastore: 100 "
                    "files over 10 models, 2 trials), every scenario")
    su.add_argument("--scenarios", metavar="LIST", help="only these scenarios: numbers or exact names, comma-separated")
    su.add_argument("--run-dir", help="run directory (default runs/<run id>)")
    su.add_argument("--compare", metavar="OTHER_SUITE_JSON", help="compare every phase with another run's suite.json "
                    "(or its run directory); exit 3 when one is credibly slower by more than --threshold")
    su.add_argument("--threshold", type=float, default=10.0, help="percent a phase must be credibly slower by to "
                    "fail --compare (default 10)")
    su.add_argument("--min-ms", type=float, default=1.0, help="--compare flags no phase whose median moved by less "
                    "(default 1 ms)")
    su.add_argument("--latency", help="latency profile added to every request: local, aws-dynamodb, aws-s3-vpce, aws, "
                    "or a .toml file")
    su.add_argument("--stand-in", help="embedded DynamoDB stand-in when no endpoint is set (default dynalite; "
                    "dynalite-memory, moto, moto-indexed, dynamodb-local)")
    su.add_argument("--s3-stand-in", choices=["seaweedfs", "moto"], help="embedded S3 stand-in (default seaweedfs)")

    st = sub.add_parser("story", help="run a ladder of chapters (the seed's climb by default) and write one "
                        "narrated report")
    st.add_argument("ladder", nargs="?", default="migrating-bottleneck", metavar="LADDER",
                    help="a ladder from stories/ (see --list) or a .toml path (default migrating-bottleneck)")
    st.add_argument("--backend", choices=["dynamodb", "s3"],
                    help="run every single-backend chapter on this backend (a chapter of both keeps both)")
    st.add_argument("--quick", action="store_true", help="each run's quick settings (shorter; see the ladder)")
    st.add_argument("--strict", action="store_true", help="exit 3 when a chapter did not show what it expected")
    st.add_argument("--run-dir", help="the story directory (default runs/story-<ladder>-<time>)")
    st.add_argument("--list", action="store_true", help="list the shipped ladders and their chapters")

    sw = sub.add_parser("sweep", help="one run per fleet size (and trial), each on a fresh table or bucket, and the "
                        "Universal Scalability Law fitted to their rates: contention, coherency, the peak")
    sw.add_argument("scenario", help="scenario name (see `harness scenarios`) or a .toml path")
    sw.add_argument("--workers", metavar="LIST", help="fleet sizes, comma-separated (default 1,2,4,8,16; --quick 1,2)")
    sw.add_argument("--duration", type=_duration, help="each run's time, e.g. 60s (default the scenario's; --quick 8s)")
    sw.add_argument("--backend", choices=["dynamodb", "s3"], help="override the scenario's backend")
    sw.add_argument("--processes", default="0", metavar="auto|N", help="Locust worker processes per run: N, or auto "
                    "(one more per 50 workers, up to the cores; default 0: one process)")
    sw.add_argument("--trials", type=int, default=1, help="runs per fleet size (default 1)")
    sw.add_argument("--quick", action="store_true", help="sizes 1,2 and 8 s runs unless given (CI: about a minute)")
    sw.add_argument("--run-dir", help="the sweep directory (default runs/sweep-<scenario>-<time>)")

    ck = sub.add_parser("check", help="check a run's history against its final remote state (exit 3 on a violation)")
    ck.add_argument("run_dir", metavar="RUN_DIR")
    ck.add_argument("--live", action="store_true",
                    help="read the state from the run's table/bucket now, at the endpoint its plan.json records")
    ck.add_argument("--aws", action="store_true", help="with --live: the run's table/bucket are on AWS itself")

    ex = sub.add_parser("explore", help="every request boundary of the datastore's operations, disturbed one at a "
                                        "time (freeze, lost answer, crash, GSI lag), each history checked (exit 3 "
                                        "when a schedule violates)")
    ex.add_argument("--backend", choices=["dynamodb", "s3"], help="one backend (default both)")
    ex.add_argument("--sync", choices=["one-lock", "two-phase"], help="one sync profile (default both)")
    ex.add_argument("--layout", help="one layout: per-model or legacy (DynamoDB), sharded or monolith (S3); "
                                     "default every layout")
    ex.add_argument("--fencing", choices=["on", "off"], default="on", help="off: swamp's own commit (default on)")
    ex.add_argument("--ops", help="comma-separated: sync, model-run, delete, prune, pull (default all)")
    ex.add_argument("--quick", action="store_true",
                    help="the default layout only, fewer of the other actor's operations (CI: minutes)")
    ex.add_argument("--run-dir", help="where explore.json and its page go (default runs/explore-<time>)")
    ex.add_argument("--random", type=int, metavar="N",
                    help="draw N random schedules of three actors instead (every operation, several disturbances "
                         "each; Hypothesis shrinks a violating one), split over the targets")
    ex.add_argument("--seed", type=int, help="--random's seed (default a new one, printed): the same schedules "
                                             "again on the same Hypothesis version")
    ex.add_argument("--budget", metavar="DURATION", help="stop after this wall time (e.g. 90s, 10m)")
    ex.add_argument("--uploads-at-commit", choices=["profile", "on", "off", "random"], default="profile",
                    help="where content is written: as the profile says (default), under the commit's lock (on), "
                         "in the push's prepare (off), or random: drawn for each schedule (--random only)")
    ex.add_argument("--s3-shards", choices=["model", "swamp", "random"], default="model",
                    help="S3's shard form: one a model (default), swamp's keys, or random: drawn for each schedule "
                         "(--random only)")
    ex.add_argument("--replay", metavar="EXPLORE_JSON", help="play the schedules an explore.json of --random stored "
                                                             "again (no Hypothesis needed), in the explorer's words")
    ex.add_argument("--schedule", type=int, metavar="K", help="with --replay: its K-th stored schedule only")

    journal_help = "the job journal (default runs/jobs/jobs.db, or $HARNESS_JOBS_DIR/jobs.db)"
    sd = sub.add_parser("seed", help="pre-age a datastore (paced): N models x M versions per namespace, K orphaned")
    sd.add_argument("scenario")
    sd.add_argument("--models", type=int, required=True)
    sd.add_argument("--versions", type=int, required=True)
    sd.add_argument("--orphans", type=int, default=0)
    sd.add_argument("--workers", type=int,
                    help="the run's fleet size, whose namespaces are seeded (default the scenario's)")
    sd.add_argument("--table", required=True, help="DynamoDB table to seed (created, tagged, if missing)")
    sd.add_argument("--state-dir", help="where the workers' catalogs and local views go (default runs/seeds/TABLE)")
    sd.add_argument("--journal", help=journal_help)
    sd.add_argument("--aws", action="store_true", help="target AWS itself through the credential chain")
    sd.add_argument("--layout", help="write swamp's own layout for the real swamp to read, as this extension "
                    "version lays it out: swamp-dynamodb@a929b7a or swamp-dynamodb@bc36088a (the legacy FILE key)")

    fl = sub.add_parser("fill", help="background / noisy-neighbour load: N items written once each, paced")
    fl.add_argument("table")
    fl.add_argument("--items", type=int, required=True)
    fl.add_argument("--item-bytes", type=int, default=1000)
    fl.add_argument("--scenario", help="use this scenario's fidelity layer (throttling model, latency)")
    fl.add_argument("--journal", help=journal_help)
    fl.add_argument("--aws", action="store_true", help="target AWS itself through the credential chain")

    cl = sub.add_parser("cleanup", help="delete a run's items (paced) at the endpoint its plan.json records, or an S3 "
                        "run's objects and (if the harness made it) bucket; --drop-table removes the table after")
    cl.add_argument("target", metavar="RUN_DIR_OR_TABLE")
    cl.add_argument("--prefix", default="", help="only items whose partition key starts with this")
    cl.add_argument("--drop-table", action="store_true", help="then delete the table (only one the harness created)")
    cl.add_argument("--allow-foreign-resources", action="store_true")
    cl.add_argument("--journal", help=journal_help)
    cl.add_argument("--aws", action="store_true", help="target AWS itself through the credential chain")

    jb = sub.add_parser("jobs", help="list jobs: state, progress, N of M WCU/s")
    jb.add_argument("--journal", help=journal_help)
    rs = sub.add_parser("resume", help="resume a paused or interrupted job (checks it is the same table first)")
    rs.add_argument("job")
    rs.add_argument("--journal", help=journal_help)
    rs.add_argument("--aws", action="store_true", help="target AWS itself through the credential chain")
    return p


def _cmd_scenarios(env: UserEnvironment) -> int:
    from harness.config import scenario as scenarios

    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    found = scenarios.available(extra)
    width = max((len(n) for n in found), default=0)
    for name, path in found.items():
        sc = scenarios.load(str(path))
        print(f"{name:{width}s}  {sc.description}")
    return 0


def _check_seed_dir(args: argparse.Namespace) -> None:
    """A seeded table without the workers' seeded catalogs (or the reverse) would misrepresent the run."""
    if not args.seed_dir:
        return
    if args.seed_models:
        raise HarnessError("--seed-dir starts from an earlier seed and --seed-models seeds now: give one of them")
    if not args.table:
        raise HarnessError("--seed-dir needs --table, the table `harness seed` filled for these catalogs")
    if not Path(args.seed_dir).is_dir() or not any(Path(args.seed_dir).glob("*.catalog.sqlite")):
        raise HarnessError(f"--seed-dir {args.seed_dir}: no seeded catalogs there (`harness seed ... --state-dir` "
                           "writes them; the default is runs/seeds/TABLE)")


def run_options(args: argparse.Namespace) -> RunOptions:
    """``harness run``'s arguments as the options its plan is built from."""
    from harness.config.build import RunOptions
    from harness.config.plan import PreAge

    opened = cli_open.options(args)
    opened["checks"].update(cli_gates.checks(args))  # --check, --abort-check, --undecided beside the limits
    return RunOptions(
        scenario=args.scenario, backend=args.backend, workers=args.workers, duration_s=args.duration,
        spawn_rate=args.spawn_rate, processes=args.processes, run_dir=args.run_dir, web=args.web,
        web_port=args.web_port, report=not args.no_report, aws=args.aws, table=args.table, bucket=args.bucket,
        allow_foreign=args.allow_foreign_resources, cleanup=args.cleanup, latency=args.latency,
        preage=PreAge(args.seed_models, args.seed_versions, args.seed_orphans) if args.seed_models else None,
        seed_dir=args.seed_dir, stand_in=args.stand_in, s3_stand_in=args.s3_stand_in,
        web_host=args.web_host, web_login=args.web_login, master=args.master, expect_workers=args.expect_workers,
        expect_workers_max_wait_s=args.expect_workers_max_wait, master_bind_host=args.master_bind_host,
        master_bind_port=args.master_bind_port, driver=args.driver,
        swamp=args.swamp, swamp_repo=args.swamp_repo, front=args.front, **opened, **cli_telemetry.options(args))


def _cmd_run(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import PASSWORD_ENV, plan_run
    from harness.core.environment import secret
    from harness.supervisor import gates
    from harness.supervisor.run import EXIT_CHECKS_FAILED, EXIT_DID_NOT_COMPLETE, run

    _check_seed_dir(args)
    if cli_open.climbs(args):  # --rate LO..HI: a closed run, then a run per rate
        from harness.products.climb.command import climb

        if args.baseline:
            raise HarnessError("--baseline compares one run: a climb (--rate LO..HI) makes several")
        return climb(run_options(args), env, args.rate, args.steps)
    plan = plan_run(run_options(args), env, password=secret(PASSWORD_ENV) if args.web_login else "")
    gates.refuse_baseline(args, plan)  # another scenario, backend, fleet size or latency: before anything starts
    res = run(plan)
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
        return EXIT_DID_NOT_COMPLETE
    for line in res.failed_checks:
        print(f"harness: check failed: {line}", file=sys.stderr)
    for line in gates.regressed(compared):
        print(f"harness: regression against the baseline: {line}", file=sys.stderr)
    if res.signal:
        return 128 + int(getattr(signal, res.signal))
    return EXIT_CHECKS_FAILED if res.failed_checks or gates.regressed(compared) else 0


def _cmd_story(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.story.command import StoryOptions, cmd_list, cmd_story

    if args.list:
        return cmd_list()
    return cmd_story(StoryOptions(ladder=args.ladder, backend=args.backend, quick=args.quick, strict=args.strict,
                                  run_dir=args.run_dir), env)


def _cmd_sweep(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.sweep.command import SweepOptions, cmd_sweep

    return cmd_sweep(SweepOptions(scenario=args.scenario, workers=args.workers, duration_s=args.duration,
                                  backend=args.backend, processes=args.processes, trials=args.trials,
                                  quick=args.quick, run_dir=args.run_dir), env)


def _cmd_report(args: argparse.Namespace) -> int:
    from harness.products.story import story
    from harness.products.suite.suite import RUN_JSON as SUITE_RUN_JSON
    from harness.record.runinfo import expand_runs, is_session
    from harness.report.run.build import build_report

    if (args.baseline or args.junit) and any(story.is_story(d) or (Path(d) / SUITE_RUN_JSON).is_file()
                                             or (Path(d) / "sweep.json").is_file() for d in args.run_dirs):
        raise HarnessError("--baseline and --junit take a run directory, not a story's, sweep's or suite's "
                           "(`harness suite NAME --compare OTHER_SUITE_JSON` compares suites)")
    suites = [d for d in args.run_dirs if (Path(d) / SUITE_RUN_JSON).is_file()]
    if suites:  # a `harness suite` run: its table, page and suite.json, rebuilt from its files
        if len(suites) != len(args.run_dirs):
            raise HarnessError("a suite run directory is reported alone (compare two suites with "
                               "`harness suite NAME --compare OTHER_SUITE_JSON`)")
        from harness.products.suite.page import build

        for d in suites:
            build(d)
            print(f"harness: suite report {Path(d) / 'suite.html'}")
        return 0

    if len(args.run_dirs) == 1 and story.is_story(args.run_dirs[0]):  # a story: every chapter judged again
        out = story.build(args.run_dirs[0], args.out)
        print(f"harness: story {out / 'index.html'}")
        return 0

    from harness.products.sweep import sweep

    if len(args.run_dirs) == 1 and sweep.is_sweep(args.run_dirs[0]):  # a sweep: every size's run and the fit
        out = sweep.build(args.run_dirs[0], args.out)
        print(f"harness: sweep {out / 'index.html'}")
        return 0

    sessions = [d for d in args.run_dirs if is_session(d)]  # a web session: each of its tests is a run
    out_dir = args.out or (f"{sessions[0]}/report" if len(args.run_dirs) == 1 and sessions else None)
    run_dirs = expand_runs(args.run_dirs)
    if not run_dirs:
        raise HarnessError(f"{args.run_dirs[0]} is a web session with no test yet: start a test in its web UI")
    if args.cloudwatch:  # what AWS measured, read now; a run without it is a one-line error
        from harness.telemetry.cloudwatch.after_run import for_report

        for d in run_dirs:
            for_report(d)
    from harness.supervisor import gates

    compared, code = gates.report_gates(args, [Path(d) for d in run_dirs])
    from harness.report.cost.cost import load as load_prices

    prices = load_prices(args.prices)  # a bad --prices file: one line, before anything is built
    out = build_report(run_dirs, out_dir, baseline=next(iter(compared.values()), None), prices=prices)
    print(f"harness: report {out / 'index.html'}")
    if args.junit:
        gates.report_junit(args.junit, json.loads((out / "summary.json").read_text()), compared)
    return code


def _cmd_suite(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.products.suite.command import SuiteOptions, run_suite

    return run_suite(SuiteOptions(
        suite=args.suite, backend=args.backend, layouts=args.layout, trials=args.trials, quick=args.quick,
        scenarios=args.scenarios, run_dir=args.run_dir, compare=args.compare, threshold=args.threshold,
        min_ms=args.min_ms, latency=args.latency, stand_in=args.stand_in, s3_stand_in=args.s3_stand_in), env)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the command whose options these are not, so its --help is the one to read
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _journal(args: argparse.Namespace, env: UserEnvironment) -> Journal:
    from harness.jobs.pacing.journal import Journal, default_path

    return Journal(args.journal or default_path(env.jobs_dir))


def _jobs(args: argparse.Namespace, env: UserEnvironment) -> int:
    """The bulk jobs: each on the DynamoDB endpoint the user named (or AWS with --aws), journaled."""
    from harness.config.build import job_connection
    from harness.jobs import bulk as commands

    aws = getattr(args, "aws", False)
    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    if args.command == "jobs":
        return commands.cmd_jobs(_journal(args, env))
    if args.command == "seed":
        return commands.cmd_seed(job_connection(env, aws=aws), args.scenario, args.models, args.versions,
                                 args.orphans, args.workers, args.table, args.state_dir, _journal(args, env), extra,
                                 layout=args.layout)
    if args.command == "fill":
        return commands.cmd_fill(job_connection(env, aws=aws), args.table, args.items, args.item_bytes,
                                 _journal(args, env), args.scenario, extra)
    if args.command == "cleanup":
        plan = commands.cleanup_target(args.target, lambda: job_connection(env, aws=aws), aws)
        return commands.cmd_cleanup(plan, args.prefix, args.drop_table, args.allow_foreign_resources,
                                    _journal(args, env))
    return commands.cmd_resume(job_connection(env, aws=aws), args.job, _journal(args, env), extra)


def _refused_by_the_file_system(e: OSError) -> str:
    """A write the file system refused, as one line; any other OSError is a bug and goes on up (a traceback)."""
    if e.errno not in FS_REFUSALS or not e.filename:
        raise e
    return f"cannot write {e.filename}: {e.strerror}"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        env = UserEnvironment.read()  # the user's environment, read once, here
        if args.command == "scenarios":
            return _cmd_scenarios(env)
        if args.command == "run":
            return _cmd_run(args, env)
        if args.command == "story":
            return _cmd_story(args, env)
        if args.command == "sweep":
            return _cmd_sweep(args, env)
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "forecast":
            from harness.cli.forecast import cmd_forecast

            return cmd_forecast(args.run_dir, args.at, args.json)
        if args.command == "runs":
            from harness.products.runs.command import cmd_runs

            return cmd_runs(args)
        if args.command == "notebook":
            from harness.products.notebook.command import cmd_notebook

            return cmd_notebook(args.run_dirs, args.port, not args.no_browser)
        if args.command == "suite":
            return _cmd_suite(args, env)
        if args.command == "check":
            from harness.cli.check import cmd_check

            return cmd_check(args.run_dir, args.live, args.aws)
        if args.command == "explore":
            from harness.products.explore import command as ex_cmd

            if args.replay is not None or args.schedule is not None:
                if args.replay is None:
                    raise HarnessError("--schedule picks a schedule of --replay's file: give --replay EXPLORE_JSON")
                return ex_cmd.cmd_explore_replay(args.replay, args.schedule)
            if args.random is not None:
                return ex_cmd.cmd_explore_random(args.backend, args.sync, args.layout, args.fencing, args.random,
                                                 args.seed, args.budget, args.run_dir, quick=args.quick, ops=args.ops,
                                                 uploads=args.uploads_at_commit, shards=args.s3_shards)
            if args.seed is not None:
                raise HarnessError("--seed is --random's: add --random N")
            return ex_cmd.cmd_explore(args.backend, args.sync, args.layout, args.fencing, args.ops, args.quick,
                                      args.run_dir, args.budget, uploads=args.uploads_at_commit,
                                      shards=args.s3_shards)
        if args.command == "worker":
            from harness.supervisor.distributed import exec_worker

            return exec_worker(args.master_host, args.master_port, args.processes)
        if args.command == "standin":
            from harness.supervisor.distributed import serve_standin

            return serve_standin(args.host, args.port)
        return _jobs(args, env)
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the file system refused a write (read-only, immutable, no permission): the user's to fix
        print(f"harness: {_refused_by_the_file_system(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"harness: interrupted ({getattr(e, 'name', 'SIGINT')})", file=sys.stderr)
        return 128 + int(getattr(e, "signum", signal.SIGINT))
