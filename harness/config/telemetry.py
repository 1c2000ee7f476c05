"""The run plan's live metrics and what AWS measured: ``--otel``, ``--prometheus HOST:PORT``, ``--cloudwatch-wait``.

Settled once by the command (``plan_run``), carried in ``plan.json`` to the Locust master, which serves
``/metrics`` and records the harness's OpenTelemetry meters (``harness.telemetry``); ``harness run`` reads
CloudWatch after an ``--aws`` run's load. Nothing is served or sent unless asked: every field's default is off.

Where OpenTelemetry sends is the standard ``OTEL_*`` variables' business (read by the SDK in the Locust
processes, which inherit the command's environment); the plan keeps only a line saying where, for the run's
output, never a header (``OTEL_EXPORTER_OTLP_HEADERS`` may carry a token).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from harness.core.errors import HarnessError

DEFAULT_HOST = "127.0.0.1"  # --prometheus PORT: loopback unless a host is given
CLOUDWATCH_WAIT_S = 180.0  # --aws: CloudWatch's data lags the load by minutes; wait at most this long for it


@dataclass(frozen=True)
class TelemetryPlan:
    """What the run shows outside itself while it runs, and what it reads from AWS after."""

    otel: bool = False  # --otel or the scenario's [observe] otel: Locust's --otel and the harness's meters
    otel_to: str = ""  # where the metrics go, as the OTEL_* variables say (a line for the run's output)
    prometheus_host: str | None = None  # --prometheus HOST:PORT: the master's /metrics (None: off)
    prometheus_port: int = 0
    cloudwatch_wait_s: float = CLOUDWATCH_WAIT_S  # an --aws run: the bounded wait for CloudWatch's data (0: skip)

    @property
    def prometheus(self) -> str | None:
        """``http://HOST:PORT/metrics``, or None when Prometheus is off."""
        if self.prometheus_host is None:
            return None
        host = f"[{self.prometheus_host}]" if ":" in self.prometheus_host else self.prometheus_host
        return f"http://{host}:{self.prometheus_port}/metrics"


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` as (host, port); a bare port is on loopback."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise HarnessError(f"--prometheus {text}: give HOST:PORT or PORT (1-65535), e.g. --prometheus 9646 "
                           "(loopback) or --prometheus 0.0.0.0:9646")
    return host, number


def check_free(host: str, port: int) -> None:
    """The port can be listened on now (a one-line error before anything starts, not a master that dies)."""
    family = socket.AF_INET6 if _is_v6(host) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise HarnessError(f"--prometheus {host}:{port}: cannot listen there ({e.strerror or e}): choose "
                               "another port, or stop what holds it") from None


def _is_v6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def otel_destination(variables: Mapping[str, str]) -> str:
    """Where the OTLP metrics go, in words, from the ``OTEL_*`` variables (endpoint and protocol, no headers)."""
    exporters = variables.get("OTEL_METRICS_EXPORTER", "otlp")
    if exporters.strip().lower() == "none":
        return "nowhere (OTEL_METRICS_EXPORTER=none)"
    protocol = variables.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") or variables.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    endpoint = variables.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or variables.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    protocol = protocol or "grpc"
    default = "http://localhost:4318" if protocol.startswith("http") else "http://localhost:4317"
    return f"{endpoint or default + ' (the SDK default)'} over OTLP/{protocol} (exporters: {exporters})"


def telemetry_plan(*, otel: bool, prometheus: str | None, cloudwatch_wait_s: float,
                   otel_variables: Mapping[str, str]) -> TelemetryPlan:
    """The plan's telemetry from the command line (and the scenario's [observe] otel), every input checked."""
    if cloudwatch_wait_s < 0:
        raise HarnessError(f"--cloudwatch-wait must be 0 or more, got {cloudwatch_wait_s:g} s")
    host, port = parse_listen(prometheus) if prometheus else (None, 0)
    if host is not None:
        check_free(host, port)
    return TelemetryPlan(otel=otel, otel_to=otel_destination(otel_variables) if otel else "",
                         prometheus_host=host, prometheus_port=port, cloudwatch_wait_s=cloudwatch_wait_s)
