"""Locust users that run the swamp loop; events are the seam to reporting.

Works with every Locust option: headless or web UI, one process, or a master
with workers (``--processes N`` or ``--master``/``--worker``). Each step is a
request event (request_type = backend, name = step) and the whole iteration is
one more; failures carry their error kind, so Locust's failure table reads like
the seed's error reports.

Each Locust process's harness state is a ``HarnessProcess`` on the
``Environment`` (``environment.harness``). Rows and events of a worker ride its
stats reports to the master, and a final message at the end of each test says
how many it sent; the master (or the single process) records each test as a
run directory (``harness.load.session``). With the web UI, every test started
from the form is recorded in a directory of its own and reported when it stops.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import gevent
import locust.runners
from locust import User, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from harness.aws import standin
from harness.aws.clients import make_clients
from harness.aws.endpoints import any_endpoint_configured
from harness.aws.moto_server import DUMMY_CREDENTIALS
from harness.datastore.seed_state import load_state
from harness.errors import HarnessError
from harness.load import scenario as scenarios
from harness.load.iteration import SeedWorker
from harness.load.process import (
    FINAL_MESSAGE,
    FLUSH_MESSAGE,
    REPORT_KEY,
    ROLE_LOCAL,
    ROLE_MASTER,
    ROLE_WORKER,
    HarnessProcess,
    Outbox,
    load_scenario,
)
from harness.load.session import GENERATOR_EVERY_S, Session, install_signal_notes

log = logging.getLogger("harness")

# Locust measures its processes' CPU every 10 s; generator.csv samples every few seconds, so measure as often.
locust.runners.CPU_MONITOR_INTERVAL = GENERATOR_EVERY_S


class IterationFailure(Exception):
    """What Locust's failure table shows: ``<error kind>: <message>``."""


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    names = ", ".join(scenarios.available())
    parser.add_argument("--scenario", default="legacy-gsi", help=f"scenario name ({names}) or a .toml path")
    parser.add_argument("--backend", default="", choices=["", "dynamodb", "s3"],
                        help="override the scenario's backend")
    parser.add_argument("--run-dir", default="", help="where iteration rows and run.json go (default runs/<run id>)")
    parser.add_argument("--latency", default="", help="latency profile (local, aws-dynamodb, aws-s3-vpce, aws, "
                        "or a .toml file); overrides the scenario's fidelity.latency")
    hidden = {"include_in_web_ui": False}
    parser.add_argument("--run-id", default="", help="set by the master; leave empty", **hidden)
    parser.add_argument("--table", default="", help="DynamoDB table (default per run)", **hidden)
    parser.add_argument("--bucket", default="", help="S3 bucket (default per run)", **hidden)
    parser.add_argument("--seed-dir", default="", help="start each worker from a seeded namespace's catalog and "
                        "local view", **hidden)
    parser.add_argument("--allow-foreign-resources", action="store_true", default=False,
                        help="write into a table/bucket the harness did not create", **hidden)
    parser.add_argument("--endpoint-kind", default="", help="what the configured endpoint is (moto, aws, other); "
                        "set by `harness run`", **hidden)
    parser.add_argument("--target-aws", action="store_true", default=False,
                        help="no endpoint: target AWS itself (set by `harness run --aws`)", **hidden)
    parser.add_argument("--stand-in", default="", help=f"embedded stand-in when no endpoint is set: "
                        f"{', '.join(standin.NAMES)} (default {standin.DEFAULT})", **hidden)
    parser.add_argument("--s3-stand-in", default="", help=f"embedded S3 stand-in when no endpoint is set: "
                        f"{', '.join(standin.S3_NAMES)} (default {standin.S3_DEFAULT})", **hidden)
    parser.add_argument("--stand-in-info", default="", help="JSON {name, version, services} of the stand-in "
                        "`harness run` started", **hidden)
    parser.add_argument("--no-report", action="store_true", default=False,
                        help="web UI: do not build each test's report when it stops", **hidden)
    parser.add_argument("--test-number", type=int, default=0, help="set by the master for its workers", **hidden)
    parser.add_argument("--capacity-share", type=float, default=1.0,
                        help="set by the master: this process models this share of the table's capacity", **hidden)


@events.init.add_listener
def _init(environment: Any, **_: Any) -> None:
    """Give this Locust process its harness state and wire its listeners (after Locust's own)."""
    opts, runner = environment.parsed_options, environment.runner
    if opts is None:
        return
    role = ROLE_MASTER if isinstance(runner, MasterRunner) else ROLE_WORKER if isinstance(runner, WorkerRunner) \
        else ROLE_LOCAL
    h = HarnessProcess(environment, role, make_clients=lambda *a, **k: make_clients(*a, **k))
    environment.harness = h
    gevent.spawn(h.warm)  # once, at start-up: no test is running yet
    ev = environment.events
    if role == ROLE_WORKER:
        h.outbox = Outbox(process="worker-?")
        ev.test_start.add_listener(lambda **_: _worker_test_start(h))
        ev.test_stop.add_listener(lambda **_: _worker_test_stop(h))
        ev.report_to_master.add_listener(lambda client_id, data, **_: _worker_report(h, data))
        ev.quitting.add_listener(lambda **_: _worker_quitting(h))
        runner.register_message(FLUSH_MESSAGE, lambda environment, msg, **_: _worker_flush(h, msg.data))
        return
    try:
        if environment.web_ui is not None and opts.web_login:
            from harness.load.web import login

            login.install(environment)  # a published UI: one account from the environment
        if role == ROLE_LOCAL and not any_endpoint_configured() and not opts.target_aws and not opts.endpoint_kind:
            # plain `locust -f locustfile.py`: the embedded default
            h.server = standin.start(opts.stand_in or None, note=log.warning, s3=opts.s3_stand_in or None)
            os.environ.update(standin.endpoint_env(h.server), **DUMMY_CREDENTIALS)
            opts.endpoint_kind = standin.ENDPOINT_KIND
        sc = load_scenario(opts)  # fail early, before any user starts
        opts.run_id = opts.run_id or _new_run_id(sc)
        opts.run_dir = opts.run_dir or os.path.join("runs", opts.run_id)
        session = h.session = Session(h)
        if opts.headless and opts.run_time:
            # The harness times the test from its start (Locust would count from before the test's setup)
            # and records why it stopped; Locust's own timer is not started.
            session.headless_run_time, opts.run_time = float(opts.run_time), None
        session.open()
    except HarnessError as e:
        log.error("harness: %s", e)
        if h.server is not None:
            h.server.stop()
        raise SystemExit(2) from None
    ev.test_start.add_listener(lambda **_: _start_test(session))
    ev.test_stopping.add_listener(lambda **_: session.stopping())
    ev.test_stop.add_listener(lambda **_: session.finish_test())
    ev.spawning_complete.add_listener(lambda **_: session.spawning_complete())
    ev.quitting.add_listener(lambda **_: _quitting(h))
    if role == ROLE_MASTER:
        ev.worker_report.add_listener(lambda client_id, data, **_: _master_report(session, client_id, data))
        runner.register_message(FINAL_MESSAGE, lambda environment, msg, **_: session.receive(msg.node_id, msg.data))
    install_signal_notes(session)
    if environment.web_ui is not None:
        from harness.load.web import ui

        ui.install(environment, session)


def _new_run_id(sc: scenarios.Scenario) -> str:
    from harness.load import runtime

    return runtime.new_run_id(sc.name, sc.backend)


def _start_test(session: Session) -> None:
    """A test that cannot start (say, a foreign table) is one line in the log, and stopped."""
    try:
        session.start_test()
    except HarnessError as e:
        log.error("harness: test not started: %s", e)
        gevent.spawn(session.runner.stop if session.web else session.runner.quit)


def _quitting(h: HarnessProcess) -> None:
    try:
        h.session.close()
    finally:
        if h.server is not None:
            h.server.stop()


def _master_report(session: Session, client_id: str, data: dict) -> None:
    payload = data.get(REPORT_KEY)
    if payload:
        session.receive(client_id, payload)


# ---- a worker process --------------------------------------------------------------------


def _worker_test_start(h: HarnessProcess) -> None:
    opts = h.environment.parsed_options
    h.load = None
    assert h.outbox is not None
    h.outbox.process = h.name
    h.outbox.open(opts.test_number)
    try:
        sc = load_scenario(opts)
        clients, backend = h.build(sc)
        h.setup_load(opts.test_number, sc, clients, backend, float(opts.capacity_share or 1.0))
    except HarnessError as e:
        log.error("harness: %s: test %03d cannot run here: %s", h.name, opts.test_number, e)


def _worker_report(h: HarnessProcess, data: dict) -> None:
    assert h.outbox is not None
    payload = h.outbox.drain(h.throttles())
    if payload is not None:
        data[REPORT_KEY] = payload


def _worker_test_stop(h: HarnessProcess) -> None:
    """Users are stopped: send what is left, and how many rows this process sent in all."""
    assert h.outbox is not None
    payload = h.outbox.close(h.throttles())
    h.load = None
    if payload is not None:
        h.environment.runner.send_message(FINAL_MESSAGE, payload)


def _worker_flush(h: HarnessProcess, data: dict) -> None:
    """The master is ending the test without a stop message (it is quitting): stop and report now."""
    assert h.outbox is not None
    if h.outbox.test is not None and h.outbox.test == data.get("test"):
        h.environment.runner.stop()  # fires test_stop, which sends the final report


def _worker_quitting(h: HarnessProcess) -> None:
    """Before Locust tells the master it quits: finish the test, so its rows arrive first."""
    assert h.outbox is not None
    if h.outbox.test is not None:
        h.environment.runner.stop()


# ---- the user ------------------------------------------------------------------------------


class SeedWorkerUser(User):
    """One of the seed's workers: runs the loop until the test ends or it reaches its iteration cap."""

    def wait_time(self) -> float:
        load = self.environment.harness.load
        return load.scenario.workload.think_time_s if load else 0.0

    def on_start(self) -> None:
        h = self.environment.harness
        load = h.load
        if load is None:
            raise StopUser()
        n = load.next_user()
        index = getattr(self.environment.runner, "worker_index", 0) or 0
        self.max_iterations = load.scenario.fleet.max_iterations
        self.seed_worker = SeedWorker(load.scenario, load.backend, process=h.name, user=f"w{index}-{n}",
                                      seed=hash((os.getpid(), n, time.time())),
                                      namespace=load.scenario.datastore.namespace_of(index, n))
        seed_dir = self.environment.parsed_options.seed_dir
        if seed_dir and not load_state(seed_dir, self.seed_worker.store):
            # the seed covered other namespaces (another fleet size or process count): say so, start empty
            log.warning("harness: %s: no seeded state for namespace %s in %s; it starts empty",
                        self.seed_worker.user, self.seed_worker.store.ns or "(shared)", seed_dir)

    def on_stop(self) -> None:
        sw = getattr(self, "seed_worker", None)
        if sw is not None and sw.events:  # an iteration cut short by the end of the test: its history still counts
            events, sw.events = sw.events, []
            self.environment.harness.record_events(events)

    @task
    def iterate(self) -> None:
        if self.seed_worker.iteration >= self.max_iterations:
            raise StopUser()
        out = self.seed_worker.run_once()
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
        self.environment.harness.record(out)
