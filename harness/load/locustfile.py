"""Locust users that run the swamp loop; events are the seam to reporting.

Works with every Locust option: headless or web UI, one process, or a master
with workers (``--processes N`` or ``--master``/``--worker``). Each step is a
request event (request_type = backend, name = step) and the whole iteration is
one more; failures carry their error kind, so Locust's failure table reads like
the spec's error reports.

Each Locust process's harness state is a ``HarnessProcess`` on the
``Environment`` (``environment.harness``). Its settings are one run plan
(``harness.config``): ``--harness-plan RUN_DIR/plan.json`` from ``harness run``;
built here, in ``init``, for a plain ``locust -f locustfile.py --scenario
NAME`` (this is that command line's edge: its options and the user's
environment are read here, once); and for a worker, each test's plan in the
master's spawn message. Rows and events of a worker ride its stats reports to
the master, and a final message at the end of each test says how many it
sent; the master (or the single process) records each test as a run
directory (``harness.load.session``). With the web UI, every test started
from the form is recorded in a directory of its own and reported when it stops.
"""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path
from typing import Any

import gevent
import locust.runners
from locust import User, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from harness.aws import standin
from harness.aws.clients import make_clients
from harness.config import scenario as scenarios
from harness.config.build import plan_locust, start_stand_in
from harness.config.plan import RunPlan, WebPlan, plan_option
from harness.core.clock import SystemClock
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.load import drivers
from harness.load.backoff import ConnectionBackoff
from harness.load.children import watch_workers
from harness.load.drivers.base import IterationOutcome
from harness.load.process import (
    FINAL_MESSAGE,
    FLUSH_MESSAGE,
    REPORT_KEY,
    ROLE_LOCAL,
    ROLE_MASTER,
    ROLE_WORKER,
    HarnessProcess,
    Outbox,
)
from harness.load.session import GENERATOR_EVERY_S, Session, install_signal_notes, start_test_safely
from harness.telemetry.meters import Meters

log = logging.getLogger("harness")

# Locust measures its processes' CPU every 10 s; generator.csv samples every few seconds, so measure as often.
locust.runners.CPU_MONITOR_INTERVAL = GENERATOR_EVERY_S


class IterationFailure(Exception):
    """What Locust's failure table shows: ``<error kind>: <message>``."""


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    """The harness's Locust options: the plan, and what a plain ``locust -f`` run (or the web form) chooses."""
    names = ", ".join(scenarios.available())
    parser.add_argument("--scenario", default="legacy-gsi", help=f"scenario name ({names}) or a .toml path")
    parser.add_argument("--backend", default="", choices=["", "dynamodb", "s3"],
                        help="override the scenario's backend")
    parser.add_argument("--run-dir", default="", help="where iteration rows and run.json go (default runs/<run id>)")
    parser.add_argument("--latency", default="", help="latency profile (local, aws-dynamodb, aws-s3-vpce, aws, "
                        "or a .toml file); overrides the scenario's fidelity.latency")
    hidden = {"include_in_web_ui": False}
    parser.add_argument("--stand-in", default="", help=f"embedded stand-in when no endpoint is set: "
                        f"{', '.join(standin.NAMES)} (default {standin.DEFAULT})", **hidden)
    parser.add_argument("--s3-stand-in", default="", help=f"embedded S3 stand-in when no endpoint is set: "
                        f"{', '.join(standin.S3_NAMES)} (default {standin.S3_DEFAULT})", **hidden)
    parser.add_argument("--prometheus", default="", metavar="HOST:PORT", help="serve the harness's live metrics "
                        "on /metrics at HOST:PORT (a bare PORT: 127.0.0.1)", **hidden)
    parser.add_argument("--harness-plan", default="", help="the run plan: RUN_DIR/plan.json (set by `harness run`) "
                        "or its JSON (a test's plan, sent by the master to its workers); the other harness options "
                        "are then ignored", **hidden)


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
    ev = environment.events
    if role == ROLE_WORKER:  # its plan comes with each test, from the master
        gevent.spawn(h.warm)  # once, at start-up: no test is running yet
        h.outbox = Outbox(process="worker-?")
        ev.test_start.add_listener(lambda **_: _worker_test_start(h))
        ev.test_stop.add_listener(lambda **_: _worker_test_stop(h))
        ev.report_to_master.add_listener(lambda client_id, data, **_: _worker_report(h, data))
        ev.quitting.add_listener(lambda **_: _worker_quitting(h))
        runner.register_message(FLUSH_MESSAGE, lambda environment, msg, **_: _worker_flush(h, msg.data))
        return
    try:
        plan = h.plan = _session_plan(h, opts, role)
        drivers.check(plan.scenario)  # a plain `locust -f` run's (`harness run` checked it before it started)
        gevent.spawn(h.warm)  # once, at start-up: no test is running yet
        if environment.web_ui is not None and opts.web_login:
            from harness.load.web import login

            login.install(environment, plan.locust.web or WebPlan())  # a published UI: one account
        session = h.session = Session(h, plan)
        h.meters = _meters(plan, session, opts)
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
    ev.test_start.add_listener(lambda **_: start_test_safely(session))
    ev.test_stopping.add_listener(lambda **_: session.stopping())
    ev.test_stop.add_listener(lambda **_: session.finish_test())
    ev.spawning_complete.add_listener(lambda **_: session.spawning_complete())
    ev.quitting.add_listener(lambda **_: _quitting(h))
    if role == ROLE_MASTER:
        ev.worker_report.add_listener(lambda client_id, data, **_: _master_report(session, client_id, data))
        runner.register_message(FINAL_MESSAGE, lambda environment, msg, **_: session.receive(msg.node_id, msg.data))
        gevent.spawn(watch_workers, session)  # the workers it forked (--processes): a death stops the test
    install_signal_notes(session)
    if environment.web_ui is not None:
        from harness.load.web import ui

        ui.install(environment, session)


def _session_plan(h: HarnessProcess, opts: Any, role: str) -> RunPlan:
    """The run's plan: the one `harness run` wrote, or (plain ``locust -f``) one built here, at this command
    line's edge, with the embedded stand-in started when the run needs it."""
    if opts.harness_plan:
        return plan_option(opts.harness_plan)
    plan = plan_locust(opts, UserEnvironment.read(), role=role, web=h.environment.web_ui is not None)
    h.server, plan = start_stand_in(plan, note=log.warning)
    Path(plan.run_dir).mkdir(parents=True, exist_ok=True)
    plan.write()
    return plan


def _meters(plan: RunPlan, session: Session, opts: Any) -> Meters | None:
    """--otel / --prometheus: the live meters of the rows this process receives (``harness.telemetry``)."""
    if plan.telemetry.otel and not opts.otel:
        log.warning("harness: the scenario asks for OpenTelemetry ([observe] otel = true): pass --otel to Locust "
                    "(`harness run` does)")
    try:
        meters = Meters.for_plan(plan, lambda: session.current)
        return meters.start() if meters is not None else None
    except OSError as e:
        raise HarnessError(f"--prometheus {plan.telemetry.prometheus_host}:{plan.telemetry.prometheus_port}: "
                           f"cannot listen there ({e.strerror or e})") from None


def _quitting(h: HarnessProcess) -> None:
    try:
        h.session.close()
    finally:
        if h.meters is not None:
            h.meters.close()
        h.close_drivers()
        if h.server is not None:
            h.server.stop()


def _master_report(session: Session, client_id: str, data: dict) -> None:
    payload = data.get(REPORT_KEY)
    if payload:
        session.receive(client_id, payload)


# ---- a worker process --------------------------------------------------------------------


def _worker_test_start(h: HarnessProcess) -> None:
    """The test's plan came in the master's spawn message (``--harness-plan`` among its parsed options)."""
    h.load = None
    assert h.outbox is not None
    h.outbox.process = h.name
    try:
        plan = plan_option(h.environment.parsed_options.harness_plan)
    except HarnessError as e:
        log.error("harness: %s: no test plan from the master: %s", h.name, e)
        return
    assert plan.test is not None
    h.outbox.open(plan.test.number)
    try:
        clients, backend = h.build(plan)
        h.setup_load(plan, clients, backend)
    except HarnessError as e:
        log.error("harness: %s: test %03d cannot run here: %s", h.name, plan.test.number, e)


def _worker_report(h: HarnessProcess, data: dict) -> None:
    assert h.outbox is not None
    payload = h.outbox.drain(h.throttles(), h.keys())
    if payload is not None:
        data[REPORT_KEY] = payload


def _worker_test_stop(h: HarnessProcess) -> None:
    """Users are stopped: send what is left, and how many rows this process sent in all."""
    assert h.outbox is not None
    h.note_gsi_lag()
    payload = h.outbox.close(h.throttles(), h.keys())
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
    h.close_drivers()


# ---- the user ------------------------------------------------------------------------------


class SwampWorkerUser(User):
    """One swamp worker: runs its driver's iterations until the test ends or it reaches its iteration cap.

    The driver (``harness.load.drivers``: the model, or a datastore's own command line) is made once per user
    and called once per iteration; what it hands back is fired as Locust's events and recorded.
    """

    def wait_time(self) -> float:
        load = self.environment.harness.load
        if load is not None and load.arrivals is not None:
            return 0.0  # an open fleet: the next arrival decides when (ArrivalQueue.take)
        return load.scenario.workload.think_time_s if load else 0.0

    def on_start(self) -> None:
        h = self.environment.harness
        load = h.load
        if load is None:
            raise StopUser()
        n = load.next_user()
        index = getattr(self.environment.runner, "worker_index", 0) or 0
        self.max_iterations = load.scenario.fleet.max_iterations
        self.driver = drivers.make(drivers.DriverContext(
            load.plan, process=h.name, user=f"w{index}-{n}", namespace=load.scenario.datastore.namespace_of(index, n),
            rng_seed=hash((os.getpid(), n, time.time())), backend=load.backend, shared=h.drivers))
        self.backoff = ConnectionBackoff(SystemClock(), random.Random(hash((os.getpid(), n, "backoff"))))

    def on_stop(self) -> None:
        driver = getattr(self, "driver", None)
        if driver is not None:  # an iteration cut short by the end of the test: its history still counts
            events, spans = driver.stop()
            if events or spans:
                self.environment.harness.record_events(events, spans)

    @task
    def iterate(self) -> None:
        if self.driver.iteration >= self.max_iterations:
            raise StopUser()
        arrivals = self.environment.harness.load.arrivals if self.environment.harness.load else None
        out = self.driver.run_once(arrivals.take() if arrivals is not None else None)
        fire = self.environment.events.request.fire
        backend = out.row["backend"]
        failed_step = next((s.name for s in reversed(out.steps) if s.name != "release"), None)
        exc = IterationFailure(f"{out.row['error_kind']}: {out.error}") if out.error else None
        for s in out.steps:
            fire(request_type=backend, name=s.name, response_time=s.ms,
                 response_length=s.work.bytes_sent + s.work.bytes_received,
                 exception=exc if (exc and s.name == failed_step) else None, context={})
        fire(request_type=backend, name="iteration", response_time=out.row["total_ms"],
             response_length=(out.row.get("bytes_sent") or 0) + (out.row.get("bytes_received") or 0), exception=exc,
             context={})
        self.environment.harness.record(out)
        self.back_off(out)

    def back_off(self, out: IterationOutcome) -> None:
        """A failed connection: wait before the next iteration (``harness/load/backoff.py``), once an iteration."""
        self.backoff.pause(out.row["error_kind"])
