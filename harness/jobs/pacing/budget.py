"""Shared budgets: every job on one table writes from one bucket, at the lowest of their ceilings.

Two jobs on a table together never write faster than one job could alone. In a
distributed run each process holds its share of the table's budget (the
harness sets the share to 1/processes).
"""

from __future__ import annotations

import threading

from harness.aws.fidelity.buckets import TokenBucket
from harness.core.clock import Clock


class SharedBudget:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.members: dict[str, float] = {}
        self.bucket: TokenBucket | None = None

    @property
    def rate(self) -> float:
        return min(self.members.values()) if self.members else 0.0

    def set(self, job: str, ceiling: float) -> None:
        self.members[job] = ceiling
        if self.bucket is None:
            self.bucket = TokenBucket(self.rate, self.clock, burst_s=1.0)
        else:
            self.bucket.set_rate(self.rate, burst_s=1.0)

    def leave(self, job: str) -> None:
        self.members.pop(job, None)
        if self.bucket is not None and self.members:
            self.bucket.set_rate(self.rate, burst_s=1.0)


class Budgets:
    """One budget per (endpoint, table, read|write, index) in this process."""

    def __init__(self) -> None:
        self._budgets: dict[tuple, SharedBudget] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple, clock: Clock) -> SharedBudget:
        with self._lock:
            b = self._budgets.get(key)
            if b is None:
                b = self._budgets[key] = SharedBudget(clock)
            return b


BUDGETS = Budgets()
