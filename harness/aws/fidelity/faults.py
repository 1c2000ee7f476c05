"""Fault injection for reliability runs, per operation: 5xx answers, timeouts, dropped connections (a reset),
throttles whatever the capacity (past an SDK's retries at a rate of 1), lost answers (the request applied, its
answer never comes) and latency spikes (``[fidelity] spike`` more before it goes). Both seams of the fidelity
model (the botocore layer, the loopback front) apply the same kinds."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

FAULT_KINDS = ("error_5xx", "timeout", "drop", "throttle", "lost", "spike")  # new kinds last: old draws stay


@dataclass(frozen=True)
class FaultRates:
    error_5xx: float = 0.0
    timeout: float = 0.0
    drop: float = 0.0
    throttle: float = 0.0
    lost: float = 0.0
    spike: float = 0.0


def choose(rates: FaultRates | None, rng: random.Random) -> str | None:
    """Which fault, if any, this request meets."""
    if rates is None:
        return None
    x = rng.random()
    for kind in FAULT_KINDS:
        p = getattr(rates, kind)
        if x < p:
            return kind
        x -= p
    return None


def raise_transport_fault(kind: str, request: Any) -> None:
    """Timeouts and drops are raised where the HTTP layer would raise them, so botocore retries them."""
    if kind == "timeout":
        raise ReadTimeoutError(endpoint_url=request.url)
    raise ConnectionClosedError(endpoint_url=request.url)
