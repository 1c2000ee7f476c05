"""The observer's requests: paced by its budget, counted apart from the fleet's.

Its client is its own (no accounting hooks, no fidelity layer, no per-key
log): nothing it sends lands in the rows or ``keys.csv``. Each request waits
for the budget, then is charged its cost: read units as DynamoDB bills them
(``harness.aws.capacity``: a Query sums the sizes of the items it read;
``Select=COUNT`` still reads them, so its cost is the count times their mean
size, or what DynamoDB itself reports on AWS), or one request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.jobs.observer.budget import READ_UNITS, Pacer

Obs = tuple[str, str, Any]  # (what, key, value): one row of observed.csv, its time stamped by the observer


def response_length(out: Any) -> int:
    """The bytes an answer carried, as its Content-Length says (0 when it does not say)."""
    headers = (out.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    try:
        return int(headers.get("content-length") or 0)
    except (TypeError, ValueError):
        return 0


@dataclass
class Meter:
    """What the observer's reads cost, per group of reads."""

    requests: Counter = field(default_factory=Counter)
    read_units: Counter = field(default_factory=Counter)
    bytes_received: Counter = field(default_factory=Counter)

    def cost(self, group: str, unit: str) -> float:
        return float(self.read_units[group] if unit == READ_UNITS else self.requests[group])


class Sender:
    """Sends one group's requests through the pacer; ``deadline`` (clock time) cuts a final sample short."""

    def __init__(self, pacer: Pacer, meter: Meter) -> None:
        self.pacer, self.meter = pacer, meter
        self.group = ""
        self.deadline: float | None = None

    def send(self, call: Callable[[], Any], units: Callable[[Any], float], size: Callable[[Any], int]) -> Any:
        if not self.pacer.wait(self.deadline):
            raise TimeoutError("the observer's budget had no room before its deadline")
        out = call()
        u = units(out)
        self.meter.requests[self.group] += 1
        self.meter.read_units[self.group] += u
        self.meter.bytes_received[self.group] += size(out)
        self.pacer.charge(u if self.pacer.allow.unit == READ_UNITS else 1.0)
        return out
