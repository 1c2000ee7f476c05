"""The harness's live measurements as OpenTelemetry instruments, through the SDK Locust's ``--otel`` set up.

Locust's ``setup_opentelemetry`` (locust/opentelemetry.py) makes the process's global ``MeterProvider``
from the standard ``OTEL_*`` variables (exporter, endpoint, protocol, interval); these instruments come from
that provider, so they leave with Locust's own ``locust.client.duration`` and ``locust.users.count``, to the
same place. Without ``--otel`` (or with every exporter ``none``) the provider is the API's no-op one and
nothing is sent.

==============================  =================  ==============================================
instrument                      kind               attributes (besides the run's)
==============================  =================  ==============================================
``harness.iterations``          counter            harness.process, harness.outcome, error.type
``harness.step.duration``       histogram (s)      harness.process, harness.step
``harness.step.requests``       counter            harness.process, harness.step
``harness.capacity.units``      counter            harness.process, harness.capacity.kind
``harness.lock.grants``         counter            harness.lock.key (bounded: 20, then ``other``)
``harness.lock.wait``           histogram (s)      harness.lock.key
``harness.lock.timeouts``       counter            harness.lock.key
``harness.bound.utilization``   gauge (1)          harness.bound.kind, harness.bound.resource
==============================  =================  ==============================================

The run's attributes on every point: ``harness.run_id``, ``harness.scenario``, ``harness.backend``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from harness.telemetry.measure import BUCKETS_S, Batch
from harness.telemetry.prometheus import BoundSource

log = logging.getLogger("harness")

METER = "harness"
INSTRUMENTS = ("harness.iterations", "harness.step.duration", "harness.step.requests", "harness.capacity.units",
               "harness.lock.grants", "harness.lock.wait", "harness.lock.timeouts", "harness.bound.utilization")


def _run(run: dict[str, str]) -> dict[str, str]:
    return {f"harness.{k}": v for k, v in run.items()}


class OtelMeters:
    """The harness's instruments on a meter provider (the global one Locust's ``--otel`` set, by default)."""

    def __init__(self, bound: BoundSource, provider: Any = None) -> None:
        from opentelemetry import metrics

        self.provider = provider or metrics.get_meter_provider()
        m = self.provider.get_meter(METER)
        hist: dict[str, Any] = {"explicit_bucket_boundaries_advisory": list(BUCKETS_S)}
        self.iterations = m.create_counter("harness.iterations", unit="{iteration}",
                                           description="Iterations recorded, by outcome and error kind")
        self.steps = m.create_histogram("harness.step.duration", unit="s", description="Duration of each step "
                                        "that ran in an iteration", **hist)
        self.requests = m.create_counter("harness.step.requests", unit="{request}",
                                         description="Requests each step sent to the datastore")
        self.units = m.create_counter("harness.capacity.units", unit="{capacity_unit}",
                                      description="Capacity units the clients counted (read, write)")
        self.grants = m.create_counter("harness.lock.grants", unit="{grant}", description="Lock grants per key")
        self.waits = m.create_histogram("harness.lock.wait", unit="s", description="Wait from asking for a lock "
                                        "to its grant", **hist)
        self.timeouts = m.create_counter("harness.lock.timeouts", unit="{timeout}",
                                         description="Lock waits that timed out")
        self.bound = bound
        m.create_observable_gauge("harness.bound.utilization", callbacks=[self._observe_bound], unit="1",
                                  description="Utilization (0-1) of the resource that bounds the fleet over the "
                                  "live window (the report's rule)")

    def _observe_bound(self, options: Any) -> Iterator[Any]:
        from opentelemetry.metrics import Observation

        try:
            found = self.bound()
        except Exception:  # noqa: BLE001 - an export must not fail because the live numbers could not be read
            log.exception("harness: OpenTelemetry: the bound could not be read")
            return
        if found is not None:
            run, kind, name, utilization = found
            yield Observation(utilization, {**_run(run), "harness.bound.kind": kind, "harness.bound.resource": name})

    def record(self, run: dict[str, str], b: Batch) -> None:
        base = _run(run)
        for (process, outcome, kind), n in b.iterations.items():
            attrs = {**base, "harness.process": process, "harness.outcome": outcome}
            if kind:
                attrs["error.type"] = kind
            self.iterations.add(n, attrs)
        for process, step, seconds in b.steps:
            self.steps.record(seconds, {**base, "harness.process": process, "harness.step": step})
        for (process, step), n in b.requests.items():
            self.requests.add(n, {**base, "harness.process": process, "harness.step": step})
        for (process, kind), v in b.units.items():
            self.units.add(v, {**base, "harness.process": process, "harness.capacity.kind": kind})
        for key, n in b.grants.items():
            self.grants.add(n, {**base, "harness.lock.key": key})
        for key, seconds in b.waits:
            self.waits.record(seconds, {**base, "harness.lock.key": key})
        for key, n in b.timeouts.items():
            self.timeouts.add(n, {**base, "harness.lock.key": key})

    def flush(self, timeout_ms: int = 5000, flush: Callable[..., Any] | None = None) -> None:
        """Export what is recorded now (the SDK's provider; the API's no-op one has nothing to flush)."""
        fn = flush or getattr(self.provider, "force_flush", None)
        if fn is None:
            return
        try:
            fn(timeout_millis=timeout_ms)
        except Exception:  # noqa: BLE001 - an exporter that cannot reach its endpoint must not fail the run
            log.exception("harness: OpenTelemetry: the last export failed")
