"""The fidelity layer's hooks: latency, faults and throttles in ``before-send``; GSI lag in ``after-call``.

Order per request: the added latency (real waiting), then an injected fault,
then the throttling model. A throttle or a 5xx is a real-looking HTTP response
(DynamoDB's JSON error with ``ThrottlingReasons``, S3's ``503 SlowDown`` XML),
returned from ``before-send`` so botocore parses it and its retry handler
treats it exactly as it would treat AWS's. Reads are billed after they return
(``after-call``), as DynamoDB bills them. GSI lag (``harness.aws.fidelity.gsilag``)
takes the process's too recent writes out of GSI answers before anything else
sees them.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from botocore.awsrequest import AWSResponse

from harness.aws.capacity import Charge, query_key
from harness.aws.fidelity.faults import FaultRates, choose, raise_transport_fault
from harness.aws.fidelity.gsilag import GsiLag
from harness.aws.fidelity.latency import Dist, Profile, gsi_lag_of, load_profile, parse_dist, pick
from harness.aws.fidelity.throttle import DynamoCapacity, DynamoThrottle, S3Rates, S3Throttle, Throttle
from harness.aws.instrument import SHAPES, current_call
from harness.clock import Clock, SystemClock

READ_OPS = {"GetItem", "Query", "Scan", "BatchGetItem"}
DDB_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class FidelityConfig:
    enabled: bool = False
    dynamodb: DynamoCapacity | None = None
    s3: S3Rates | None = None
    latency: str = "local"
    faults: dict[str, FaultRates] = field(default_factory=dict)  # operation (or "*") -> rates
    timeout_after_s: float = 1.0
    probe_every_s: float = 0.0
    gsi_lag: str = ""  # "": the latency profile's (AWS profiles: a lag; local: none) | "off" | a distribution

    def gsi_lag_dist(self, profile: Profile) -> Dist | None:
        """How long after its write an item shows in a GSI, or None (at once)."""
        dist = parse_dist(self.gsi_lag, off=True) if self.gsi_lag else gsi_lag_of(profile)
        return dist if dist is not None and dist.median_ms > 0 else None


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any):
        yield self.body


def _response(url: str, status: int, headers: dict[str, str], body: bytes) -> AWSResponse:
    headers = {"x-amzn-requestid": uuid.uuid4().hex, "content-length": str(len(body)), **headers}
    return AWSResponse(url, status, headers, _Body(body))


def dynamodb_error(url: str, status: int, code: str, message: str, reasons: list[dict] | None = None) -> AWSResponse:
    doc: dict[str, Any] = {"__type": DDB_ERROR_PREFIX + code, "message": message}
    if reasons:
        doc["ThrottlingReasons"] = reasons
    return _response(url, status, {"content-type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code},
                     json.dumps(doc).encode())


def s3_error(url: str, status: int, code: str, message: str) -> AWSResponse:
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>{uuid.uuid4().hex}</RequestId></Error>").encode()
    return _response(url, status, {"content-type": "application/xml"}, body)


def _throttle_response(service: str, url: str, t: Throttle) -> AWSResponse:
    if service == "s3":
        return s3_error(url, t.status, t.code, t.reason)
    arn = f"arn:aws:dynamodb:local:000000000000:table/{t.resource}"
    return dynamodb_error(url, t.status, t.code, f"Throughput exceeds the current capacity ({t.reason})",
                          [{"reason": t.reason, "resource": arn}])


def _s3_prefix(url: str) -> str:
    """``bucket/dir/`` of a path-style key (S3 partitions by key prefix)."""
    path = unquote(urlparse(url).path).lstrip("/")
    return path.rsplit("/", 1)[0] + "/" if "/" in path else path + "/"


def _read_probe(info_op: str, p: dict) -> Charge | None:
    table = p.get("TableName")
    if info_op == "GetItem":
        shape = SHAPES.get(table)
        pk = shape.pk if shape else "pk"
        v = p.get("Key", {}).get(pk, {})
        return Charge(table, None, str(next(iter(v.values()), "")), "read", 0.0)
    if info_op == "Query":
        return Charge(table, p.get("IndexName"), query_key(p), "read", 0.0)
    if info_op == "Scan":
        return Charge(table, p.get("IndexName"), "", "read", 0.0)
    if info_op == "BatchGetItem":
        tables = list(p.get("RequestItems", {}))
        return Charge(tables[0], None, "", "read", 0.0) if tables else None
    return None


class FidelityLayer:
    """One per process: shared by every client it is installed on, so budgets are per process."""

    def __init__(self, cfg: FidelityConfig, *, clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.cfg = cfg
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.profile: Profile = load_profile(cfg.latency)
        self.ddb = DynamoThrottle(cfg.dynamodb, self.clock) if cfg.dynamodb else None
        self.s3 = S3Throttle(cfg.s3, self.clock) if cfg.s3 else None
        self.added_ms = 0.0
        lag = cfg.gsi_lag_dist(self.profile)
        # its own draws: the latency's stay as they were without it
        self.gsi_lag = GsiLag(lag, self.clock, random.Random(repr(self.rng.getstate()))) if lag else None

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
        dist = pick(self.profile, service, op)
        if dist is not None:
            ms = dist.sample_ms(self.rng)
            self.added_ms += ms
            self.clock.sleep(ms / 1000.0)  # the layer's clock: real time by default (cooperative under Locust)
        fault = choose(self.cfg.faults.get(op) or self.cfg.faults.get("*"), self.rng)
        if fault == "error_5xx":
            if service == "s3":
                return s3_error(request.url, 500, "InternalError", "We encountered an internal error.")
            return dynamodb_error(request.url, 500, "InternalServerError", "Internal server error (injected)")
        if fault:
            if fault == "timeout":
                self.clock.sleep(self.cfg.timeout_after_s)
            raise_transport_fault(fault, request)
        throttle = self._throttle(service, op, request)
        return _throttle_response(service, request.url, throttle) if throttle else None

    def _throttle(self, service: str, op: str, request: Any) -> Throttle | None:
        if service == "s3":
            return self.s3.admit(op, _s3_prefix(request.url)) if self.s3 else None
        if self.ddb is None:
            return None
        info = current_call()
        if info is None or info.op != op:
            return None
        if op in READ_OPS:
            probe = _read_probe(op, info.params)
            return self.ddb.admit_read(probe) if probe else None
        return self.ddb.admit_writes(info.writes) if info.writes else None

    def _after_call(self, parsed: Any, model: Any, **_: Any) -> None:
        if self.ddb is None or model.name not in READ_OPS or not isinstance(parsed, dict) or "Error" in parsed:
            return
        info = current_call()
        if info is not None and info.op == model.name:
            self.ddb.charge_reads(info.reads(parsed))
