"""A DynamoDB that answers instantly, in-process (a botocore hook) or over HTTP.

Answers come from ``InstantDynamo`` (bench/instant_store.py), a small
in-memory DynamoDB, so whatever requests the harness sends get DynamoDB's
answers (a sealed sequence, a failed condition, a page of a query) rather
than canned ones. boto3 still serializes, signs and parses every call; in
process nothing leaves it. Used to measure the harness's own CPU against
boto3's, and the rate a single Locust process can drive when the backend
costs nothing. The store keeps its own CPU time (``cpu_s``) so a benchmark
can leave it out of the client's.
"""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.awsrequest import AWSResponse

from bench.instant_store import InstantDynamo

CONTENT_TYPE = "application/x-amz-json-1.0"


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any):
        yield self.body


def _headers(status: int, body: bytes, payload: dict) -> dict[str, str]:
    h = {"x-amzn-requestid": "instant", "content-type": CONTENT_TYPE, "content-length": str(len(body))}
    if status != 200:
        h["x-amzn-ErrorType"] = payload.get("__type", "").rsplit("#", 1)[-1]
    return h


def answer(store: InstantDynamo, op: str, raw: bytes | str | None) -> tuple[int, dict[str, str], bytes]:
    """One request in DynamoDB's JSON protocol -> (status, headers, body).

    Its JSON work is the backend's, like the store's: counted in ``store.cpu_s`` (whose ``handle`` counts its
    own), so a benchmark leaves the whole stand-in out of the client's CPU.
    """
    t0 = time.thread_time()
    req = json.loads(raw or b"{}")
    t1 = time.thread_time()
    status, payload = store.handle(op, req)
    t2 = time.thread_time()
    body = json.dumps(payload).encode()
    headers = _headers(status, body, payload)
    store.cpu_s += (t1 - t0) + (time.thread_time() - t2)
    return status, headers, body


def install(client: Any, store: InstantDynamo | None = None) -> InstantDynamo:
    """Make ``client`` (a DynamoDB client) answer every call from ``store``, after the harness's own hooks."""
    store = store or InstantDynamo()

    def _answer(request: Any, event_name: str, **_: Any) -> AWSResponse:
        op = event_name.rsplit(".", 1)[-1]
        status, headers, body = answer(store, op, request.body)
        return AWSResponse(request.url, status, headers, _Raw(body))

    client.meta.events.register_last("before-send.dynamodb", _answer, unique_id="bench-instant")
    return store


def serve(host: str = "127.0.0.1", port: int = 0) -> None:
    """An instant DynamoDB over real HTTP (keep-alive, TCP_NODELAY); prints ``READY <url>``."""
    import os
    import socket

    from gevent.pywsgi import WSGIHandler, WSGIServer

    store = InstantDynamo()

    class NoDelay(WSGIHandler):
        def handle(self) -> None:
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().handle()

    def app(environ: dict, start_response: Any) -> list[bytes]:
        op = environ.get("HTTP_X_AMZ_TARGET", ".").rsplit(".", 1)[-1]
        status, headers, body = answer(store, op, environ["wsgi.input"].read())
        start_response("200 OK" if status == 200 else f"{status} Error", list(headers.items()))
        return [body]

    server = WSGIServer((host, port), app, handler_class=NoDelay, log=None, error_log=None)
    server.start()
    os.write(1, f"READY http://{host}:{server.server_port}\n".encode())
    server.serve_forever()


if __name__ == "__main__":
    serve()
