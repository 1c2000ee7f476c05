"""An open fleet's arrivals: when each sync is meant to start, whoever is free to run it.

A closed fleet's next sync waits for its last (coordinated omission: a slow datastore is asked less and
the wait never shows). Here arrivals follow their own process (Poisson or uniform, at a rate that may
change stage by stage), each with its intended start; a free user takes the next arrival in order,
sleeping until it is due, or starting at once when it is overdue (it waited in the queue since its
intended start). Nothing here knows Locust: the clock is injected, so tests run it on a ``FakeClock``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from harness.config.sections import PROCESSES
from harness.core.clock import Clock


class ArrivalSchedule:
    """Intended start times (epoch seconds) from ``start``: gaps exponential (poisson) or even (uniform).

    ``rate_at(elapsed_s)`` is the rate in arrivals per second at that point of the test (a stage's rate);
    a rate of 0 pauses arrivals until it is positive again (checked every ``idle_step_s``).
    """

    def __init__(self, rate_at: Callable[[float], float], process: str, start: float,
                 rng: random.Random | None = None, idle_step_s: float = 0.1) -> None:
        if process not in PROCESSES:
            raise ValueError(f"unknown arrival process {process!r}: choose {' or '.join(PROCESSES)}")
        self.rate_at, self.process, self.start = rate_at, process, start
        self.rng = rng or random.Random()
        self.idle_step_s = idle_step_s
        self._t = start
        self._first = process == "uniform"  # its first arrival is at a random phase, so N processes at
        if self._first:  # rate / N do not arrive in lockstep
            rate = rate_at(0.0)
            self._t += self.rng.random() / rate if rate > 0 else 0.0

    def next(self) -> float:
        """The next arrival's intended start."""
        t = self._t
        while True:
            rate = self.rate_at(t - self.start)
            if rate > 0:
                break
            t += self.idle_step_s
        if self._first:
            self._first = False
            self._t = t
            return t
        t += self.rng.expovariate(rate) if self.process == "poisson" else 1.0 / rate
        self._t = t
        return t


class ArrivalQueue:
    """Arrivals handed to free users in order; counts what is due and not yet taken (the queue)."""

    def __init__(self, schedule: ArrivalSchedule, clock: Clock) -> None:
        self.schedule, self.clock = schedule, clock
        self._ahead: list[float] = []  # arrivals drawn but not yet taken (peeked by ``queued``)
        self.taken = 0

    def _draw(self) -> float:
        return self._ahead.pop(0) if self._ahead else self.schedule.next()

    def take(self) -> float:
        """The next arrival's intended start, for a user that is free now; sleeps until it is due.

        The arrival is claimed before the sleep, so users waiting at once take successive arrivals.
        """
        intended = self._draw()
        self.taken += 1
        delay = intended - self.clock.now()
        if delay > 0:
            self.clock.sleep(delay)
        return intended

    def queued(self, now: float | None = None) -> int:
        """Arrivals due by ``now`` that no user has taken: the queue a saturated fleet builds."""
        now = self.clock.now() if now is None else now
        while not self._ahead or self._ahead[-1] <= now:
            self._ahead.append(self.schedule.next())
        return sum(1 for t in self._ahead if t <= now)
