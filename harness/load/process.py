"""One Locust process's harness state, hung off Locust's ``Environment`` as ``environment.harness``.

Every Locust process (``local``, ``master`` or ``worker-N``) gets one
``HarnessProcess`` when Locust fires ``init``; users, event listeners and the
web UI reach it through the environment they are handed, so nothing lives in
module globals and nothing is passed through environment variables: the run
plan (``harness.config``) comes as Locust's ``--harness-plan`` option, and each
test's plan rides the master's spawn message to its workers.

A process that sends load (``local``, ``worker-N``) has a ``LoadSide`` per
test: the test's plan, its backend and one set of clients (one boto3 session
per process and credentials kind: made per user it stalls the event loop),
with the fidelity layer installed, all built by the plan's ``Factory``. A
worker also has an ``Outbox``: the rows and events of its users, shipped to
the master with every stats report and, at the end of a test, in one final
message that says how many rows it sent.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.aws.clients import Clients, Sessions
from harness.aws.fidelity.layer import FidelityLayer
from harness.aws.front.seat import front_keys
from harness.aws.keyload import KeyLoad
from harness.aws.keyload import install as install_keyload
from harness.config.factory import Factory
from harness.config.plan import RunPlan
from harness.core.clock import SystemClock
from harness.datastore.backends.base import Backend
from harness.load.arrivals import ArrivalQueue, ArrivalSchedule
from harness.load.drivers.base import IterationOutcome
from harness.load.greenlets import executor_for_this_process, pool_size

log = logging.getLogger("harness")

ROLE_LOCAL, ROLE_MASTER, ROLE_WORKER = "local", "master", "worker"
FINAL_MESSAGE = "harness_final"  # worker -> master: the end of a test's rows from that process
FLUSH_MESSAGE = "harness_flush"  # master -> worker: stop your users and send your final report now
REPORT_KEY = "harness"  # the harness's part of a worker's stats report


def throttle_count(layer: FidelityLayer | None) -> int:
    """Throttled responses the fidelity layer's model sent so far (retried or not)."""
    if layer is None:
        return 0
    n = sum(layer.ddb.throttles.values()) if layer.ddb is not None else 0
    return n + (layer.s3.throttles if layer.s3 is not None else 0)


def open_arrivals(plan: RunPlan) -> ArrivalQueue | None:
    """An open fleet's arrivals in this process, from now: rate / N in each of N load-sending processes."""
    fleet = plan.scenario.fleet
    if fleet.arrival != "open":
        return None
    share = plan.test.capacity_share if plan.test is not None else 1.0
    clock = SystemClock()  # under Locust, its sleep yields to the other users (time is patched by gevent)
    schedule = ArrivalSchedule(lambda elapsed: fleet.rate_at(elapsed) * share, fleet.process, clock.now())
    return ArrivalQueue(schedule, clock)


@dataclass
class LoadSide:
    """What a load-sending process needs for one test."""

    plan: RunPlan  # the test's plan (``plan.test`` set)
    backend: Backend
    clients: Clients
    layer: FidelityLayer | None
    users: int = 0
    keyload: KeyLoad = field(default_factory=KeyLoad)  # units per partition key (keys.csv)
    arrivals: ArrivalQueue | None = None  # an open fleet's: this process's share of the arrivals

    @property
    def test(self) -> int:
        assert self.plan.test is not None
        return self.plan.test.number

    @property
    def scenario(self) -> Any:
        return self.plan.scenario

    def next_user(self) -> int:
        n, self.users = self.users, self.users + 1
        return n


@dataclass
class Outbox:
    """A worker's rows and events for the current test, until they ride a report to the master."""

    process: str
    test: int | None = None
    rows: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    spans: list[dict] = field(default_factory=list)  # a command driver's spans (harness.record.spans)
    sent: int = 0
    iterations: Counter = field(default_factory=Counter)  # rows per swamp worker (user), this test
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self, test: int) -> None:
        with self.lock:
            self.test, self.rows, self.events, self.sent, self.iterations = test, [], [], 0, Counter()
            self.spans = []

    def add(self, outcome: IterationOutcome) -> None:
        with self.lock:
            self.rows.append(outcome.row)
            self.events.extend(outcome.events)
            self.spans.extend(outcome.spans)
            self.iterations[outcome.row["user"]] += 1

    def add_events(self, events: list[dict], spans: list[dict] | None = None) -> None:
        with self.lock:
            self.events.extend(events)
            self.spans.extend(spans or ())

    def drain(self, throttles: int, keys: list[dict] | None = None) -> dict | None:
        """The next batch (None when no test is open): rows, history events, throttles, keys.csv rows."""
        with self.lock:
            if self.test is None:
                return None
            rows, events, self.rows, self.events = self.rows, self.events, [], []
            spans, self.spans = self.spans, []
            self.sent += len(rows)
            return {"test": self.test, "process": self.process, "pid": os.getpid(), "rows": rows,
                    "events": events, "throttles": throttles, "keys": keys or [], "spans": spans}

    def close(self, throttles: int, keys: list[dict] | None = None) -> dict | None:
        """The last batch of the test, with how many rows this process sent in all."""
        payload = self.drain(throttles, keys)
        if payload is None:
            return None
        with self.lock:
            payload.update(final=True, sent=self.sent, iterations=dict(self.iterations))
            self.test = None
        return payload


class HarnessProcess:
    """The harness's state in one Locust process (``environment.harness``)."""

    def __init__(self, environment: Any, role: str, make_clients: Callable[..., Clients]) -> None:
        self.environment = environment
        self.role = role
        self.make_clients = make_clients
        self.plan: RunPlan | None = None  # the session's plan (master / single process; a worker's comes per test)
        self.load: LoadSide | None = None
        self.outbox: Outbox | None = None
        self.session: Any = None  # harness.load.session.Session on the master / single process
        self.server: Any = None  # the embedded stand-in this process started (plain `locust -f`), if any
        self.meters: Any = None  # harness.telemetry.meters.Meters: --otel / --prometheus, on the master (or local)
        self.sessions = Sessions()  # one boto3 session per credentials kind, for the process's life
        self.drivers: dict[str, Any] = {}  # what this process's drivers share (DriverContext.shared), for its life

    def factory(self, plan: RunPlan) -> Factory:
        """The plan's factory with this process's sessions, client maker and executor (a greenlet pool)."""
        self.sessions.region = plan.connection.region
        return Factory(plan, sessions=self.sessions, make_clients=self.make_clients,
                       executor=executor_for_this_process(pool_size(plan)))

    def warm(self) -> None:
        """Do the slow first-time work at start-up, not while a test runs.

        The session and both service models; and where rows are written, the
        first Parquet write (pyarrow imports pandas then: seconds on a busy
        machine, long enough for the master to lose its workers' heartbeats).
        """
        kind = self.plan.connection.service(self.plan.backend).credentials if self.plan else "chain"
        try:
            session = self.sessions.get(kind)
            for service in ("dynamodb", "s3"):
                session.client(service, region_name=session.region_name or "us-east-1",
                               endpoint_url="http://127.0.0.1:9")
        except Exception as e:  # noqa: BLE001 - only a head start: the test makes what it needs, and says why not
            log.warning("harness: could not prepare a boto3 session at start-up: %s", e)
        if self.role != ROLE_WORKER:
            import io

            import pyarrow.parquet as pq

            from harness.record.writer import to_table

            pq.write_table(to_table([{"ts_start": 0.0, "ts_end": 0.0}]), io.BytesIO(), compression="zstd")

    @property
    def name(self) -> str:
        """The Locust process as rows name it: ``local``, ``master`` or ``worker-N``."""
        if self.role == ROLE_WORKER:
            return f"worker-{self.environment.runner.worker_index}"
        return self.role

    @property
    def sends_load(self) -> bool:
        return self.role != ROLE_MASTER

    def build(self, plan: RunPlan) -> tuple[Clients, Backend]:
        """Clients and backend for a test (one boto3 session for the whole process's users)."""
        factory = self.factory(plan)
        clients = factory.clients(pool=max(64, plan.scenario.fleet.workers * 2))
        return clients, factory.backend(clients)

    def setup_load(self, plan: RunPlan, clients: Clients, backend: Backend) -> LoadSide:
        """Install this test's fidelity layer on its clients; users started from now on run ``plan``."""
        layer = self.factory(plan).fidelity(clients)
        self.load = LoadSide(plan, backend, clients, layer, arrivals=open_arrivals(plan))
        if clients.dynamodb is not None:
            install_keyload(clients.dynamodb, self.load.keyload)
        return self.load

    def record(self, outcome: IterationOutcome) -> None:
        """Where a finished iteration goes: this process's test record, or the outbox to the master."""
        if self.outbox is not None:
            self.outbox.add(outcome)
        elif self.session is not None:
            self.session.record(outcome)

    def record_events(self, events: list[dict], spans: list[dict] | None = None) -> None:
        """History (and spans) without a row: what an iteration cut short by the end of the test had done."""
        if self.outbox is not None:
            self.outbox.add_events(events, spans)
        elif self.session is not None:
            self.session.record_events(events, spans)

    def close_drivers(self) -> None:
        """The process quits: what its drivers shared (the command driver's receiver) is closed."""
        for name, thing in list(self.drivers.items()):
            try:
                close = getattr(thing, "close", None)
                if close is not None:
                    close()
            except Exception:  # noqa: BLE001 - quitting goes on; the failure is in the log
                log.exception("harness: closing the drivers' %s failed", name)
        self.drivers.clear()

    def throttles(self) -> int:
        return throttle_count(self.load.layer if self.load else None)

    def note_gsi_lag(self) -> None:
        """locust.log: what the fidelity layer's GSI lag did in this process during the test (if it was on)."""
        lag = self.load.layer.gsi_lag if self.load is not None and self.load.layer is not None else None
        if lag is not None:
            log.info("harness: %s: gsi_lag %s: %d write(s) recorded, %d item(s) held back from %d of %d GSI answers",
                     self.name, lag.dist, lag.writes, lag.hidden, lag.delayed, lag.answers)

    def keys(self) -> list[dict]:
        """The units each partition key took since the last call (keys.csv rows; none without a test)."""
        if self.load is None:
            return []
        return self.load.keyload.drain(time.time()) + front_keys(self.load.plan.run_dir)  # any driver's, on the wire
