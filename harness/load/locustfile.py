"""Locust users that run the swamp loop; events are the seam to reporting.

Works with every Locust option: headless or web UI, one process, or a master
with workers (``--processes N`` or ``--master``/``--worker``). Each step is a
request event (request_type = backend, name = step) and the whole iteration is
one more; failures carry their error kind, so Locust's failure table reads like
the seed's error reports. Iteration rows go to Parquet shards in the run
directory; in distributed mode they ride the workers' stats reports to the
master, which writes them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gevent
from locust import User, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from harness.aws.clients import make_clients
from harness.aws.endpoints import any_endpoint_configured
from harness.aws.fidelity.layer import Fidelity
from harness.aws.fidelity.probe import Probe
from harness.aws.moto_server import DUMMY_CREDENTIALS, EmbeddedMoto
from harness.errors import HarnessError
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.load.iteration import LoadWorker
from harness.pacing.sources import load_state
from harness.record import runinfo
from harness.record.history import HistoryWriter
from harness.record.writer import ShardWriter

log = logging.getLogger("harness")
ROWS_KEY = "harness_rows"
EVENTS_KEY = "harness_events"  # the safety history rides the workers' reports exactly like the rows


class IterationFailure(Exception):
    """What Locust's failure table shows: ``<error kind>: <message>``."""


class ProcessState:
    """Everything one Locust process shares between its users (one session, one client per service)."""

    def __init__(self) -> None:
        self.scenario: scenarios.Scenario | None = None
        self.backend: Any = None
        self.writer: ShardWriter | None = None
        self.pending: list[dict] = []
        self.lock = threading.Lock()
        self.users = 0
        self.worker = "local"
        self.run_dir: Path | None = None
        self.moto: EmbeddedMoto | None = None
        self.probe: Probe | None = None
        self.history: HistoryWriter | None = None
        self.pending_events: list[dict] = []

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


STATE = ProcessState()


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    names = ", ".join(scenarios.available())
    parser.add_argument("--scenario", default="legacy-gsi", help=f"scenario name ({names}) or a .toml path")
    parser.add_argument("--backend", default="", choices=["", "dynamodb", "s3"],
                        help="override the scenario's backend")
    parser.add_argument("--run-dir", default="", help="where iteration rows and run.json go (default runs/<run id>)")
    parser.add_argument("--latency", default="", help="latency profile (local, aws-dynamodb, aws-s3-vpce, aws, "
                        "or a .toml file); overrides the scenario's fidelity.latency")
    parser.add_argument("--run-id", default="", include_in_web_ui=False, help="set by the master; leave empty")
    parser.add_argument("--table", default="", include_in_web_ui=False, help="DynamoDB table (default per run)")
    parser.add_argument("--bucket", default="", include_in_web_ui=False, help="S3 bucket (default per run)")
    parser.add_argument("--seed-dir", default="", include_in_web_ui=False,
                        help="start each worker from a seeded namespace's catalog and local view")
    parser.add_argument("--allow-foreign-resources", action="store_true", default=False, include_in_web_ui=False,
                        help="write into a table/bucket the harness did not create")


def _load_scenario(opts: Any) -> scenarios.Scenario:
    sc = scenarios.load(opts.scenario)
    return sc.with_overrides(backend=opts.backend or None)


@events.init.add_listener
def _init(environment: Any, **_: Any) -> None:
    STATE.reset()
    opts = environment.parsed_options
    runner = environment.runner
    if opts is None:
        return
    if not isinstance(runner, MasterRunner | WorkerRunner) and not any_endpoint_configured() \
            and os.environ.get(runtime.TARGET_AWS_ENV) != "1":
        STATE.moto = EmbeddedMoto().start()  # plain `locust -f locustfile.py`: the embedded default
        os.environ.update(AWS_ENDPOINT_URL=STATE.moto.url, **{runtime.ENDPOINT_KIND_ENV: "moto"}, **DUMMY_CREDENTIALS)
    if not isinstance(runner, WorkerRunner):
        sc = _load_scenario(opts)  # fail early, before any user starts
        opts.run_id = opts.run_id or runtime.new_run_id(sc.name, sc.backend)
        opts.run_dir = opts.run_dir or str(Path("runs") / opts.run_id)
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(_on_worker_report)
    if isinstance(runner, WorkerRunner):
        environment.events.report_to_master.add_listener(_on_report_to_master)


def _on_report_to_master(client_id: str, data: dict) -> None:
    with STATE.lock:
        rows, STATE.pending = STATE.pending, []
        events, STATE.pending_events = STATE.pending_events, []
    data[ROWS_KEY] = rows
    data[EVENTS_KEY] = events


def _on_worker_report(client_id: str, data: dict) -> None:
    rows = data.get(ROWS_KEY)
    if rows and STATE.writer is not None:
        STATE.writer.add(rows)
    if data.get(EVENTS_KEY) and STATE.history is not None:
        STATE.history.add(data[EVENTS_KEY])


@events.test_start.add_listener
def _test_start(environment: Any, **_: Any) -> None:
    try:
        _setup(environment)
    except HarnessError as e:
        log.error("harness: %s", e)
        gevent.spawn_later(0.1, environment.runner.quit)
        raise


def _setup(environment: Any) -> None:
    opts, runner = environment.parsed_options, environment.runner
    sc = _load_scenario(opts)
    STATE.scenario = sc
    is_worker, is_master = isinstance(runner, WorkerRunner), isinstance(runner, MasterRunner)
    STATE.worker = f"worker-{runner.worker_index}" if is_worker else "local"
    endpoints = runtime.resolve_endpoints()
    runtime.check_credentials(endpoints)
    resources = runtime.Resources.for_run(opts.run_id, opts.table or None, opts.bucket or None)
    clients = make_clients(endpoints, pool=max(64, sc.fleet.workers * 2))
    backend = runtime.build_backend(sc, clients, resources, opts.run_id)
    if not is_worker:  # the master (or the single process) creates the table/bucket once
        runtime.ensure_owned(clients, backend, opts.allow_foreign_resources)
    share = float(os.environ.get(runtime.CAPACITY_SHARE_ENV, "1") or 1)
    fidelity = sc.fidelity.resolve(endpoints.kind, share, opts.latency or None)
    if not is_master:  # only the processes that send load get the fidelity layer
        layer = Fidelity(fidelity)
        layer.install(clients.dynamodb)
        layer.install(clients.s3)
        STATE.backend = backend
    if is_worker:
        return
    STATE.run_dir = Path(opts.run_dir)
    STATE.run_dir.mkdir(parents=True, exist_ok=True)
    STATE.writer = ShardWriter(STATE.run_dir, tag="master" if isinstance(runner, MasterRunner) else "local")
    STATE.history = HistoryWriter(STATE.run_dir, tag="master" if isinstance(runner, MasterRunner) else "local")
    runinfo.write(STATE.run_dir, {
        "run_id": opts.run_id, "scenario": sc.to_dict(), "scenario_name": sc.name, "backend": sc.backend,
        "endpoint": runtime.endpoint_summary(endpoints), "endpoint_kind": endpoints.kind,
        "resources": {"table": resources.table, "bucket": resources.bucket},
        "versions": runinfo.versions(), "host": runinfo.host(), "started_at": runinfo.utc_now(),
        "ended_at": None, "status": "running", "fidelity": asdict(fidelity),
        "fleet": {"workers": opts.num_users or sc.fleet.workers,
                  "processes": int(getattr(opts, "processes", 0) or 0) or
                  (len(runner.clients) if isinstance(runner, MasterRunner) else 1)},
    })
    if fidelity.enabled and fidelity.probe_every_s > 0:
        STATE.probe = Probe(backend, STATE.run_dir, fidelity.probe_every_s).start()
    if not opts.run_time:  # every load loop is bounded in time: default to the scenario's duration
        gevent.spawn_later(sc.fleet.duration_s, runner.quit)


@events.quitting.add_listener
def _quitting(environment: Any, **_: Any) -> None:
    if STATE.probe is not None:
        STATE.probe.stop()
    if STATE.history is not None:
        STATE.history.flush()
    if STATE.writer is not None and STATE.run_dir is not None:
        STATE.writer.flush()
        try:
            runinfo.update(STATE.run_dir, ended_at=runinfo.utc_now(), status="finished",
                           rows_written=STATE.writer.written)
        except FileNotFoundError:
            pass
    if STATE.moto is not None:
        STATE.moto.stop()


def record(row: dict | None, events: list[dict] | None = None) -> None:
    if STATE.writer is not None:
        if row is not None:
            STATE.writer.add([row])
        if events and STATE.history is not None:
            STATE.history.add(events)
    else:
        with STATE.lock:
            STATE.pending.extend([row] if row is not None else [])
            STATE.pending_events.extend(events or [])


class SwampWorker(User):
    """One seed worker: runs the loop until the run ends or it reaches its iteration cap."""

    def wait_time(self) -> float:
        return STATE.scenario.workload.think_time_s if STATE.scenario else 0.0

    def on_start(self) -> None:
        if STATE.backend is None or STATE.scenario is None:
            raise StopUser()
        with STATE.lock:
            n = STATE.users
            STATE.users += 1
        index = getattr(self.environment.runner, "worker_index", 0) or 0
        self.lw = LoadWorker(STATE.scenario, STATE.backend, worker=STATE.worker, user=f"w{index}-{n}",
                             seed=hash((os.getpid(), n, time.time())))
        seed_dir = self.environment.parsed_options.seed_dir
        if seed_dir:
            load_state(seed_dir, self.lw.store)

    def on_stop(self) -> None:
        lw = getattr(self, "lw", None)
        if lw is not None and lw.events:  # an iteration cut short by the end of the run: its history still counts
            events, lw.events = lw.events, []
            record(None, events)

    @task
    def iterate(self) -> None:
        assert STATE.scenario is not None
        if self.lw.iteration >= STATE.scenario.fleet.max_iterations:
            raise StopUser()
        out = self.lw.run_once()
        fire = self.environment.events.request.fire
        backend = out.row["backend"]
        failed_step = next((s.name for s in reversed(out.steps) if s.name != "release"), None)
        exc = IterationFailure(f"{out.row['error_kind']}: {out.error}") if out.error else None
        for s in out.steps:
            fire(request_type=backend, name=s.name, response_time=s.ms,
                 response_length=s.work.bytes_sent + s.work.bytes_received,
                 exception=exc if (exc and s.name == failed_step) else None, context={})
        fire(request_type=backend, name="iteration", response_time=out.row["total_ms"],
             response_length=out.row["bytes_sent"] + out.row["bytes_received"], exception=exc, context={})
        record(out.row, out.events)
