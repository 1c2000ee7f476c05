"""The fidelity model: one object that decides, per request, its added latency, its fault and its throttle.

Two seams put it in front of a service, and both call this one object, so the
harness's own clients and any other process meet the same model:

- the botocore hooks (``harness.aws.fidelity.layer``): the harness's own clients;
- the loopback front (``harness.aws.front``): any process, on the wire.

A seam asks, in this order: ``latency_ms`` (it waits that long itself: real
sleep under botocore, an ``asyncio`` sleep in the front), then ``decide`` (an
injected fault, else a throttle, else None: send it), and after a successful
read ``charge_reads`` (DynamoDB bills reads on what came back). An error the
model sends is a ``Reply``: the status, headers and body DynamoDB or S3 would
send (DynamoDB's JSON ``__type`` with ``ThrottlingReasons``, S3's XML
``SlowDown``), which each seam hands to its client in its own way.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from harness.aws.capacity import Charge, query_key
from harness.aws.fidelity.faults import FaultRates, choose
from harness.aws.fidelity.gsilag import GsiLag
from harness.aws.fidelity.latency import Dist, Profile, gsi_lag_of, load_profile, parse_dist, pick
from harness.aws.fidelity.throttle import DynamoCapacity, DynamoThrottle, S3Rates, S3Throttle, Throttle
from harness.aws.instrument import SHAPES
from harness.core.clock import Clock, SystemClock

READ_OPS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})
DDB_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
DDB_JSON = "application/x-amz-json-1.0"


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
    spike_s: float = 1.0  # what an injected latency spike adds

    def gsi_lag_dist(self, profile: Profile) -> Dist | None:
        """How long after its write an item shows in a GSI, or None (at once)."""
        dist = parse_dist(self.gsi_lag, off=True) if self.gsi_lag else gsi_lag_of(profile)
        return dist if dist is not None and dist.median_ms > 0 else None


@dataclass(frozen=True)
class Reply:
    """An answer the model gives instead of the service's: what goes on the wire."""

    status: int
    headers: dict[str, str]
    body: bytes


def _reply(status: int, headers: dict[str, str], body: bytes) -> Reply:
    return Reply(status, {"x-amzn-requestid": uuid.uuid4().hex, "content-length": str(len(body)), **headers}, body)


def dynamodb_reply(status: int, code: str, message: str, reasons: list[dict] | None = None) -> Reply:
    doc: dict[str, Any] = {"__type": DDB_ERROR_PREFIX + code, "message": message}
    if reasons:
        doc["ThrottlingReasons"] = reasons
    return _reply(status, {"content-type": DDB_JSON, "x-amzn-ErrorType": code}, json.dumps(doc).encode())


def s3_reply(status: int, code: str, message: str) -> Reply:
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>{uuid.uuid4().hex}</RequestId></Error>").encode()
    return _reply(status, {"content-type": "application/xml"}, body)


def throttle_reply(service: str, t: Throttle) -> Reply:
    if service == "s3":
        return s3_reply(t.status, t.code, t.reason)
    arn = f"arn:aws:dynamodb:local:000000000000:table/{t.resource}"
    return dynamodb_reply(t.status, t.code, f"Throughput exceeds the current capacity ({t.reason})",
                          [{"reason": t.reason, "resource": arn}])


def error_5xx_reply(service: str) -> Reply:
    if service == "s3":
        return s3_reply(500, "InternalError", "We encountered an internal error.")
    return dynamodb_reply(500, "InternalServerError", "Internal server error (injected)")


def read_probe(op: str, p: dict) -> Charge | None:
    """Where a read will draw (its units are known only from its answer): table, index, partition key."""
    table = p.get("TableName")
    if op == "GetItem":
        shape = SHAPES.get(table)
        pk = shape.pk if shape else "pk"
        v = p.get("Key", {}).get(pk, {})
        return Charge(table, None, str(next(iter(v.values()), "")), "read", 0.0)
    if op == "Query":
        return Charge(table, p.get("IndexName"), query_key(p), "read", 0.0)
    if op == "Scan":
        return Charge(table, p.get("IndexName"), "", "read", 0.0)
    if op == "BatchGetItem":
        tables = list(p.get("RequestItems", {}))
        return Charge(tables[0], None, "", "read", 0.0) if tables else None
    return None


def injected_throttle(service: str, op: str, prefix: str, params: dict | None) -> Throttle:
    """A throttle fault: the error the service sends when its own limit (not the modelled one) is hit."""
    if service == "s3":
        return Throttle("SlowDown", "Please reduce your request rate.", prefix, status=503)
    side = "Read" if op in READ_OPS else "Write"
    return Throttle("ThrottlingException", f"Table{side}MaxOnDemandThroughputExceeded",
                    str((params or {}).get("TableName", "")))


@dataclass(frozen=True)
class Verdict:
    """What the model makes of a request once its latency has passed: a fault kind ("error_5xx", "timeout",
    "drop", ...) or a throttle, with the reply to send for either (None for a transport fault)."""

    kind: str  # a fault kind, or "throttle"
    reply: Reply | None = None
    throttle: Throttle | None = None


class FidelityModel:
    """Latency, faults, capacity and GSI lag for one set of clients (a process's, or a front's)."""

    def __init__(self, cfg: FidelityConfig, *, clock: Clock | None = None, rng: random.Random | None = None) -> None:
        self.cfg = cfg
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.profile: Profile = load_profile(cfg.latency)
        self.ddb = DynamoThrottle(cfg.dynamodb, self.clock) if cfg.dynamodb else None
        self.s3 = S3Throttle(cfg.s3, self.clock) if cfg.s3 else None
        self.added_ms = 0.0
        self.injected = 0  # throttles injected as faults (not the capacity model's)
        lag = cfg.gsi_lag_dist(self.profile)
        # its own draws: the latency's stay as they were without it
        self.gsi_lag = GsiLag(lag, self.clock, random.Random(repr(self.rng.getstate()))) if lag else None

    def latency_ms(self, service: str, op: str) -> float | None:
        """The time to add before this request goes out (drawn; the seam waits it); None: the profile adds
        nothing to this operation."""
        dist = pick(self.profile, service, op)
        if dist is None:
            return None
        ms = dist.sample_ms(self.rng)
        self.added_ms += ms
        return ms

    def decide(self, service: str, op: str, *, prefix: str = "", params: dict | None = None,
               writes: list[Charge] | None = None, faults: bool = True) -> Verdict | None:
        """After the latency: an injected fault, else a throttle, else None (send it). ``prefix``: an S3 key's
        ``bucket/dir/``; ``params`` and ``writes``: a DynamoDB request's parameters and what it writes. A
        ``spike`` verdict: the seam waits ``cfg.spike_s`` more, then asks again with ``faults=False``; ``lost``:
        the seam lets the request land and drops its answer; ``timeout`` and ``drop``: no answer at all."""
        fault = choose(self.cfg.faults.get(op) or self.cfg.faults.get("*"), self.rng) if faults else None
        if fault == "error_5xx":
            return Verdict(fault, error_5xx_reply(service))
        if fault == "throttle":
            self.injected += 1
            t = injected_throttle(service, op, prefix, params)
            return Verdict("throttle", throttle_reply(service, t), t)
        if fault:
            return Verdict(fault)
        t = self.throttle(service, op, prefix=prefix, params=params, writes=writes)
        return Verdict("throttle", throttle_reply(service, t), t) if t else None

    def throttle(self, service: str, op: str, *, prefix: str = "", params: dict | None = None,
                 writes: list[Charge] | None = None) -> Throttle | None:
        if service == "s3":
            return self.s3.admit(op, prefix) if self.s3 else None
        if self.ddb is None or params is None:
            return None
        if op in READ_OPS:
            probe = read_probe(op, params)
            return self.ddb.admit_read(probe) if probe else None
        return self.ddb.admit_writes(writes) if writes else None

    def charge_reads(self, charges: list[Charge]) -> None:
        """A read that succeeded: its units, billed on what came back."""
        if self.ddb is not None and charges:
            self.ddb.charge_reads(charges)

    def throttle_count(self) -> int:
        n = self.injected + (sum(self.ddb.throttles.values()) if self.ddb is not None else 0)
        return n + (self.s3.throttles if self.s3 is not None else 0)
