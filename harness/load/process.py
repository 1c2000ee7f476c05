"""One Locust process's harness state, hung off Locust's ``Environment`` as ``environment.harness``.

Every Locust process (``local``, ``master`` or ``worker-N``) gets one
``HarnessProcess`` when Locust fires ``init``; users, event listeners and the
web UI reach it through the environment they are handed, so nothing lives in
module globals and nothing is passed through environment variables.

A process that sends load (``local``, ``worker-N``) has a ``LoadSide`` per
test: the scenario the test runs, its backend and one set of clients (one
boto3 session per process: made per user it stalls the event loop), with the
fidelity layer installed. A worker also has an ``Outbox``: the rows and events
of its users, shipped to the master with every stats report and, at the end
of a test, in one final message that says how many rows it sent.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.aws.clients import Clients
from harness.aws.endpoints import Endpoints
from harness.aws.fidelity.layer import Fidelity
from harness.datastore.backends.base import Backend
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.load.iteration import IterationOutcome

log = logging.getLogger("harness")

ROLE_LOCAL, ROLE_MASTER, ROLE_WORKER = "local", "master", "worker"
FINAL_MESSAGE = "harness_final"  # worker -> master: the end of a test's rows from that process
FLUSH_MESSAGE = "harness_flush"  # master -> worker: stop your users and send your final report now
REPORT_KEY = "harness"  # the harness's part of a worker's stats report


def endpoints_from_options(opts: Any) -> Endpoints:
    """Where requests go: the standard AWS_ENDPOINT_URL* variables, qualified by ``harness run``'s options."""
    env = dict(os.environ)
    if getattr(opts, "endpoint_kind", ""):
        env[runtime.ENDPOINT_KIND_ENV] = opts.endpoint_kind
    if getattr(opts, "target_aws", False):
        env[runtime.TARGET_AWS_ENV] = "1"
    return runtime.resolve_endpoints(env)


def load_scenario(opts: Any, *, users: int | None = None, spawn_rate: float | None = None,
                  run_time_s: float | None = None) -> scenarios.Scenario:
    """The scenario a test runs: the file, on the session's backend, with the fleet the test was started with."""
    sc = scenarios.load(opts.scenario)
    return sc.with_overrides(backend=opts.backend or None, workers=users, spawn_rate=spawn_rate,
                             duration_s=run_time_s)


def throttle_count(layer: Fidelity | None) -> int:
    """Throttled responses the fidelity layer's model sent so far (retried or not)."""
    if layer is None:
        return 0
    n = sum(layer.ddb.throttles.values()) if layer.ddb is not None else 0
    return n + (layer.s3.throttles if layer.s3 is not None else 0)


@dataclass
class LoadSide:
    """What a load-sending process needs for one test."""

    test: int
    scenario: scenarios.Scenario
    backend: Backend
    clients: Clients
    layer: Fidelity | None
    users: int = 0

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
    sent: int = 0
    iterations: Counter = field(default_factory=Counter)  # rows per seed worker (user), this test
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self, test: int) -> None:
        with self.lock:
            self.test, self.rows, self.events, self.sent, self.iterations = test, [], [], 0, Counter()

    def add(self, outcome: IterationOutcome) -> None:
        with self.lock:
            self.rows.append(outcome.row)
            self.events.extend(outcome.events)
            self.iterations[outcome.row["user"]] += 1

    def add_events(self, events: list[dict]) -> None:
        with self.lock:
            self.events.extend(events)

    def drain(self, throttles: int) -> dict | None:
        """The next batch (None when no test is open)."""
        with self.lock:
            if self.test is None:
                return None
            rows, events, self.rows, self.events = self.rows, self.events, [], []
            self.sent += len(rows)
            return {"test": self.test, "process": self.process, "pid": os.getpid(), "rows": rows,
                    "events": events, "throttles": throttles}

    def close(self, throttles: int) -> dict | None:
        """The last batch of the test, with how many rows this process sent in all."""
        payload = self.drain(throttles)
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
        self.load: LoadSide | None = None
        self.outbox: Outbox | None = None
        self.session: Any = None  # harness.load.session.Session on the master / single process
        self.server: Any = None  # the embedded stand-in this process started (plain `locust -f`), if any
        self._boto: Any = None

    def boto_session(self) -> Any:
        """One boto3 session per process: a new one costs 0.2-0.4 s of CPU that stalls Locust's event loop
        (long enough, on a busy machine, for the master to drop a worker); clients from it cost ~15 ms."""
        if self._boto is None:
            import boto3

            self._boto = boto3.session.Session()
        return self._boto

    def warm(self) -> None:
        """Do the slow first-time work at start-up, not while a test runs.

        The session and both service models; and where rows are written, the
        first Parquet write (pyarrow imports pandas then: seconds on a busy
        machine, long enough for the master to lose its workers' heartbeats).
        """
        session = self.boto_session()
        for service in ("dynamodb", "s3"):
            session.client(service, region_name=session.region_name or "us-east-1", endpoint_url="http://127.0.0.1:9")
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

    def setup_load(self, test: int, sc: scenarios.Scenario, clients: Clients, backend: Backend,
                   capacity_share: float) -> LoadSide:
        """Install this test's fidelity layer on fresh clients; users started from now on run ``sc``."""
        opts = self.environment.parsed_options
        cfg = sc.fidelity.resolve(clients.endpoints.kind, capacity_share, opts.latency or None)
        layer = Fidelity(cfg) if cfg.enabled else None
        if layer is not None:
            layer.install(clients.dynamodb)
            layer.install(clients.s3)
        self.load = LoadSide(test, sc, backend, clients, layer)
        return self.load

    def build(self, sc: scenarios.Scenario) -> tuple[Clients, Backend]:
        """Clients and backend for a test (one boto3 session for the whole process's users)."""
        opts = self.environment.parsed_options
        endpoints = endpoints_from_options(opts)
        runtime.check_credentials(endpoints)
        resources = runtime.Resources.for_run(opts.run_id, opts.table or None, opts.bucket or None)
        clients = self.make_clients(endpoints, pool=max(64, sc.fleet.workers * 2), session=self.boto_session())
        return clients, runtime.build_backend(sc, clients, resources, opts.run_id)

    def record(self, outcome: IterationOutcome) -> None:
        """Where a finished iteration goes: this process's test record, or the outbox to the master."""
        if self.outbox is not None:
            self.outbox.add(outcome)
        elif self.session is not None:
            self.session.record(outcome)

    def record_events(self, events: list[dict]) -> None:
        """History without a row: what an iteration cut short by the end of the test had done."""
        if self.outbox is not None:
            self.outbox.add_events(events)
        elif self.session is not None:
            self.session.record_events(events)

    def throttles(self) -> int:
        return throttle_count(self.load.layer if self.load else None)
