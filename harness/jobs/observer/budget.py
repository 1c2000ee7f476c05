"""What the observer may spend, and how often a read that costs more than that is taken.

Its reads draw on a budget of its own in the pacing engine's budgets
(``harness.jobs.pacing.budget``, keyed apart from every job's), a token bucket in
one of two units:

- read units a second where the table has a read capacity: ``share`` (5 %) of
  the capacity of a provisioned table, as DescribeTable reports it
  (``harness.jobs.pacing.ceiling.capacity``: the table's and its GSI's, the lower),
  or, on a stand-in, of the scenario's ``[fidelity]`` provisioned capacity;
- requests a second elsewhere (S3, on-demand tables), a fixed rate.

A read is charged what it cost once its answer is in (a Query bills every
item it reads, ``Select=COUNT`` too), and the next request waits until the
bucket is out of debt, so the observer never runs faster than its budget.
A group of reads whose last cost is more than its share of an interval's
budget is taken less often (``intervals``): the report says at what interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.clock import Clock
from harness.jobs.pacing.budget import Budgets, SharedBudget
from harness.jobs.pacing.ceiling import capacity

READ_UNITS, REQUESTS = "read units", "requests"
MEMBER = "observer"
MAX_STRETCH = 60.0  # a group is read at least once every 60 intervals, however costly


@dataclass(frozen=True)
class Allowance:
    unit: str  # READ_UNITS | REQUESTS
    rate: float  # per second
    capacity: float | None  # the read capacity it is a share of (None: a fixed request rate)
    source: str  # where the figure came from, in words

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "rate": self.rate, "capacity": self.capacity, "source": self.source}


def allowance(service: str, share: float, rate_per_s: float, *, described: Mapping[str, Any] | None = None,
              modelled_read: float | None = None, index: str = "gsi1") -> Allowance:
    """The observer's budget for one table or bucket.

    ``modelled_read``: a stand-in's provisioned read capacity from the scenario's ``[fidelity]`` (it wins:
    the stand-in's own DescribeTable says nothing true); ``described``: DescribeTable's ``Table``.
    """
    fixed = Allowance(REQUESTS, rate_per_s, None, f"a fixed {rate_per_s:g} requests/s, "
                      + ("on S3" if service == "s3" else "the table has no provisioned read capacity"))
    if service != "dynamodb":
        return fixed
    if modelled_read:
        return Allowance(READ_UNITS, share * modelled_read, modelled_read,
                         f"{share * 100:g} % of the [fidelity] model's {modelled_read:,.0f} provisioned read units/s")
    if described and (described.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED") == "PROVISIONED":
        caps = [capacity(described, "read")]
        if any(g.get("IndexName") == index for g in described.get("GlobalSecondaryIndexes", [])):
            caps.append(capacity(described, "read", index))
        cap = min(caps)
        provisioned = float((described.get("ProvisionedThroughput") or {}).get("ReadCapacityUnits") or 0)
        if provisioned > 0:
            return Allowance(READ_UNITS, share * cap, cap, f"{share * 100:g} % of the table's {cap:,.0f} "
                                                           "provisioned read units/s (DescribeTable)")
    return fixed


def intervals(costs: Mapping[str, float], rate: float, every_s: float) -> dict[str, float]:
    """How often each group of reads is taken, from what it cost last time.

    All at ``every_s`` when a round of them fits one interval's budget. Else
    the groups that cost more than an equal share of it are stretched by one
    factor, so a round's spend fits again (the cheap ones keep their pace);
    at most ``MAX_STRETCH`` intervals apart.
    """
    if not costs:
        return {}
    budget = rate * every_s
    total = sum(costs.values())
    if total <= budget:
        return {g: every_s for g in costs}
    fair = budget / len(costs)
    cheap = sum(c for c in costs.values() if c <= fair)
    dear = total - cheap
    room = max(budget - cheap, fair)
    stretch = min(MAX_STRETCH, max(1.0, dear / room))
    return {g: every_s if c <= fair else math.ceil(every_s * stretch * 10) / 10 for g, c in costs.items()}


class Pacer:
    """The observer's bucket in the shared budgets: wait before a request, charge its cost after."""

    def __init__(self, allow: Allowance, key: tuple, clock: Clock, budgets: Budgets | None = None) -> None:
        """``budgets``: the process's (``pacing.budget.BUDGETS``) to be seen beside the jobs' under a key of
        its own; by default a set of its own (an observer's clock is its own: a test's FakeClock)."""
        self.allow, self.clock = allow, clock
        self.budget: SharedBudget = (budgets or Budgets()).get(("observe", *key, allow.unit), clock)
        self.budget.set(MEMBER, allow.rate)
        self.spent = 0.0

    def set_rate(self, allow: Allowance) -> None:
        self.allow = allow
        self.budget.set(MEMBER, allow.rate)

    def wait(self, deadline: float | None = None) -> bool:
        """Until the bucket is out of debt (False: the deadline came first)."""
        bucket = self.budget.bucket
        assert bucket is not None
        while bucket.level() < 0:
            if deadline is not None and self.clock.now() >= deadline:
                return False
            self.clock.sleep(min(1.0, max(0.001, -bucket.level() / max(bucket.rate, 1e-9))))
        return True

    def charge(self, cost: float) -> None:
        bucket = self.budget.bucket
        assert bucket is not None
        bucket.charge(cost)
        self.spent += cost

    def close(self) -> None:
        self.budget.leave(MEMBER)
