"""The harness's live measurements as Prometheus series, served on ``/metrics`` by the Locust master.

Names follow Prometheus's conventions (a unit in the name, ``_total`` on counters, base units):

==========================================  ==========  ==========================================================
series                                      type        labels (besides run_id, scenario, backend)
==========================================  ==========  ==========================================================
``harness_iterations_total``                counter     process, outcome (ok | failed), error_kind
``harness_step_duration_seconds``           histogram   process, step
``harness_step_requests_total``             counter     process, step
``harness_capacity_units_total``            counter     process, kind (read | write)
``harness_lock_grants_total``               counter     lock_key (at most 20, the rest ``other``)
``harness_lock_wait_seconds``               histogram   lock_key
``harness_lock_timeouts_total``             counter     lock_key
``harness_bound_utilization_ratio``         gauge       kind, resource: the live window's bound (one series)
==========================================  ==========  ==========================================================

The registry is the harness's own (no process or platform collectors): every series on the page is one of
these, so a dashboard query can be checked against ``SERIES`` (tests/unit/deploy/test_grafana_dashboard.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from harness.telemetry.measure import BUCKETS_S, Batch

log = logging.getLogger("harness")

RUN_LABELS = ("run_id", "scenario", "backend")
SERIES = {  # every series /metrics serves (a histogram's _bucket, _sum and _count included)
    "harness_iterations_total": "counter", "harness_step_duration_seconds": "histogram",
    "harness_step_requests_total": "counter", "harness_capacity_units_total": "counter",
    "harness_lock_grants_total": "counter", "harness_lock_wait_seconds": "histogram",
    "harness_lock_timeouts_total": "counter", "harness_bound_utilization_ratio": "gauge",
}
LINGER_S = 5.0  # at the end, /metrics stays up this long at most for a scrape to read the final numbers

BoundSource = Callable[[], tuple[dict[str, str], str, str, float] | None]  # (run labels, kind, name, utilization)


class _Bound(Collector):
    """The live window's bound, read when Prometheus scrapes (one series: the resource that binds now)."""

    def __init__(self, source: BoundSource) -> None:
        self.source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = GaugeMetricFamily("harness_bound_utilization_ratio", "Utilization (0-1) of the resource that bounds "
                              "the fleet over the live window (the report's rule)", labels=[*RUN_LABELS, "kind",
                                                                                          "resource"])
        try:
            found = self.source()
        except Exception:  # noqa: BLE001 - a scrape must not fail because the live numbers could not be read
            log.exception("harness: /metrics: the bound could not be read")
            found = None
        if found is not None:
            labels, kind, name, utilization = found
            g.add_metric([*(labels[k] for k in RUN_LABELS), kind, name], utilization)
        yield g


class PrometheusMeters:
    """The harness's series in their own registry; ``record`` adds a measured batch."""

    def __init__(self, bound: BoundSource) -> None:
        disable_created_metrics()  # no *_created series: a counter's start is its run's, and dashboards never ask
        self.registry = CollectorRegistry(auto_describe=True)
        r, run = self.registry, list(RUN_LABELS)
        self.iterations = Counter("harness_iterations", "Iterations recorded, by outcome and error kind",
                                  [*run, "process", "outcome", "error_kind"], registry=r)
        self.steps = Histogram("harness_step_duration_seconds", "Duration of each step that ran in an iteration",
                               [*run, "process", "step"], buckets=BUCKETS_S, registry=r)
        self.requests = Counter("harness_step_requests", "Requests each step sent to the datastore",
                                [*run, "process", "step"], registry=r)
        self.units = Counter("harness_capacity_units", "Capacity units the clients counted (read, write)",
                             [*run, "process", "kind"], registry=r)
        self.grants = Counter("harness_lock_grants", "Lock grants per lock key", [*run, "lock_key"], registry=r)
        self.waits = Histogram("harness_lock_wait_seconds", "Wait from asking for a lock to its grant",
                               [*run, "lock_key"], buckets=BUCKETS_S, registry=r)
        self.timeouts = Counter("harness_lock_timeouts", "Lock waits that timed out", [*run, "lock_key"],
                                registry=r)
        r.register(_Bound(bound))
        self.updated = 0.0  # when the numbers last changed (monotonic)

    def record(self, run: dict[str, str], b: Batch) -> None:
        labels = [run[k] for k in RUN_LABELS]
        for (process, outcome, kind), n in b.iterations.items():
            self.iterations.labels(*labels, process, outcome, kind).inc(n)
        for process, step, seconds in b.steps:
            self.steps.labels(*labels, process, step).observe(seconds)
        for (process, step), n in b.requests.items():
            self.requests.labels(*labels, process, step).inc(n)
        for (process, kind), v in b.units.items():
            self.units.labels(*labels, process, kind).inc(v)
        for key, n in b.grants.items():
            self.grants.labels(*labels, key).inc(n)
        for key, seconds in b.waits:
            self.waits.labels(*labels, key).observe(seconds)
        for key, n in b.timeouts.items():
            self.timeouts.labels(*labels, key).inc(n)
        self.updated = time.monotonic()


class MetricsServer:
    """``/metrics`` (any path answers with the page) on HOST:PORT, in the Locust process's event loop."""

    def __init__(self, meters: PrometheusMeters, host: str, port: int) -> None:
        self.meters, self.host, self.port = meters, host, port
        self.scrapes = 0
        self.last_scrape = 0.0  # monotonic
        self._app = make_wsgi_app(meters.registry)
        self._server: Any = None

    def _wsgi(self, request: dict, start_response: Callable) -> Any:
        started = time.monotonic()
        out = self._app(request, start_response)
        self.scrapes += 1
        self.last_scrape = started
        return out

    def start(self) -> MetricsServer:
        from gevent.pywsgi import WSGIServer

        self._server = WSGIServer((self.host, self.port), self._wsgi, log=None, error_log=log)
        self._server.start()  # an OSError (the port taken since the plan was made) is the caller's to report
        return self

    def linger(self, timeout_s: float = LINGER_S, sleep: Callable[[float], None] | None = None,
               now: Callable[[], float] = time.monotonic) -> bool:
        """When something scrapes, serve until a scrape has read the final numbers (``timeout_s`` at most).

        Without it the last rows (a worker's final report, just before Locust quits) would never be scraped:
        Prometheus's last sample would miss them. True when a scrape read them (or none was ever made).
        """
        if self.scrapes == 0:
            return True
        import gevent

        sleep = sleep or gevent.sleep
        deadline = now() + timeout_s
        while self.last_scrape < self.meters.updated and now() < deadline:
            sleep(0.1)
        return self.last_scrape >= self.meters.updated

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(timeout=1)
            self._server = None
