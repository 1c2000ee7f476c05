"""The loopback front: a transparent proxy per user between any client and the service, applying the fidelity model.

Each user (a command-driver worker, or any process given its URL) has a seat: a
loopback port of its own, serving both services (a request with ``X-Amz-Target``
is DynamoDB's JSON protocol, any other is S3's REST), so what a port carried is
what that user sent, counted per user (``WireCounts``) and per partition key
(``KeyLoad``, the rows of ``keys.csv``). Per request, the same ``FidelityModel``
the botocore layer calls decides: the added latency (an ``asyncio`` sleep, so
one request's wait holds up no other), an injected fault, a throttle (answered
with DynamoDB's or S3's own error), else the request goes upstream unchanged
(its ``Host`` header too: a signature stays valid) and its answer comes back,
reads billed on it and GSI answers lagged as the layer lags them.

Its control port (``GET /health``, ``POST /seat?user=NAME``, ``GET /counts``,
``GET /keys``, ``GET /model``) is how the harness seats users and reads counts.
It runs in a process of its own (``harness.aws.front.launch``): asyncio in a thread
of a gevent-patched Locust process would share one core with the load and be
stalled by it, and a process is started, watched and stopped like the stand-ins.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import socket
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.aws.fidelity.model import READ_OPS, FidelityModel, Reply, Verdict
from harness.aws.front.counts import WireCounts
from harness.aws.front.services import (
    DDB_TARGET,
    S3_WRITES,
    ddb_charges,
    ddb_request,
    learn_shape,
    price,
    s3_op,
    tables_of,
    throttled_keys,
)
from harness.aws.front.upstream import Upstream
from harness.aws.front.wire import Message, WireError, read_body, read_head, read_message
from harness.aws.instrument import SHAPES, WRITE_OPS, CallInfo
from harness.aws.keyload import THROTTLE_CODES, KeyLoad

log = logging.getLogger("harness.aws.front")
HOST = "127.0.0.1"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
S3_THROTTLE = b"<Code>SlowDown</Code>"
Sleep = Callable[[float], Awaitable[None]]
OWN_SAMPLES = 20_000
ASK_AGAIN_S = 1.0  # a table DescribeTable did not find is asked about again after this long
_WAITED: contextvars.ContextVar[list[float]] = contextvars.ContextVar("front_waited")  # per connection's task


def _waited(s: float) -> None:
    """Time this request spent waiting (the model's latency, the upstream): not the front's own."""
    w = _WAITED.get(None)
    if w is not None:
        w[0] += s


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection reaches a client."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


def _parsed(answer: Message) -> dict:
    try:
        doc = json.loads(answer.body) if answer.body else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _reply_bytes(reply: Reply) -> bytes:
    reason = {400: "Bad Request", 500: "Internal Server Error", 503: "Slow Down"}.get(reply.status, "Error")
    head = [f"HTTP/1.1 {reply.status} {reason}".encode()]
    head += [f"{k}: {v}".encode() for k, v in reply.headers.items()]
    return b"\r\n".join(head) + b"\r\n\r\n" + reply.body


class Front:
    """One model, one upstream per service, a seat (port) per user."""

    def __init__(self, model: FidelityModel, upstreams: dict[str, str], *, sleep: Sleep | None = None,
                 keyload: KeyLoad | None = None) -> None:
        self.model = model
        self.upstreams = {s: Upstream(u) for s, u in upstreams.items() if u}
        self.sleep: Sleep = sleep or asyncio.sleep
        self.keyload = keyload or KeyLoad()
        self.counts: dict[str, WireCounts] = {}
        self.ports: dict[str, int] = {}
        self._servers: list[asyncio.base_events.Server] = []
        self.control_port = 0
        self.requests = 0
        # the front's own time per request (reading it, the model, forwarding, accounting, writing the answer),
        # without the modelled wait and the upstream's: its cost, as bench/front.py reports it
        self.own_ms: deque[float] = deque(maxlen=OWN_SAMPLES)
        self._asked: dict[str, float] = {}  # table -> when the front last asked DescribeTable

    # ---- start, seats, stop ----------------------------------------------------------------------

    async def start(self, control_port: int = 0) -> int:
        server = await asyncio.start_server(self._control, HOST, control_port)
        self._servers.append(server)
        self.control_port = server.sockets[0].getsockname()[1]
        return self.control_port

    async def seat(self, user: str) -> int:
        """``user``'s port (opened on first asking)."""
        port = self.ports.get(user)
        if port is None:
            self.counts.setdefault(user, WireCounts())

            async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                await self._serve(user, r, w)

            server = await asyncio.start_server(serve, HOST, 0, limit=1 << 20)
            self._servers.append(server)
            port = self.ports[user] = server.sockets[0].getsockname()[1]
        return port

    async def stop(self) -> None:
        for s in self._servers:
            s.close()
        for u in self.upstreams.values():
            u.close()

    # ---- one user's connection ---------------------------------------------------------------------

    async def _serve(self, user: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                req = await read_head(reader)
                if req is None:
                    break
                if req.header(b"expect").lower() == b"100-continue":
                    writer.write(CONTINUE)
                t0 = time.perf_counter()
                await read_body(reader, req, request=True)
                waited = [0.0]
                _WAITED.set(waited)
                out = await self.handle(user, req)
                if out is None:  # a fault: the connection is reset without an answer
                    _reset(writer)
                    return
                writer.write(out)
                self.own_ms.append((time.perf_counter() - t0 - waited[0]) * 1000)
                await writer.drain()
                if req.close:
                    break
        except (ConnectionError, WireError, asyncio.IncompleteReadError) as e:
            log.debug("front: %s: %s", user, e)
        except asyncio.CancelledError:  # the front stops: the connection ends with it (not an error)
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()

    async def handle(self, user: str, req: Message) -> bytes | None:
        """One request of ``user``: the model's answer, or the upstream's; None to drop the connection."""
        self.requests += 1
        counts = self.counts.setdefault(user, WireCounts())
        target = req.header(DDB_TARGET)
        counts.requests += 1
        sent = req.header(b"x-amz-decoded-content-length")
        counts.bytes_sent += int(sent) if sent.isdigit() else len(req.body)
        if target:
            return await self._dynamodb(counts, req, target)
        return await self._s3(counts, req)

    async def _wait_and_decide(self, counts: WireCounts, service: str, op: str,
                               **kw: Any) -> tuple[Verdict | None, bytes | None]:
        """The latency, then the model's verdict and the bytes that answer it (None: drop the connection);
        (None, None): send it on."""
        counts.kinds[f"{service}.{op}"] = counts.kinds.get(f"{service}.{op}", 0) + 1
        ms = self.model.latency_ms(service, op)
        if ms:
            t0 = time.perf_counter()
            await self.sleep(ms / 1000.0)
            _waited(time.perf_counter() - t0)
        verdict = self.model.decide(service, op, **kw)
        if verdict is not None and verdict.kind == "spike":
            t0 = time.perf_counter()
            await self.sleep(self.model.cfg.spike_s)
            _waited(time.perf_counter() - t0)
            verdict = self.model.decide(service, op, faults=False, **kw)
        if verdict is None:
            return None, None
        if verdict.kind == "lost":  # it goes upstream; its answer is dropped there
            counts.errors += 1
            return verdict, None
        if verdict.throttle is not None:
            counts.throttles += 1
        else:
            counts.errors += 1
        if verdict.reply is not None:
            counts.bytes_received += len(verdict.reply.body)
            return verdict, _reply_bytes(verdict.reply)
        if verdict.kind == "timeout":
            await self.sleep(self.model.cfg.timeout_after_s)
        return verdict, None

    async def _dynamodb(self, counts: WireCounts, req: Message, target: bytes) -> bytes | None:
        info = ddb_request(target, req.body)
        await self._shapes(req, info)
        price(info)  # with the shapes known now
        if info.op in WRITE_OPS:
            counts.write_requests += 1
        verdict, out = await self._wait_and_decide(counts, "dynamodb", info.op, params=info.params,
                                                   writes=info.writes)
        if verdict is not None and verdict.kind != "lost":
            if verdict.throttle is not None:
                self.keyload.throttled(throttled_keys(info, verdict.throttle.code))
            return out
        answer = await self._upstream("dynamodb", req.encode())
        if verdict is not None:  # lost: applied upstream, the answer never reaches the client
            self._account_ddb(counts, info, answer)
            return None
        body = self._account_ddb(counts, info, answer)
        if body is not None:
            answer.body = body
        counts.bytes_received += len(answer.body)
        return answer.encode()

    async def _upstream(self, service: str, data: bytes, head: bool = False) -> Message:
        t0 = time.perf_counter()
        try:
            return await self.upstreams[service].send(data, head=head)
        finally:
            _waited(time.perf_counter() - t0)

    def _account_ddb(self, counts: WireCounts, info: CallInfo, answer: Message) -> bytes | None:
        """Units, throttles, shapes and GSI lag from an answer; its new body when the lag changed it."""
        status = answer.status
        parsed = _parsed(answer) if self._reads_answer(info, status) else None
        new_body = self._lagged(info, parsed) if status == 200 and parsed is not None else None
        charges, code = ddb_charges(info, status, parsed)
        if code in THROTTLE_CODES:  # the upstream's own throttle
            counts.throttles += 1
            self.keyload.throttled(throttled_keys(info, code))
        if charges:
            self.keyload.charge(charges)
            for c in charges:
                if c.kind == "read":
                    counts.read_units += c.units
                else:
                    counts.write_units += c.units
            if status == 200 and info.op in READ_OPS:
                self.model.charge_reads([c for c in charges if c.kind == "read"])
        return new_body

    def _reads_answer(self, info: CallInfo, status: int) -> bool:
        """Whether the answer's JSON is needed (a write's plain ``{}`` need not be parsed)."""
        if status != 200 or info.op in READ_OPS or info.op in ("DescribeTable", "CreateTable"):
            return True
        if info.op == "UpdateItem" and info.params.get("ReturnValues") == "ALL_NEW":
            return True
        return self.model.gsi_lag is not None and info.op in WRITE_OPS

    def _lagged(self, info: CallInfo, parsed: dict) -> bytes | None:
        """A successful answer: the table's shape learnt, GSI lag applied; the new body if items were held back."""
        learn_shape(info.op, parsed)
        lag = self.model.gsi_lag
        if lag is None:
            return None
        if info.op in ("Query", "Scan"):
            hidden = lag.hidden
            lag.on_read(info.params, parsed)
            return json.dumps(parsed).encode() if lag.hidden != hidden else None
        if info.op in WRITE_OPS:
            lag.on_write(info.op, info.params, parsed)
        return None

    async def _shapes(self, req: Message, info: CallInfo) -> None:
        """Ask DescribeTable for a table the front has not seen described (its keys and GSIs price writes); a
        table not there yet is priced with the default keys (``pk`` / ``sk``) and asked about again a second
        later (it may be made by a client that does not go through the front)."""
        now = time.monotonic()
        for table in tables_of(info) - set(SHAPES):
            if now - self._asked.get(table, -ASK_AGAIN_S) < ASK_AGAIN_S:
                continue
            self._asked[table] = now
            body = json.dumps({"TableName": table}).encode()
            headers = [(k, v) for k, v in req.headers if k.lower() in (b"host", b"authorization", b"x-amz-date")]
            headers += [(b"content-type", b"application/x-amz-json-1.0"),
                        (DDB_TARGET, b"DynamoDB_20120810.DescribeTable")]
            ask = Message(b"POST / HTTP/1.1", headers, body)
            try:
                answer = await self.upstreams["dynamodb"].send(ask.encode())
                parsed = json.loads(answer.body or b"{}")
            except (OSError, WireError, ValueError) as e:
                log.warning("front: DescribeTable %s: %s", table, e)
                continue
            if answer.status == 200:
                learn_shape("DescribeTable", parsed)

    async def _s3(self, counts: WireCounts, req: Message) -> bytes | None:
        method, target, _ = req.first.decode("latin-1").split(" ", 2)
        op, prefix = s3_op(method, target)
        if op == "PutObject" and req.header(b"x-amz-copy-source"):
            op = "CopyObject"
        if op in S3_WRITES:
            counts.write_requests += 1
        verdict, out = await self._wait_and_decide(counts, "s3", op, prefix=prefix)
        if verdict is not None and verdict.kind != "lost":
            return out
        head = method == "HEAD"
        answer = await self._upstream("s3", req.encode(), head=head)
        if verdict is not None:  # lost
            return None
        if answer.status == 503 and S3_THROTTLE in answer.body:
            counts.throttles += 1
        counts.bytes_received += len(answer.body)
        return answer.encode_head_only() if head else answer.encode()

    # ---- control -----------------------------------------------------------------------------------

    async def _control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                req = await read_message(reader, request=True)
                if req is None:
                    break
                status, doc = await self._control_answer(req)
                body = json.dumps(doc).encode()
                writer.write(Message(f"HTTP/1.1 {status} OK".encode(),
                                     [(b"content-type", b"application/json")], body).encode())
                await writer.drain()
        except (ConnectionError, WireError):
            pass
        finally:
            writer.close()

    async def _control_answer(self, req: Message) -> tuple[int, Any]:
        method, target, _ = req.first.decode("latin-1").split(" ", 2)
        u = urlsplit(target)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        user = q.get("user", "")
        if u.path == "/health":
            return 200, {"ok": True, "users": len(self.ports), "requests": self.requests}
        if u.path == "/seat" and user:
            return 200, {"user": user, "port": await self.seat(user)}
        if u.path == "/counts":
            if user:
                return 200, self.counts.get(user, WireCounts()).to_dict()
            return 200, {k: c.to_dict() for k, c in self.counts.items()}
        if u.path == "/keys":
            return 200, self.keyload.drain(time.time())
        if u.path == "/model":
            own = sorted(self.own_ms)
            q = {f"own_ms_p{int(x * 100)}": own[min(len(own) - 1, int(x * len(own)))] if own else None
                 for x in (0.5, 0.99)}
            return 200, {"throttles": self.model.throttle_count(), "added_ms": self.model.added_ms,
                         "requests": self.requests, **q}
        return 404, {"error": f"no {method} {u.path}"}
