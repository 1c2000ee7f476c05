"""The job commands: ``harness jobs pre-age``, ``fill``, ``cleanup``, ``jobs``, ``resume``.

Long jobs print their estimate first (items, write units, time at the ceiling),
then a progress line every couple of seconds with the current rate, the
ceiling and a time estimate. Ctrl-C pauses the job (in-flight items finish and
are journaled) and ``harness jobs resume JOB`` continues it.

Each job builds from a plan: a run's own (pre-ageing and the noisy neighbour
of ``harness run``; ``harness jobs cleanup RUN_DIR`` reads the run's ``plan.json``),
or one made of the job's table, scenario and the DynamoDB endpoint the user
named (``job_plan``). Jobs need an endpoint that outlives them: never the
embedded stand-in, and AWS only with ``--aws``.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.aws.clients import Clients
from harness.config import scenario as scenarios
from harness.config.endpoints import UNUSED, ServiceEndpoint
from harness.config.factory import OWNER_TAG, Factory, empty_bucket, owner_tags
from harness.config.plan import Connection, LocustPlan, Resources, RunPlan
from harness.config.preflight import check_reachable
from harness.config.recorded import recorded_plan, usable_connection
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.datastore.backends.s3 import S3Backend
from harness.jobs.pacing import jobs
from harness.jobs.pacing.ceiling import ceiling
from harness.jobs.pacing.engine import Job, Progress
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.sources import CleanupSource, FillSource, PreAgeSource, snapshot_keys
from harness.jobs.pacing.swamp_layout import SwampLayoutSource, layout_named
from harness.jobs.pacing.swamp_s3_layout import S3Target, SwampS3LayoutSource, estimate_line, run_layout_job

PROGRESS_EVERY_S = 2.0
NO_FIDELITY = scenarios.Scenario(name="job", fidelity=scenarios.FidelitySpec(mode="off"))


def job_plan(connection: Connection, table: str, sc: scenarios.Scenario | None = None,
             run_id: str = "job") -> RunPlan:
    """A job's plan: its table, its scenario (for the fidelity layer; none: no layer) and its endpoint."""
    return RunPlan(run_id=run_id, run_dir="", scenario=sc or NO_FIDELITY, connection=connection,
                   resources=Resources(table=table, bucket="unused"), locust=LocustPlan(0, 0.0, None))


def paced_clients(factory: Factory, fidelity: bool = True) -> Clients:
    """Clients for a job: no botocore retries (the engine retries, paced), and the plan's fidelity layer.

    A job models the whole table's capacity, and the load's ``--latency`` is not the job's. A cleanup runs
    without the layer (it deletes what is there, at the real table's pace).
    """
    clients = factory.clients(total_attempts=1)
    if fidelity:
        Factory(replace(factory.plan, latency=None, test=None), sessions=factory.sessions).fidelity(clients, 1.0)
    return clients


def job_clients(connection: Connection, sc: scenarios.Scenario | None = None) -> Clients:
    """A job's clients on the DynamoDB endpoint the user named, checked reachable first."""
    factory = Factory(job_plan(connection, "", sc))
    check_reachable(connection, "dynamodb", factory.sessions)
    return paced_clients(factory)


class Console:
    """Progress lines (rate, ceiling, ETA), and Ctrl-C as a pause."""

    def __init__(self, quiet: bool = False, unit: str = "WCU/s") -> None:
        self.quiet, self.started, self.last, self.unit = quiet, time.monotonic(), 0.0, unit
        self.job: Job | None = None

    def on_start(self, job: Job) -> None:
        self.job = job
        signal.signal(signal.SIGINT, lambda *_: job.request_pause("Paused: interrupted (Ctrl-C)"))

    def on_progress(self, p: Progress) -> None:
        now = time.monotonic()
        if not self.quiet and (now - self.last >= PROGRESS_EVERY_S or p.state != "running"):
            self.last = now
            print(jobs.progress_line(p, self.started, self.unit), flush=True)


def _run(job_id: str, kind: str, params: dict, source: Any, clients: Clients, journal: Journal,
         finish: Callable[[], None] | None = None, quiet: bool = False) -> int:
    table = jobs.describe(clients, params["table"])
    est = jobs.estimate(source, table)
    if not quiet:
        print(f"harness: job {job_id}: {est.line()}", flush=True)
    console = Console(quiet)
    state = jobs.run_job(job_id, kind, params, source, clients, journal, on_progress=console.on_progress,
                         on_start=console.on_start)
    if state == "done" and finish:
        finish()
    row = journal.get(job_id)
    print(f"harness: job {job_id} {state}{': ' + row.reason if row and row.reason else ''}"
          + ("" if state == "done" else f" (resume with `harness jobs resume {job_id}`)"))
    return ExitCode.OK if state == "done" else ExitCode.JOB_STOPPED


def cmd_fill(connection: Connection, table: str, items: int, item_bytes: int, journal: Journal,
             scenario: str | None, scenario_dirs: tuple[str, ...] = ()) -> int:
    if items < 1 or not 1 <= item_bytes <= 390_000:
        raise HarnessError("--items must be at least 1 and --item-bytes between 1 and 390000")
    clients = job_clients(connection, scenarios.load(scenario, scenario_dirs) if scenario else None)
    params = {"table": table, "items": items, "item_bytes": item_bytes, "scenario": scenario}
    source = FillSource(clients.dynamodb, table, items, item_bytes)
    return _run(jobs.new_job_id("fill"), "fill", params, source, clients, journal)


def preage_factory(params: dict, clients: Clients,
                   sc: scenarios.Scenario | None = None) -> PreAgeSource | SwampLayoutSource | SwampS3LayoutSource:
    """The pre-ageing job's items from its parameters (a resumed job rebuilds exactly the same).

    ``sc`` is the scenario the command already has (its plan's); ``harness jobs resume``, another command, reads
    the file its parameters name. A ``layout`` parameter writes swamp's own layout instead of the model's.
    """
    if params.get("layout") and layout_named(params["layout"]).backend == "s3":
        return SwampS3LayoutSource(clients.s3, S3Target(params["bucket"], params["prefix"]), params["models"],
                                   params["versions"], params["epoch"])
    if params.get("layout"):
        return SwampLayoutSource(clients.dynamodb, params["table"], layout_named(params["layout"]),
                                 params["models"], params["versions"], params["epoch"])
    sc = (sc or scenarios.load(params["scenario"])).with_overrides(backend="dynamodb")
    connection = Connection(ServiceEndpoint(clients.endpoints.dynamodb, clients.endpoints.kind, "job"),
                            ServiceEndpoint(None, UNUSED, "none"))
    backend = Factory(job_plan(connection, params["table"], sc, params.get("run_id", "seed"))).backend(clients)
    return PreAgeSource(backend, [n or None for n in params["namespaces"]], params["models"], params["versions"],
                        params["orphans"], params["state_dir"], params["epoch"])


def preage_namespaces(sc: scenarios.Scenario, workers: int, processes: int = 0) -> list[str]:
    """The namespaces a run's workers will use (``DatastoreSpec.namespace_of`` of each user), or the shared one."""
    if sc.datastore.namespaces == "shared":
        return [""]
    per = -(-workers // processes) if processes else workers
    names = (sc.datastore.namespace_of(p, i) or "" for p in range(processes or 1) for i in range(per))
    return list(dict.fromkeys(names))


def preage_params(sc: scenarios.Scenario, table: str, models: int, versions: int, orphans: int, workers: int,
                  state_dir: str | Path, processes: int = 0) -> dict:
    if models < 1 or versions < 1 or not 0 <= orphans <= models:
        raise HarnessError("--models and --versions must be at least 1, and --orphans between 0 and --models")
    return {"scenario": sc.source or sc.name, "table": table, "models": models, "versions": versions,
            "orphans": orphans, "namespaces": preage_namespaces(sc, workers, processes),
            "state_dir": str(Path(state_dir).resolve()), "epoch": round(time.time(), 3)}


def cmd_seed(connection: Connection, scenario: str, models: int, versions: int, orphans: int, workers: int | None,
             table: str, state_dir: str | None, journal: Journal, scenario_dirs: tuple[str, ...] = (),
             layout: str | None = None, bucket: str | None = None, prefix: str = "") -> int:
    """``harness jobs pre-age``: pre-age a table on a persistent endpoint, then say which ``harness run`` starts
    there.

    With ``layout`` (``swamp-dynamodb@<version>``) the table is written as that extension version lays it out,
    for the real swamp to read (``swamp_layout``); the scenario then gives only the backend and the fidelity.
    ``swamp-s3@<version>`` writes ``bucket`` (under ``prefix``) instead (``swamp_s3_layout``).
    """
    sc = scenarios.load(scenario, scenario_dirs)
    if layout and layout_named(layout).backend == "s3":
        return _seed_swamp_s3_layout(connection, sc, layout, models, versions, orphans, bucket or "", prefix, journal)
    if layout:
        return _seed_swamp_layout(connection, sc, layout_named(layout).name, models, versions, orphans, table,
                                  journal)
    if sc.backend != "dynamodb":
        raise HarnessError("seeding writes DynamoDB items: use a scenario on the dynamodb backend")
    if sc.datastore.swamp_own:
        raise HarnessError("seeding writes the harness's fenced items, which a run that is swamp's own (fencing = "
                           "false with bookkeeping = \"swamp\") does not read: seed a copy with fencing = true")
    factory = Factory(job_plan(connection, table, sc, "seed"))
    check_reachable(connection, "dynamodb", factory.sessions)
    clients = paced_clients(factory)
    factory.provision(clients, factory.backend(clients))
    state_dir = state_dir or str(Path("runs") / "seeds" / table)
    params = preage_params(sc, table, models, versions, orphans, workers or sc.fleet.workers, state_dir)
    source = preage_factory(params, clients, sc)
    print(f"harness: seeding {source.files():,} files in {len(params['namespaces'])} namespace(s); "
          f"then `harness run {scenario} --table {table} --pre-age-dir {state_dir}`")
    return _run(jobs.new_job_id("seed"), "seed", params, source, clients, journal, source.finish)


def _seed_swamp_layout(connection: Connection, sc: scenarios.Scenario, layout: str, models: int, versions: int,
                       orphans: int, table: str, journal: Journal) -> int:
    """``harness jobs pre-age --layout``: swamp's own items, no namespace (swamp 06b6147 pushed none with one), and no
    orphans (swamp's delete leaves a model's files live: an orphan's items are a live model's)."""
    if sc.backend != "dynamodb":
        raise HarnessError(f"--layout {layout} writes DynamoDB items: use a scenario on the dynamodb backend")
    _check_layout_counts(models, versions, orphans)
    factory = Factory(job_plan(connection, table, sc, "seed"))
    check_reachable(connection, "dynamodb", factory.sessions)
    clients = paced_clients(factory)
    factory.provision(clients, factory.backend(clients))
    params = {"scenario": sc.source or sc.name, "table": table, "models": models, "versions": versions,
              "layout": layout, "epoch": round(time.time(), 3)}
    source = preage_factory(params, clients, sc)
    print(f"harness: seeding {source.files():,} files of {models:,} models in {layout}'s layout; then a swamp "
          f"repository on table {table} (no namespace) pulls them with `swamp datastore sync`")
    return _run(jobs.new_job_id("seed"), "seed", params, source, clients, journal, source.finish)


def _check_layout_counts(models: int, versions: int, orphans: int) -> None:
    if models < 1 or versions < 1 or orphans:
        raise HarnessError("--layout takes --models and --versions of at least 1 and no --orphans (swamp's delete "
                           "leaves a model's files live, so an orphan's items are a live model's)")


def _seed_swamp_s3_layout(connection: Connection, sc: scenarios.Scenario, layout: str, models: int, versions: int,
                          orphans: int, bucket: str, prefix: str, journal: Journal) -> int:
    """``harness jobs pre-age --layout swamp-s3@...``: the S3 extension's objects and index in ``bucket`` (created,
    tagged, if missing: the extension never creates its bucket), under ``prefix`` (its ``prefix`` config). The
    scenario gives only the fidelity layer, on S3 whatever its backend (the shipped scenarios are DynamoDB's)."""
    sc = sc.with_overrides(backend="s3")
    _check_layout_counts(models, versions, orphans)
    if not bucket:
        raise HarnessError(f"--layout {layout} needs --bucket: the bucket the swamp repository's datastore names")
    if prefix != prefix.strip("/"):
        raise HarnessError(f"--prefix {prefix!r}: give it as the extension's prefix config, without slashes at "
                           "either end")
    plan = job_plan(connection, "unused", sc, "seed")
    factory = Factory(replace(plan, resources=Resources(table="unused", bucket=bucket)))
    check_reachable(connection, "s3", factory.sessions)
    clients = paced_clients(factory)
    factory.provision(clients, factory.backend(clients))
    params = {"scenario": sc.source or sc.name, "bucket": bucket, "prefix": prefix, "models": models,
              "versions": versions, "layout": layout, "epoch": round(time.time(), 3)}
    source = preage_factory(params, clients, sc)
    assert isinstance(source, SwampS3LayoutSource)
    where = f"s3://{bucket}/{prefix + '/' if prefix else ''}"
    print(f"harness: seeding {source.files():,} files of {models:,} models in {layout}'s layout at {where}; then a "
          f"swamp repository on bucket {bucket}{f' (prefix {prefix})' if prefix else ''}, no namespace, pulls them "
          "with `swamp datastore sync`")
    return _run_s3_layout(jobs.new_job_id("seed"), params, source, clients, journal)


def _run_s3_layout(job_id: str, params: dict, source: SwampS3LayoutSource, clients: Clients, journal: Journal,
                   resume: bool = False) -> int:
    """The S3 layout's job: its estimate, the paced objects, then (done) the commit's shared objects."""
    print(f"harness: job {job_id}: {estimate_line(source)}", flush=True)
    console = Console(unit="requests/s")
    state = run_layout_job(job_id, params, source, clients.endpoints.s3, journal, resume=resume,
                           on_progress=console.on_progress, on_start=console.on_start)
    if state == "done":
        source.finish()
    row = journal.get(job_id)
    print(f"harness: job {job_id} {state}{': ' + row.reason if row and row.reason else ''}"
          + ("" if state == "done" else f" (resume with `harness jobs resume {job_id}`)"))
    return ExitCode.OK if state == "done" else ExitCode.JOB_STOPPED


def cmd_resume_s3_layout(connection: Connection, job_id: str, journal: Journal,
                         scenario_dirs: tuple[str, ...] = ()) -> int:
    """``harness jobs resume`` of an S3 layout job: no table to check, so the bucket must exist; the items are
    idempotent puts (the same bytes again), so a resume on another endpoint only writes them there."""
    row = journal.get(job_id)
    if row is None:
        raise HarnessError(f"no job {job_id!r} in {journal.path}: see `harness jobs list`")
    if row.shown_state == "running":
        raise HarnessError(f"job {row.id} is still running (pid {row.pid})")
    if row.state == "done":
        raise HarnessError(f"job {row.id} is already done")
    sc = scenarios.load(row.params["scenario"], scenario_dirs).with_overrides(backend="s3")
    factory = Factory(replace(job_plan(connection, "unused", sc, "seed"),
                              resources=Resources(table="unused", bucket=row.params["bucket"])))
    check_reachable(connection, "s3", factory.sessions)
    clients = paced_clients(factory)
    source = preage_factory(row.params, clients, sc)
    assert isinstance(source, SwampS3LayoutSource)
    print(f"harness: resuming {job_id}: {row.total - len(journal.done_indexes(job_id)):,} of {row.total:,} items left")
    return _run_s3_layout(job_id, row.params, source, clients, journal, resume=True)


def cleanup_factory(params: dict, clients: Clients) -> CleanupSource:
    return CleanupSource(clients.dynamodb, params["table"], params["keys"])


def cleanup_target(target: str, connection: Callable[[], Connection], aws: bool) -> RunPlan:
    """What ``harness jobs cleanup`` cleans: a run directory's plan (its recorded endpoints), or a table by name."""
    if Path(target).is_dir():
        plan = recorded_plan(target)
        return replace(plan, connection=usable_connection(plan, aws, "clean"))
    return job_plan(connection(), target, run_id="cleanup")


def cmd_cleanup(plan: RunPlan, prefix: str, drop: bool, allow_foreign: bool, journal: Journal) -> int:
    """Delete a run's items (paced) or empty its bucket; ``--drop-table`` then removes an owned table (an owned
    bucket is always removed once empty)."""
    if plan.backend == "s3":
        return _cleanup_bucket(plan, prefix, allow_foreign)
    table = plan.resources.table
    factory = Factory(plan)
    check_reachable(plan.connection, "dynamodb", factory.sessions)
    clients = paced_clients(factory, fidelity=False)
    backend = factory.backend(clients, create=False)
    tags = owner_tags(clients, backend)
    if tags is None:
        raise HarnessError(f"DynamoDB table {table!r} does not exist")
    if tags.get(OWNER_TAG) != "harness" and not allow_foreign:
        raise HarnessError(
            f"table {table!r} was not created by the harness: pass --allow-foreign-resources to clean it")
    job_id = jobs.new_job_id("cleanup")
    keys = journal.path.parent / f"{job_id}.keys.json"
    n = snapshot_keys(clients.dynamodb, table, keys, ceiling(jobs.describe(clients, table), "read"), prefix)
    print(f"harness: {n:,} items to delete from {table}")
    params = {"table": table, "keys": str(keys), "prefix": prefix}
    code = _run(job_id, "cleanup", params, cleanup_factory(params, clients), clients, journal)
    if code == 0 and drop:
        removed = factory.teardown(clients, backend)
        print(f"harness: table {table} {'deleted' if removed else 'kept (not created by the harness)'}")
    return code


def _cleanup_bucket(plan: RunPlan, prefix: str, allow_foreign: bool) -> int:
    """An S3 run's bucket: its objects deleted (under ``prefix``), then the bucket, if the harness created it."""
    bucket = plan.resources.bucket
    factory = Factory(plan)
    check_reachable(plan.connection, "s3", factory.sessions)
    clients = factory.clients(total_attempts=4)
    backend = factory.backend(clients, create=False)
    assert isinstance(backend, S3Backend)
    tags = owner_tags(clients, backend)
    if tags is None:
        raise HarnessError(f"S3 bucket {bucket!r} does not exist")
    owned = tags.get(OWNER_TAG) == "harness"
    if not owned and not allow_foreign:
        raise HarnessError(
            f"bucket {bucket!r} was not created by the harness: pass --allow-foreign-resources to clean it")
    n = empty_bucket(clients.s3, bucket, plan.resources.prefix + prefix)
    print(f"harness: {n:,} objects deleted from {bucket}")
    if owned and not prefix:
        clients.s3.delete_bucket(Bucket=bucket)
        print(f"harness: bucket {bucket} deleted")
    return 0


def cmd_jobs(journal: Journal) -> int:
    rows = journal.all()
    if not rows:
        print(f"no jobs in {journal.path}")
        return 0
    print(f"{'JOB':32s} {'STATE':12s} {'PROGRESS':>18s} {'RATE':>22s}  REASON")
    for r in rows:
        prog = f"{r.done:,}/{r.total:,} {r.done / r.total:4.0%}" if r.total else "-"
        unit = "requests/s" if r.params.get("bucket") else "WCU/s"  # an S3 layout job is paced in requests
        rate = f"{r.rate:,.0f} of {r.ceiling:,.0f} {unit}" if r.shown_state == "running" else f"- of {r.ceiling:,.0f}"
        print(f"{r.id:32s} {r.shown_state:12s} {prog:>18s} {rate:>22s}  {r.reason or ''}")
    return 0


def cmd_resume(connection: Connection, job_id: str, journal: Journal, scenario_dirs: tuple[str, ...] = ()) -> int:
    row = journal.get(job_id)
    if row is None:
        raise HarnessError(f"no job {job_id!r} in {journal.path}: see `harness jobs list`")
    fidelity = row.params.get("scenario")
    clients = job_clients(connection, scenarios.load(fidelity, scenario_dirs) if fidelity else None)
    print(f"harness: resuming {job_id}: {row.total - len(journal.done_indexes(job_id)):,} of {row.total:,} items left")
    console = Console()
    factories = {"fill": jobs.fill_factory, "seed": preage_factory, "cleanup": cleanup_factory}
    state, source = jobs.resume_job(row, clients, journal, factories,
                                    on_progress=console.on_progress, on_start=console.on_start)
    if state == "done" and hasattr(source, "finish"):
        source.finish()
    print(f"harness: job {job_id} {state}"
          + ("" if state == "done" else f" (resume with `harness jobs resume {job_id}`)"))
    return ExitCode.OK if state == "done" else ExitCode.JOB_STOPPED
