"""The fidelity layer's hooks: the fidelity model (``harness.aws.fidelity.model``) in botocore's events.

Order per request: the added latency (real waiting), then an injected fault,
then the throttling model, all decided by the one ``FidelityModel`` the loopback
front (``harness.aws.front``) also calls. A throttle or a 5xx is a real-looking HTTP
response (DynamoDB's JSON error with ``ThrottlingReasons``, S3's ``503 SlowDown``
XML), returned from ``before-send`` so botocore parses it and its retry handler
treats it exactly as it would treat AWS's. Reads are billed after they return
(``after-call``), as DynamoDB bills them. GSI lag (``harness.aws.fidelity.gsilag``)
takes the process's too recent writes out of GSI answers before anything else
sees them.
"""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import unquote, urlparse

import urllib3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

from harness.aws.fidelity.faults import raise_transport_fault
from harness.aws.fidelity.model import (
    READ_OPS,
    FidelityConfig,
    FidelityModel,
    Reply,
    dynamodb_reply,
    s3_reply,
)
from harness.aws.instrument import current_call
from harness.core.clock import Clock

__all__ = ["FidelityConfig", "FidelityLayer", "READ_OPS", "dynamodb_error", "s3_error",
           "s3_prefix"]


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any):
        yield self.body


def _response(url: str, reply: Reply) -> AWSResponse:
    return AWSResponse(url, reply.status, dict(reply.headers), _Body(reply.body))


def dynamodb_error(url: str, status: int, code: str, message: str, reasons: list[dict] | None = None) -> AWSResponse:
    return _response(url, dynamodb_reply(status, code, message, reasons))


def s3_error(url: str, status: int, code: str, message: str) -> AWSResponse:
    return _response(url, s3_reply(status, code, message))


def s3_prefix(path: str) -> str:
    """``bucket/dir/`` of a path-style key (S3 partitions by key prefix)."""
    path = unquote(urlparse(path).path).lstrip("/")
    return path.rsplit("/", 1)[0] + "/" if "/" in path else path + "/"


def land(request: Any) -> None:
    """Send ``request`` as it is and drop its answer (a lost answer: the request applied, its answer gone)."""
    body = request.body
    if body is not None and not isinstance(body, (bytes, str)):
        body = body.read()
    with urllib3.PoolManager(retries=False) as pool:
        pool.request(request.method, request.url, body=body, headers=dict(request.headers), preload_content=True)


class FidelityLayer:
    """One per process: shared by every client it is installed on, so budgets are per process. The model it
    applies is ``self.model``; its parts are here under their old names (``ddb``, ``s3``, ``gsi_lag``)."""

    def __init__(self, cfg: FidelityConfig, *, clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.cfg = cfg
        self.model = FidelityModel(cfg, clock=clock, rng=rng)
        self.clock, self.rng, self.profile = self.model.clock, self.model.rng, self.model.profile
        self.ddb, self.s3, self.gsi_lag = self.model.ddb, self.model.s3, self.model.gsi_lag

    @property
    def added_ms(self) -> float:
        return self.model.added_ms

    def install(self, client: Any) -> Any:
        """Hook this layer into ``client`` (once; a service the run does not use has no client: None)."""
        if client is None or not self.cfg.enabled or getattr(client, "_harness_fidelity", None) is self:
            return client
        service = client.meta.service_model.service_name
        ev = client.meta.events
        ev.register(f"before-send.{service}", self._before_send, unique_id=f"harness-fidelity-{id(self)}")
        if service == "dynamodb":
            ev.register("after-call.dynamodb", self._after_call, unique_id=f"harness-bill-{id(self)}")
            if self.gsi_lag is not None:  # first: accounting and billing see the answer the caller gets
                ev.register("before-parameter-build.dynamodb", self.gsi_lag.before_parameter_build,
                            unique_id=f"harness-gsi-lag-params-{id(self)}")
                ev.register_first("after-call.dynamodb", self.gsi_lag.after_call,
                                  unique_id=f"harness-gsi-lag-{id(self)}")
        client._harness_fidelity = self
        return client

    # ---- hooks -------------------------------------------------------------------
    def _before_send(self, request: Any, event_name: str, **_: Any) -> AWSResponse | None:
        _, service, op = event_name.split(".", 2)
        ms = self.model.latency_ms(service, op)
        if ms is not None:
            self.clock.sleep(ms / 1000.0)  # the layer's clock: real time by default (cooperative under Locust)
        if service == "s3":
            kw: dict[str, Any] = {"prefix": s3_prefix(request.url)}
        else:
            info = current_call()
            known = info is not None and info.op == op
            kw = {"params": info.params if known else None, "writes": info.writes if known else None}
        verdict = self.model.decide(service, op, **kw)
        if verdict is not None and verdict.kind == "spike":
            self.clock.sleep(self.cfg.spike_s)
            verdict = self.model.decide(service, op, faults=False, **kw)
        if verdict is None:
            return None
        if verdict.reply is not None:
            return _response(request.url, verdict.reply)
        if verdict.kind == "timeout":
            self.clock.sleep(self.cfg.timeout_after_s)
        elif verdict.kind == "lost":
            land(request)
            raise ReadTimeoutError(endpoint_url=request.url)
        raise_transport_fault(verdict.kind, request)
        return None

    def _after_call(self, parsed: Any, model: Any, **_: Any) -> None:
        if self.ddb is None or model.name not in READ_OPS or not isinstance(parsed, dict) or "Error" in parsed:
            return
        info = current_call()
        if info is not None and info.op == model.name:
            self.model.charge_reads(info.reads(parsed))
