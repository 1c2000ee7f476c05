"""Fault injection for reliability runs: 5xx answers, timeouts and dropped connections per operation."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

FAULT_KINDS = ("error_5xx", "timeout", "drop")


@dataclass(frozen=True)
class FaultRates:
    error_5xx: float = 0.0
    timeout: float = 0.0
    drop: float = 0.0


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
