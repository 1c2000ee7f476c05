"""A worker that cannot reach its endpoint waits before its next iteration: a dead endpoint is not a load.

An iteration that fails on a connection (refused, reset, DNS, TLS: ``error_kind`` ``connection``, from the one
classifier ``harness/core/aws_errors.py``) fails at once, so a worker that tried again at once would spin: the
fleet of an endpoint that died ran hundreds of failed iterations a second, pegged the load generator and
wrote thousands of rows that measure nothing. So the Locust user, once an iteration, asks ``pause`` with its
outcome's error kind: after the n-th connection failure in a row the worker sleeps a bounded, jittered
exponential delay, a random time between half and all of ``min(cap, base x 2^(n-1))`` (0.25 s, 0.5 s, 1 s,
2 s, 4 s, then 5 s at most), so a dead endpoint costs a few rows a second and the workers do not retry in
step; any other outcome (a success, a lock timeout, a throttle) resets it. The datastore's own retries are
untouched: this is between iterations, in the user's loop, never inside the model.

Time is the injected ``Clock`` (the Locust user's is the system's, whose sleep yields to other greenlets);
tests use ``FakeClock`` and read the requested sleeps.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from harness.core.clock import Clock

CONNECTION = "connection"  # the error kind that backs off
BASE_S = 0.25
CAP_S = 5.0


@dataclass
class ConnectionBackoff:
    """The delay before a worker's next iteration, from its last outcomes' error kinds (``""`` for a success)."""

    clock: Clock
    rng: random.Random = field(default_factory=random.Random)
    base_s: float = BASE_S
    cap_s: float = CAP_S
    streak: int = 0  # connection failures in a row
    slept_s: float = 0.0  # in all, for the record

    def delay_after(self, error_kind: str) -> float:
        """The delay this outcome asks for (0 unless it was a connection failure); counts the streak."""
        if error_kind != CONNECTION:
            self.streak = 0
            return 0.0
        self.streak += 1
        ceiling = min(self.cap_s, self.base_s * 2 ** min(self.streak - 1, 30))
        return ceiling / 2 + self.rng.random() * ceiling / 2

    def pause(self, error_kind: str) -> float:
        """Sleep (on the clock) the delay this outcome asks for; returns it."""
        delay = self.delay_after(error_kind)
        if delay > 0:
            self.clock.sleep(delay)
            self.slept_s += delay
        return delay
