"""An OTLP/HTTP traces receiver on loopback: ``POST /v1/traces`` (JSON or protobuf), spans joined by trace id.

One per Locust process that runs users (each worker process its own), so a command's spans come back to
the process that started it and join their iteration there, by trace id, before the row travels to the
master like any other. A trace is registered before its command starts (``TraceBook.expect``); a span of a
trace nobody expects (a detached heartbeat's own trace, a stray exporter) is kept as unjoined. A body that
cannot be read is answered 400 and counted (per command, when its URL names it: ``?cmd=<trace id>``); it
never raises into the server.

``Receiver.accept`` is the whole protocol as a pure function of (path, headers, body); ``serve`` puts it
behind gevent's WSGI server, whose greenlets share the Locust process's hub (nothing blocks it).
"""

from __future__ import annotations

import gzip
import json
import logging
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from harness.record.otlp.decode import Malformed, Span, decode, empty_response

log = logging.getLogger("harness")

PATH = "/v1/traces"
MAX_BODY = 32 * 1024 * 1024  # one export request at most (the SDKs' default limit is 64 MiB before compression)
LINGER_S = 30.0  # a finished trace stays registered this long: a straggler still finds its iteration (late)


@dataclass
class Trace:
    """What one command's trace collected: its spans as they came, and whether they came late."""

    trace_id: str
    parent_id: str  # the span id of the TRACEPARENT the command was given (the command's own span)
    meta: dict[str, Any]  # who it belongs to (user, iteration, step, ...): copied onto late spans
    spans: list[Span] = field(default_factory=list)
    rejected: int = 0  # malformed bodies its command posted
    closed_at: float | None = None  # its row was built: spans from now on are late
    late: list[Span] = field(default_factory=list)
    wake: Any = None  # a gevent Event set on every arrival (made by whoever waits)
    last_at: float | None = None  # when its last span came (the book's clock): how long its exporter is quiet

    def complete(self) -> bool:
        """At least one span under the command's own, and no span whose parent has not come."""
        ids = {s.span_id for s in self.spans} | {self.parent_id}
        return any(s.parent_id == self.parent_id for s in self.spans) and all(
            s.parent_id in ids for s in self.spans)


class TraceBook:
    """Traces by id: registered before their command runs, filled by the receiver, closed once their row is
    built, forgotten ``LINGER_S`` after."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.traces: dict[str, Trace] = {}
        self.unjoined: list[Span] = []  # spans of traces nobody registered
        self.late: list[tuple[Trace, Span]] = []  # spans that came after their trace was closed
        self.counts: Counter = Counter()

    def expect(self, trace_id: str, parent_id: str, meta: dict[str, Any]) -> Trace:
        self._forget_old()
        t = self.traces[trace_id] = Trace(trace_id, parent_id, meta)
        return t

    def close(self, t: Trace) -> None:
        t.closed_at = self.clock()

    def add(self, spans: list[Span]) -> None:
        for s in spans:
            t = self.traces.get(s.trace_id)
            self.counts["spans"] += 1
            if t is None:
                self.unjoined.append(s)
                self.counts["unjoined"] += 1
            elif t.closed_at is not None:
                t.late.append(s)
                self.late.append((t, s))
                self.counts["late"] += 1
            else:
                t.spans.append(s)
                t.last_at = self.clock()
        for t in {self.traces[s.trace_id].trace_id: self.traces[s.trace_id] for s in spans
                  if s.trace_id in self.traces}.values():
            if t.wake is not None:
                t.wake.set()

    def reject(self, trace_id: str | None) -> None:
        self.counts["rejected"] += 1
        t = self.traces.get(trace_id or "")
        if t is not None:
            t.rejected += 1
            if t.wake is not None:
                t.wake.set()

    def take_strays(self) -> tuple[list[tuple[Trace, Span]], list[Span]]:
        """The late spans and the unjoined ones since the last call (they go to the spans table as they are)."""
        late, unjoined, self.late, self.unjoined = self.late, self.unjoined, [], []
        return late, unjoined

    def _forget_old(self) -> None:
        now = self.clock()
        old = [k for k, t in self.traces.items() if t.closed_at is not None and now - t.closed_at > LINGER_S]
        for k in old:
            del self.traces[k]


class Receiver:
    """The protocol: POST /v1/traces, JSON or protobuf, gzip or deflate; 200 with an empty response, or 4xx."""

    def __init__(self, book: TraceBook) -> None:
        self.book = book

    def accept(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
               ) -> tuple[int, bytes, str]:
        """(status, body, content type) for one request; never raises for what a client sends."""
        if path.rstrip("/") != PATH:
            return 404, b'{"code":5,"message":"only POST /v1/traces"}', "application/json"
        if method != "POST":
            return 405, b'{"code":12,"message":"POST only"}', "application/json"
        cmd = (parse_qs(query).get("cmd") or [None])[0]
        ctype = headers.get("content-type", "")
        try:
            spans = decode(_inflate(body, headers.get("content-encoding", "")), ctype)
        except Malformed as e:
            self.book.reject(cmd)
            n = self.book.counts["rejected"]
            if n <= 3 or n % 100 == 0:  # the first few, then every hundredth: a bad exporter must not flood the log
                log.warning("harness: OTLP receiver: a malformed body refused (%d so far): %s", n, e)
            return 400, json.dumps({"code": 3, "message": str(e)[:300]}).encode(), "application/json"
        self.book.add(spans)
        out, kind = empty_response(ctype)
        return 200, out, kind


def _inflate(body: bytes, encoding: str) -> bytes:
    enc = (encoding or "").strip().lower()
    try:
        if enc == "gzip":
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error, EOFError) as e:
        raise Malformed(f"the body is not valid {enc}: {e}") from None
    if enc not in ("", "identity"):
        raise Malformed(f"unsupported content-encoding {encoding!r}")
    return body


class Server:
    """``Receiver`` behind gevent's WSGI server on 127.0.0.1 (a free port); ``url`` is what commands are given."""

    def __init__(self, receiver: Receiver, host: str = "127.0.0.1", port: int = 0) -> None:
        from gevent.pywsgi import WSGIServer

        self.receiver = receiver
        self.wsgi = WSGIServer((host, port), self._app, log=None, error_log=log)
        self.wsgi.start()
        self.port = self.wsgi.server_port
        self.url = f"http://{host}:{self.port}{PATH}"

    def _app(self, request: dict, start_response: Callable) -> list[bytes]:
        try:
            length = int(request.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length > MAX_BODY:
            self.receiver.book.reject(None)
            start_response("413 Payload Too Large", [("Content-Type", "application/json")])
            return [b'{"code":8,"message":"body too large"}']
        body = request["wsgi.input"].read(length) if length > 0 else request["wsgi.input"].read()
        headers = {"content-type": request.get("CONTENT_TYPE", ""),
                   "content-encoding": request.get("HTTP_CONTENT_ENCODING", "")}
        try:
            status, out, kind = self.receiver.accept(request.get("REQUEST_METHOD", ""), request.get("PATH_INFO", ""),
                                                     request.get("QUERY_STRING", ""), headers, body)
        except Exception:  # noqa: BLE001 - the receiver must answer, whatever went wrong inside it
            log.exception("harness: OTLP receiver failed on a request")
            status, out, kind = 500, b'{"code":13,"message":"internal error"}', "application/json"
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Error"}
        start_response(f"{status} {reason.get(status, '')}", [("Content-Type", kind),
                                                               ("Content-Length", str(len(out)))])
        return [out]

    def stop(self) -> None:
        self.wsgi.stop(timeout=1)
