"""The live meters of one Locust master (or single process): every row it receives, to Prometheus and OTel.

The process that receives every row (``harness.load.session``: a worker's rows ride its reports to the
master) feeds each test's ``Live`` (the Harness tab's numbers, tested against the report); ``watch`` adds a
tap there, so the meters see exactly the rows and history events the tab and the run directory see, measured
once (``measure``) and recorded by each exporter that is on. The bound is read from the running test's
``Live`` when an exporter asks (a scrape, an export), with the report's rule (``harness.metrics.bound``).

Nothing here is made unless the plan asks: ``Meters.for_plan`` is None without ``--otel`` or
``--prometheus``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from harness.metrics import bound as bounds
from harness.telemetry.measure import Batch, KeyNames, measure_events, measure_rows
from harness.telemetry.otel import OtelMeters
from harness.telemetry.prometheus import MetricsServer, PrometheusMeters

log = logging.getLogger("harness")


def run_labels(plan: Any) -> dict[str, str]:
    """A test's run labels: run id, scenario and backend (the test's plan: its scenario may be the form's)."""
    return {"run_id": plan.run_id, "scenario": plan.scenario.name, "backend": plan.backend}


class Tap:
    """One test's rows and events into the meters (``Live.taps``)."""

    def __init__(self, meters: Meters, labels: dict[str, str]) -> None:
        self.meters, self.labels, self.names = meters, labels, KeyNames()

    def rows(self, rows: list[dict]) -> None:
        if rows:
            self.meters.record(self.labels, measure_rows(rows))

    def events(self, events: list[dict]) -> None:
        b = measure_events(events, self.names)
        if b.grants or b.timeouts:
            self.meters.record(self.labels, b)


class Meters:
    """Prometheus's registry and server and the OTel instruments that the plan turned on."""

    def __init__(self, current: Callable[[], Any], *, prometheus: tuple[str, int] | None = None,
                 otel: bool = False, otel_provider: Any = None, now: Callable[[], float] = time.time) -> None:
        self.current = current  # the running test (its plan, started_at, live), or None
        self.now = now
        self.prometheus = PrometheusMeters(self.bound) if prometheus else None
        self.server = MetricsServer(self.prometheus, *prometheus) if self.prometheus and prometheus else None
        self.otel = OtelMeters(self.bound, otel_provider) if otel else None

    @staticmethod
    def for_plan(plan: Any, current: Callable[[], Any]) -> Meters | None:
        t = plan.telemetry
        if not (t.otel or t.prometheus_host):
            return None
        return Meters(current, prometheus=(t.prometheus_host, t.prometheus_port) if t.prometheus_host else None,
                      otel=t.otel)

    def start(self) -> Meters:
        if self.server is not None:
            self.server.start()
            log.info("harness: Prometheus metrics at http://%s:%d/metrics", self.server.host, self.server.port)
        return self

    def watch(self, test: Any) -> None:
        """A test begins: its ``Live`` feeds the meters from now on."""
        test.live.taps.append(Tap(self, run_labels(test.plan)))

    def record(self, labels: dict[str, str], batch: Batch) -> None:
        for exporter in (self.prometheus, self.otel):
            if exporter is not None:
                try:
                    exporter.record(labels, batch)
                except Exception:  # noqa: BLE001 - a meter must never lose the run's rows; say so and go on
                    log.exception("harness: %s could not record a batch", type(exporter).__name__)

    def bound(self) -> tuple[dict[str, str], str, str, float] | None:
        """The running test's bound over its live window: (run labels, kind, resource, utilization)."""
        t = self.current()
        if t is None:
            return None
        chosen = bounds.choose(t.live.window(self.now(), t.started_at).resources)
        if chosen is None:
            return None
        return run_labels(t.plan), chosen.kind, chosen.name, float(chosen.utilization)

    def close(self) -> None:
        """Locust quits: the final numbers scraped (bounded), exported, then the server stopped."""
        if self.server is not None:
            if not self.server.linger():
                log.info("harness: /metrics: no scrape read the final numbers before the end")
            self.server.stop()
        if self.otel is not None:
            self.otel.flush()
