"""``harness jobs pre-age|fill|cleanup|list|resume``: the harness's own bulk jobs, grouped, each journaled and
paced on the DynamoDB endpoint the user named (or AWS with ``--aws``); ``harness.jobs.bulk`` does the work.

"pre-age" is the one verb for writing a datastore's history before a run (the old ``harness seed``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from harness.cli.parser import old_option
from harness.core.environment import UserEnvironment

if TYPE_CHECKING:
    from harness.jobs.pacing.journal import Journal

JOURNAL_HELP = "the job journal (default runs/jobs/jobs.db, or $HARNESS_JOBS_DIR/jobs.db)"
AWS_HELP = "target AWS itself through the credential chain"
VERBS = ("pre-age", "fill", "cleanup", "list", "resume")


def add_parser(sub: Any) -> None:
    jb = sub.add_parser("jobs", help="the bulk jobs, paced and journaled: pre-age, fill, cleanup, list, resume")
    verbs = jb.add_subparsers(dest="job_command", required=True, metavar="JOB_COMMAND")
    _add_pre_age(verbs)
    _add_fill(verbs)
    _add_cleanup(verbs)
    ls = verbs.add_parser("list", help="list jobs: state, progress, N of M WCU/s")
    _add_journal(ls, aws=False)
    ls.set_defaults(run=run_list)
    rs = verbs.add_parser("resume", help="resume a paused or interrupted job (checks it is the same table first)")
    rs.add_argument("job", help="the job's id (see `harness jobs list`)")
    _add_journal(rs, aws=True)
    rs.set_defaults(run=run_resume)


def _add_journal(p: Any, *, aws: bool) -> None:
    """The options every job command shares: its journal, and (each but ``list``, which only reads the journal)
    whether it targets AWS itself."""
    p.add_argument("--journal", help=JOURNAL_HELP)
    if aws:
        p.add_argument("--aws", action="store_true", help=AWS_HELP)


def _add_pre_age(verbs: Any) -> None:
    pa = verbs.add_parser("pre-age", help="pre-age a datastore (paced): N models x M versions per namespace, K "
                          "orphaned")
    pa.add_argument("scenario", help="the scenario whose namespaces and items are written")
    pa.add_argument("--models", type=int, required=True, help="models per namespace")
    pa.add_argument("--versions", type=int, required=True, help="versions of each model (each a run of it)")
    pa.add_argument("--orphans", type=int, default=0, help="models deleted with their data left behind (default 0)")
    pa.add_argument("-u", "--users", type=int, help="the run's fleet size in Locust users, whose namespaces are "
                    "pre-aged (default the scenario's)")
    old_option(pa, "--workers", "--users (-u)")
    pa.add_argument("--table", help="DynamoDB table to pre-age (created, tagged, if missing); required but with an "
                    "S3 --layout")
    pa.add_argument("--state-dir", help="where the workers' catalogs and local views go (default runs/seeds/TABLE)")
    _add_journal(pa, aws=True)
    pa.add_argument("--layout", help="write swamp's own layout for the real swamp to read, as this extension "
                    "version lays it out: swamp-dynamodb@a929b7a, swamp-dynamodb@bc36088a (the legacy FILE key) or "
                    "swamp-s3@c25ec91 (objects and index in --bucket)")
    pa.add_argument("--bucket", help="with --layout swamp-s3@...: the S3 bucket to pre-age (created, tagged, if "
                    "missing), on the S3 endpoint a variable names or AWS with --aws")
    pa.add_argument("--prefix", default="", help="with --layout swamp-s3@...: the key prefix within the bucket (the "
                    "extension's prefix config; default none)")
    pa.set_defaults(run=run_pre_age)


def _add_fill(verbs: Any) -> None:
    fl = verbs.add_parser("fill", help="background / noisy-neighbour load: N items written once each, paced")
    fl.add_argument("table", help="the DynamoDB table to write into")
    fl.add_argument("--items", type=int, required=True, help="items to write, each once")
    fl.add_argument("--item-bytes", type=int, default=1000, help="each item's size in bytes (default 1000)")
    fl.add_argument("--scenario", help="use this scenario's fidelity layer (throttling model, latency)")
    _add_journal(fl, aws=True)
    fl.set_defaults(run=run_fill)


def _add_cleanup(verbs: Any) -> None:
    cl = verbs.add_parser("cleanup", help="delete a run's items (paced) at the endpoint its plan.json records, or an "
                          "S3 run's objects and (if the harness made it) bucket; --drop-table removes the table after")
    cl.add_argument("target", metavar="RUN_DIR_OR_TABLE", help="a run directory (its plan.json) or a table's name")
    cl.add_argument("--prefix", default="", help="only items whose partition key starts with this")
    cl.add_argument("--drop-table", action="store_true", help="then delete the table (only one the harness created)")
    cl.add_argument("--allow-foreign-resources", action="store_true",
                    help="clean a table/bucket the harness did not create")
    _add_journal(cl, aws=True)
    cl.set_defaults(run=run_cleanup)


def _journal(args: argparse.Namespace, env: UserEnvironment) -> Journal:
    from harness.jobs.pacing.journal import Journal, default_path

    return Journal(args.journal or default_path(env.jobs_dir))


def _extra(env: UserEnvironment) -> tuple[str, ...]:
    return (env.scenarios_dir,) if env.scenarios_dir else ()


def run_list(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.jobs import bulk

    return bulk.cmd_jobs(_journal(args, env))


def _s3_layout(layout: str | None) -> bool:
    from harness.jobs.pacing.swamp_layout import layout_named

    return bool(layout) and layout_named(layout or "").backend == "s3"


def _s3_connection(env: UserEnvironment, aws: bool) -> Any:
    """An S3 layout job's endpoint: one that outlives it (a variable, or --aws), never a stand-in."""
    from harness.config.build import resolve_connection
    from harness.core.errors import HarnessError

    connection = resolve_connection(env, aws=aws, needed=["s3"])
    if connection.stand_in_services:
        raise HarnessError("jobs need an endpoint that outlives them: set AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL: "
                           "SeaweedFS, a moto server, ...) or pass --aws")
    return connection


def run_pre_age(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import job_connection
    from harness.core.errors import HarnessError
    from harness.jobs import bulk

    if _s3_layout(args.layout):
        if args.table:
            raise HarnessError(f"--layout {args.layout} writes a bucket: give --bucket (and --prefix), not --table")
        return bulk.cmd_seed(_s3_connection(env, args.aws), args.scenario, args.models, args.versions, args.orphans,
                             args.users, "", None, _journal(args, env), _extra(env), layout=args.layout,
                             bucket=args.bucket, prefix=args.prefix)
    if not args.table:
        raise HarnessError("harness jobs pre-age needs --table (the DynamoDB table to pre-age)")
    if args.bucket or args.prefix:
        raise HarnessError("--bucket and --prefix go with an S3 --layout (swamp-s3@...)")
    return bulk.cmd_seed(job_connection(env, aws=args.aws), args.scenario, args.models, args.versions, args.orphans,
                         args.users, args.table, args.state_dir, _journal(args, env), _extra(env),
                         layout=args.layout)


def run_fill(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import job_connection
    from harness.jobs import bulk

    return bulk.cmd_fill(job_connection(env, aws=args.aws), args.table, args.items, args.item_bytes,
                         _journal(args, env), args.scenario, _extra(env))


def run_cleanup(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import job_connection
    from harness.jobs import bulk

    plan = bulk.cleanup_target(args.target, lambda: job_connection(env, aws=args.aws), args.aws)
    return bulk.cmd_cleanup(plan, args.prefix, args.drop_table, args.allow_foreign_resources, _journal(args, env))


def run_resume(args: argparse.Namespace, env: UserEnvironment) -> int:
    from harness.config.build import job_connection
    from harness.jobs import bulk

    journal = _journal(args, env)
    row = journal.get(args.job)
    if row is not None and _s3_layout(row.params.get("layout")):
        return bulk.cmd_resume_s3_layout(_s3_connection(env, args.aws), args.job, journal, _extra(env))
    return bulk.cmd_resume(job_connection(env, aws=args.aws), args.job, journal, _extra(env))
