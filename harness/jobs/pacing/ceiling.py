"""The ceiling: 70 % of what DescribeTable says the table (or index) can take.

- Provisioned: the provisioned capacity.
- On-demand: the warm throughput, or the maximum on-demand throughput where set,
  whichever is lower.
- Neither reported: 4,000 writes / 12,000 reads a second (a new on-demand table's
  warm throughput).
A Query on a GSI draws on that index's own capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.core.clock import Clock

SHARE = 0.7
DEFAULT = {"write": 4_000.0, "read": 12_000.0}
_PROVISIONED = {"write": "WriteCapacityUnits", "read": "ReadCapacityUnits"}
_WARM = {"write": "WriteUnitsPerSecond", "read": "ReadUnitsPerSecond"}
_MAX = {"write": "MaxWriteRequestUnits", "read": "MaxReadRequestUnits"}


def capacity(table: Mapping[str, Any], kind: str, index: str | None = None) -> float:
    """Units a second the table (or one of its GSIs) can take, from a DescribeTable ``Table``."""
    target: Mapping[str, Any] = table
    if index:
        target = next((g for g in table.get("GlobalSecondaryIndexes", []) if g["IndexName"] == index), {})
    billing = table.get("BillingModeSummary", {}).get("BillingMode")
    provisioned = float(target.get("ProvisionedThroughput", {}).get(_PROVISIONED[kind], 0) or 0)
    if billing == "PROVISIONED" or (billing is None and provisioned > 0):
        if provisioned > 0:
            return provisioned
    values = [float(v) for v in (target.get("WarmThroughput", {}).get(_WARM[kind]),
                                 target.get("OnDemandThroughput", {}).get(_MAX[kind])) if v and float(v) > 0]
    return min(values) if values else DEFAULT[kind]


def ceiling(table: Mapping[str, Any], kind: str, index: str | None = None) -> float:
    return SHARE * capacity(table, kind, index)


class CeilingWatcher:
    """The current ceiling, re-read from DescribeTable every ``refresh_s`` (a minute by default)."""

    def __init__(self, describe: Callable[[], Mapping[str, Any]], kind: str, clock: Clock,
                 index: str | None = None, refresh_s: float = 60.0) -> None:
        self.describe, self.kind, self.index, self.clock, self.refresh_s = describe, kind, index, clock, refresh_s
        self.value = ceiling(describe(), kind, index)
        self._read_at = clock.now()

    def current(self) -> float:
        if self.clock.now() - self._read_at >= self.refresh_s:
            self._read_at = self.clock.now()
            try:
                self.value = ceiling(self.describe(), self.kind, self.index)
            except Exception:  # keep the last known ceiling through a failed describe
                pass
        return self.value
