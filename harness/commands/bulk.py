"""The job commands: ``harness seed``, ``fill``, ``cleanup``, ``jobs``, ``resume``.

Long jobs print their estimate first (items, write units, time at the ceiling),
then a progress line every couple of seconds with the current rate, the
ceiling and a time estimate. Ctrl-C pauses the job (in-flight items finish and
are journaled) and ``harness resume JOB`` continues it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.aws.clients import Clients, make_clients
from harness.aws.endpoints import Endpoints, any_endpoint_configured
from harness.aws.fidelity.layer import Fidelity
from harness.errors import HarnessError
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.pacing import jobs
from harness.pacing.ceiling import ceiling
from harness.pacing.engine import Job, Progress
from harness.pacing.journal import Journal
from harness.pacing.sources import CleanupSource, FillSource, SeedSource, snapshot_keys

PROGRESS_EVERY_S = 2.0


def paced_clients(endpoints: Endpoints, sc: scenarios.Scenario | None = None) -> Clients:
    """Clients for a job: no botocore retries (the engine retries, paced), and the scenario's fidelity layer."""
    clients = make_clients(endpoints, total_attempts=1)
    if sc is not None:
        layer = Fidelity(sc.fidelity.resolve(endpoints.kind))
        layer.install(clients.dynamodb)
        layer.install(clients.s3)
    return clients


def job_clients(fidelity_scenario: str | None = None) -> Clients:
    """A job's clients on a configured endpoint (jobs outlive the embedded one)."""
    if not any_endpoint_configured() and not os.environ.get(runtime.TARGET_AWS_ENV):
        raise HarnessError("jobs need an endpoint that outlives them: set AWS_ENDPOINT_URL (DynamoDB Local, "
                           "a moto server, ...) or pass --aws; `harness run --seed-models` seeds the embedded one")
    endpoints = runtime.resolve_endpoints()
    runtime.check_credentials(endpoints)
    runtime.check_reachable(endpoints, "dynamodb")
    return paced_clients(endpoints, scenarios.load(fidelity_scenario) if fidelity_scenario else None)


class Console:
    """Progress lines (rate, ceiling, ETA), and Ctrl-C as a pause."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet, self.started, self.last = quiet, time.monotonic(), 0.0
        self.job: Job | None = None

    def on_start(self, job: Job) -> None:
        self.job = job
        signal.signal(signal.SIGINT, lambda *_: job.request_pause("Paused: interrupted (Ctrl-C)"))

    def on_progress(self, p: Progress) -> None:
        now = time.monotonic()
        if not self.quiet and (now - self.last >= PROGRESS_EVERY_S or p.state != "running"):
            self.last = now
            print(jobs.progress_line(p, self.started), flush=True)


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
          + ("" if state == "done" else f" (resume with `harness resume {job_id}`)"))
    return 0 if state == "done" else 4


def cmd_fill(table: str, items: int, item_bytes: int, journal_path: str | None, scenario: str | None) -> int:
    if items < 1 or not 1 <= item_bytes <= 390_000:
        raise HarnessError("--items must be at least 1 and --item-bytes between 1 and 390000")
    clients = job_clients(scenario)
    params = {"table": table, "items": items, "item_bytes": item_bytes, "scenario": scenario}
    source = FillSource(clients.dynamodb, table, items, item_bytes)
    return _run(jobs.new_job_id("fill"), "fill", params, source, clients, Journal(journal_path))


def seed_factory(params: dict, clients: Clients) -> SeedSource:
    sc = scenarios.load(params["scenario"]).with_overrides(backend="dynamodb")
    backend = runtime.build_backend(sc, clients, runtime.Resources(table=params["table"], bucket="unused"),
                                    params.get("run_id", "seed"))
    return SeedSource(backend, [n or None for n in params["namespaces"]], params["models"], params["versions"],
                      params["orphans"], params["state_dir"], params["epoch"])


def seed_namespaces(sc: scenarios.Scenario, workers: int, processes: int = 0) -> list[str]:
    """The namespaces a run's workers will use (``DatastoreSpec.namespace_of`` of each user), or the shared one."""
    if sc.datastore.namespaces == "shared":
        return [""]
    per = -(-workers // processes) if processes else workers
    names = (sc.datastore.namespace_of(p, i) or "" for p in range(processes or 1) for i in range(per))
    return list(dict.fromkeys(names))


def seed_params(sc: scenarios.Scenario, table: str, models: int, versions: int, orphans: int, workers: int,
                state_dir: str | Path, processes: int = 0) -> dict:
    if models < 1 or versions < 1 or not 0 <= orphans <= models:
        raise HarnessError("--models and --versions must be at least 1, and --orphans between 0 and --models")
    return {"scenario": sc.source or sc.name, "table": table, "models": models, "versions": versions,
            "orphans": orphans, "namespaces": seed_namespaces(sc, workers, processes),
            "state_dir": str(Path(state_dir).resolve()), "epoch": round(time.time(), 3)}


def cmd_seed(scenario: str, models: int, versions: int, orphans: int, workers: int | None, table: str,
             state_dir: str | None, journal_path: str | None) -> int:
    sc = scenarios.load(scenario)
    if sc.backend != "dynamodb":
        raise HarnessError("seeding writes DynamoDB items: use a scenario on the dynamodb backend")
    clients = job_clients(scenario)
    backend = runtime.build_backend(sc, clients, runtime.Resources(table=table, bucket="unused"), "seed")
    runtime.ensure_owned(clients, backend)
    state_dir = state_dir or str(Path("runs") / "seeds" / table)
    params = seed_params(sc, table, models, versions, orphans, workers or sc.fleet.workers, state_dir)
    source = seed_factory(params, clients)
    print(f"harness: seeding {source.files():,} files in {len(params['namespaces'])} namespace(s); "
          f"then `harness run {scenario} --table {table} --seed-dir {state_dir}`")
    return _run(jobs.new_job_id("seed"), "seed", params, source, clients, Journal(journal_path), source.finish)


def cleanup_factory(params: dict, clients: Clients) -> CleanupSource:
    return CleanupSource(clients.dynamodb, params["table"], params["keys"])


def cmd_cleanup(target: str, prefix: str, drop: bool, allow_foreign: bool, journal_path: str | None) -> int:
    """Delete a run's items, paced; with ``--drop-table`` remove the (harness-owned) table afterwards."""
    run_json = Path(target) / "run.json"
    table = json.loads(run_json.read_text())["resources"]["table"] if run_json.exists() else target
    clients = job_clients()
    backend = runtime.build_backend(scenarios.load("namespaced"), clients,
                                    runtime.Resources(table=table, bucket="unused"), "cleanup")
    tags = runtime.owner_tags(clients, backend)
    if tags is None:
        raise HarnessError(f"DynamoDB table {table!r} does not exist")
    if tags.get(runtime.OWNER_TAG) != "harness" and not allow_foreign:
        raise HarnessError(
            f"table {table!r} was not created by the harness: pass --allow-foreign-resources to clean it")
    journal = Journal(journal_path)
    job_id = jobs.new_job_id("cleanup")
    keys = journal.path.parent / f"{job_id}.keys.json"
    n = snapshot_keys(clients.dynamodb, table, keys, ceiling(jobs.describe(clients, table), "read"), prefix)
    print(f"harness: {n:,} items to delete from {table}")
    params = {"table": table, "keys": str(keys), "prefix": prefix}
    code = _run(job_id, "cleanup", params, cleanup_factory(params, clients), clients, journal)
    if code == 0 and drop:
        removed = runtime.delete_owned(clients, backend)
        print(f"harness: table {table} {'deleted' if removed else 'kept (not created by the harness)'}")
    return code


def cmd_jobs(journal_path: str | None) -> int:
    journal = Journal(journal_path)
    rows = journal.all()
    if not rows:
        print(f"no jobs in {journal.path}")
        return 0
    print(f"{'JOB':32s} {'STATE':12s} {'PROGRESS':>18s} {'RATE':>22s}  REASON")
    for r in rows:
        prog = f"{r.done:,}/{r.total:,} {r.done / r.total:4.0%}" if r.total else "-"
        rate = f"{r.rate:,.0f} of {r.ceiling:,.0f} WCU/s" if r.shown_state == "running" else f"- of {r.ceiling:,.0f}"
        print(f"{r.id:32s} {r.shown_state:12s} {prog:>18s} {rate:>22s}  {r.reason or ''}")
    return 0


def cmd_resume(job_id: str, journal_path: str | None) -> int:
    journal = Journal(journal_path)
    row = journal.get(job_id)
    if row is None:
        raise HarnessError(f"no job {job_id!r} in {journal.path}: see `harness jobs`")
    clients = job_clients(row.params.get("scenario"))
    print(f"harness: resuming {job_id}: {row.total - len(journal.done_indexes(job_id)):,} of {row.total:,} items left")
    console = Console()
    factories = {"fill": jobs.fill_factory, "seed": seed_factory, "cleanup": cleanup_factory}
    state, source = jobs.resume_job(row, clients, journal, factories,
                                    on_progress=console.on_progress, on_start=console.on_start)
    if state == "done" and hasattr(source, "finish"):
        source.finish()
    print(f"harness: job {job_id} {state}" + ("" if state == "done" else f" (resume with `harness resume {job_id}`)"))
    return 0 if state == "done" else 4
