"""``harness run``'s live metrics and what AWS measured: ``--otel``, ``--prometheus``, ``--cloudwatch-wait``.

Kept beside ``harness.cli.run`` like ``harness.cli.open``: ``add_arguments`` adds them to ``harness run`` and
``options`` reads them back into the run's options (``harness.config.telemetry`` checks and plans them).
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.parser import duration_or_zero
from harness.config.telemetry import CLOUDWATCH_WAIT_S


def add_arguments(r: argparse.ArgumentParser) -> None:
    t = r.add_argument_group("live metrics", "where operators already look: OpenTelemetry and Prometheus while the "
                             "run runs, CloudWatch after it (docs/live-metrics.md)")
    t.add_argument("--otel", action="store_true", help="Locust's OpenTelemetry instrumentation (its --otel) and the "
                   "harness's meters, sent where the standard OTEL_* variables say (OTEL_EXPORTER_OTLP_ENDPOINT, "
                   "..._PROTOCOL); also the scenario's [observe] otel = true")
    t.add_argument("--prometheus", metavar="HOST:PORT", help="serve /metrics in Prometheus's text format from the "
                   "Locust master on HOST:PORT (a bare PORT: 127.0.0.1); the web UI links it")
    t.add_argument("--cloudwatch-wait", type=duration_or_zero, default=CLOUDWATCH_WAIT_S, metavar="DURATION",
                   help="an --aws run: after the load, wait at most this long for CloudWatch's data, then write "
                   f"cloudwatch.csv (default {CLOUDWATCH_WAIT_S:g}s; 0 skips it: `harness report RUN_DIR "
                   "--cloudwatch` reads it later)")


def options(args: argparse.Namespace) -> dict[str, Any]:
    return {"otel": args.otel, "prometheus": args.prometheus, "cloudwatch_wait_s": args.cloudwatch_wait}
