"""The paced jobs around a run's load: pre-ageing before it (``--pre-age-models``) and a noisy neighbour beside it.

Both are bulk jobs (``harness.jobs.pacing``) on the run's own table, built from the
run's plan (its endpoints and fidelity layer), journaled in ``RUN_DIR/jobs.db``.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.config.factory import Factory
from harness.core.errors import HarnessError
from harness.jobs import bulk
from harness.jobs.pacing import jobs
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.sources import FillSource
from harness.jobs.pacing.swamp_s3_layout import SwampS3LayoutSource, run_layout_job


def preage(factory: Factory, say: Callable[[str], None], quiet: bool = False) -> Path:
    """Pre-age the datastore (a paced job) so the load starts where a long run would be after hours."""
    plan = factory.plan
    p, state_dir, run_dir = plan.seeding.preage, plan.seeding.state_dir, Path(plan.run_dir)
    assert p is not None and state_dir is not None
    if p.backend == "s3":  # swamp's S3 extension's objects, in the bucket and prefix the repositories name
        return _preage_s3_layout(factory, say, quiet)
    if p.layout:  # swamp's own items, as the named extension version writes them (a real-swamp story chapter)
        params = {"scenario": plan.scenario.source or plan.scenario.name, "table": plan.resources.table,
                  "models": p.models, "versions": p.versions, "layout": p.layout, "epoch": round(time.time(), 3)}
    else:
        params = bulk.preage_params(plan.scenario, plan.resources.table, p.models, p.versions, p.orphans,
                                    plan.scenario.fleet.workers, state_dir, plan.locust.processes)
    clients = bulk.paced_clients(factory)
    source = bulk.preage_factory(params, clients, plan.scenario)
    where = f"{p.layout}'s layout" if p.layout else f"{len(params['namespaces'])} namespace(s)"
    say(f"harness: seeding {source.files():,} files in {where}")
    console = bulk.Console(quiet)
    interrupt = signal.getsignal(signal.SIGINT)  # the job makes Ctrl-C a pause while it runs ...
    try:
        state = jobs.run_job(jobs.new_job_id("seed"), "seed", params, source, clients,
                             Journal(run_dir / "jobs.db"), on_progress=console.on_progress, on_start=console.on_start)
    finally:  # ... and only then: after it, Ctrl-C stops the run again (Locust records the running test)
        signal.signal(signal.SIGINT, interrupt)
    if state != "done":
        raise HarnessError(f"seeding stopped ({state}); see `harness jobs list --journal {run_dir / 'jobs.db'}`")
    source.finish()
    return Path(state_dir)


def _preage_s3_layout(factory: Factory, say: Callable[[str], None], quiet: bool) -> Path:
    """The S3 extension's layout (``swamp_s3_layout``) in the run's own bucket under its prefix: what the swamp
    driver's ``.swamp.yaml`` names (``bucket``, ``prefix``), so every user's repository reads what it wrote. Its
    own paced job (requests a second, not capacity units), then the shared shards and the index."""
    plan = factory.plan
    p, run_dir = plan.seeding.preage, Path(plan.run_dir)
    assert p is not None and p.layout is not None and plan.seeding.state_dir is not None
    bucket, prefix = plan.resources.bucket, plan.resources.prefix or ""
    params = {"scenario": plan.scenario.source or plan.scenario.name, "bucket": bucket, "prefix": prefix,
              "models": p.models, "versions": p.versions, "layout": p.layout, "epoch": round(time.time(), 3)}
    clients = bulk.paced_clients(factory)
    source = bulk.preage_factory(params, clients, plan.scenario)
    assert isinstance(source, SwampS3LayoutSource)
    say(f"harness: seeding {source.files():,} files of {p.models:,} models in {p.layout}'s layout at s3://{bucket}/"
        f"{prefix + '/' if prefix else ''}")
    console = bulk.Console(quiet, unit="requests/s")
    interrupt = signal.getsignal(signal.SIGINT)  # the job makes Ctrl-C a pause while it runs, as above
    try:
        state = run_layout_job(jobs.new_job_id("seed"), params, source, clients.endpoints.s3,
                               Journal(run_dir / "jobs.db"), on_progress=console.on_progress,
                               on_start=console.on_start)
    finally:
        signal.signal(signal.SIGINT, interrupt)
    if state != "done":
        raise HarnessError(f"seeding stopped ({state}); see `harness jobs list --journal {run_dir / 'jobs.db'}`")
    source.finish()
    return Path(plan.seeding.state_dir)


class BackgroundJob:
    """The scenario's noisy neighbour: a paced fill job on the workers' table for the length of the run."""

    def __init__(self, factory: Factory, say: Callable[[str], None]) -> None:
        plan = factory.plan
        sc, table = plan.scenario, plan.resources.table
        clients = bulk.paced_clients(factory)
        self.say = say
        params = {"table": table, "items": sc.background.items, "item_bytes": sc.background.item_bytes,
                  "prefix": "BG"}
        source = FillSource(clients.dynamodb, table, sc.background.items, sc.background.item_bytes, prefix="BG")
        self.job = None
        self.state = "starting"

        def started(job: object) -> None:
            self.job = job

        def run() -> None:
            self.state = jobs.run_job(jobs.new_job_id("background"), "fill", params, source, clients,
                                      Journal(Path(plan.run_dir) / "jobs.db"), on_start=started)

        self.thread = threading.Thread(target=run, daemon=True, name="harness-background")
        self.thread.start()

    def stop(self) -> None:
        if self.job is not None:
            self.job.request_pause("Paused: the run ended")
        self.thread.join(30)
        self.say(f"harness: background job {self.state}")


def background(factory: Factory, say: Callable[[str], None]) -> BackgroundJob | None:
    sc = factory.plan.scenario
    if not sc.background.items:
        return None
    say(f"harness: background job: {sc.background.items:,} items of {sc.background.item_bytes} B, paced")
    return BackgroundJob(factory, say)
