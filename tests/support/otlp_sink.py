"""A tiny OTLP/HTTP receiver on loopback for the tests: it keeps every metrics export, decoded.

Accepts ``POST /v1/metrics`` (protobuf, or JSON when the content type says so), ``/v1/traces`` and
``/v1/logs`` (answered, counted, not decoded), so a real ``--otel`` run can be pointed at it with
``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT`` and ``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.json_format import MessageToDict, Parse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)


@dataclass
class Point:
    """One data point of one export: its metric, kind, attributes, resource and value (sum/count)."""

    metric: str
    kind: str  # sum | gauge | histogram
    unit: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    value: float  # a sum's or gauge's value; a histogram's sum
    count: int = 0  # a histogram's count
    time_ns: int = 0


@dataclass
class Sink:
    exports: list[ExportMetricsServiceRequest] = field(default_factory=list)
    paths: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def points(self) -> list[Point]:
        with self.lock:
            exports = list(self.exports)
        out = []
        for req in exports:
            for rm in req.resource_metrics:
                res = _attrs(rm.resource.attributes)
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        data = getattr(m, kind)
                        for p in data.data_points:
                            if kind == "histogram":
                                out.append(Point(m.name, kind, m.unit, _attrs(p.attributes), res, p.sum, p.count,
                                                 p.time_unix_nano))
                            else:
                                v = p.as_double if p.WhichOneof("value") == "as_double" else p.as_int
                                out.append(Point(m.name, kind, m.unit, _attrs(p.attributes), res, float(v), 0,
                                                 p.time_unix_nano))
        return out

    def last(self, metric: str) -> dict[tuple, Point]:
        """The latest point of ``metric`` per attribute set (cumulative temporality: the run's totals)."""
        out: dict[tuple, Point] = {}
        for p in self.points():
            if p.metric == metric:
                key = tuple(sorted(p.attributes.items()))
                if key not in out or p.time_ns >= out[key].time_ns:
                    out[key] = p
        return out


def _attrs(kvs: Any) -> dict[str, Any]:
    out = {}
    for kv in kvs:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value")) if v.WhichOneof("value") else None
    return out


def serve() -> tuple[ThreadingHTTPServer, Sink]:
    """A started receiver on 127.0.0.1 (its port: ``server.server_address[1]``); ``shutdown()`` it after."""
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with sink.lock:
                sink.paths[self.path] = sink.paths.get(self.path, 0) + 1
            if self.path == "/v1/metrics":
                req = ExportMetricsServiceRequest()
                if "json" in (self.headers.get("Content-Type") or ""):
                    Parse(body.decode(), req)
                else:
                    req.ParseFromString(body)
                with sink.lock:
                    sink.exports.append(req)
            if "json" in (self.headers.get("Content-Type") or ""):
                payload, ctype = json.dumps(MessageToDict(ExportMetricsServiceResponse())).encode(), "application/json"
            else:
                payload, ctype = ExportMetricsServiceResponse().SerializeToString(), "application/x-protobuf"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, sink
