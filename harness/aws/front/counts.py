"""What one user sent through the front, on the wire: requests, their kinds, units, throttles, bytes.

The front keeps one ``WireCounts`` per user (per port) and only ever adds to it; a
reader takes two snapshots and subtracts (``since``), so a command's share is what
its user's port carried while it ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class WireCounts:
    requests: int = 0  # attempts, retries included (as the harness's own accounting counts them)
    write_requests: int = 0
    throttles: int = 0  # attempts answered with a throttle (the model's, or the upstream's own)
    errors: int = 0  # attempts answered 5xx, reset, or lost (the model's faults)
    read_units: float = 0.0
    write_units: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # "dynamodb.PutItem" -> attempts

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WireCounts:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**{**known, "kinds": dict(d.get("kinds") or {})})

    def since(self, before: WireCounts) -> WireCounts:
        """What was added after ``before`` (a snapshot of the same counts)."""
        kinds = {k: n - before.kinds.get(k, 0) for k, n in self.kinds.items() if n - before.kinds.get(k, 0)}
        return WireCounts(self.requests - before.requests, self.write_requests - before.write_requests,
                          self.throttles - before.throttles, self.errors - before.errors,
                          self.read_units - before.read_units, self.write_units - before.write_units,
                          self.bytes_sent - before.bytes_sent, self.bytes_received - before.bytes_received, kinds)
