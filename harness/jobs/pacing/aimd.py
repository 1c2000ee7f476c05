"""AIMD on a job's rate and on its requests in flight (pure: time comes in as arguments).

Both start small and grow additively every control period without a throttle;
a throttle halves both, at most once a period (requests already in flight when
the first throttle came back were sent at the old rate and must not halve it
again). Growth stops while the job's latency is much higher than at its start.
A throttled item waits a random time under a bound that starts at 50 ms and
doubles with each retry of that item, up to 5 s (full jitter).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 5.0
SLOW_FACTOR = 3.0  # "much slower than at the start" ...
SLOW_MIN_MS = 25.0  # ... and by a margin that means something (2 ms -> 7 ms is noise, not a struggling table)


def backoff(retry: int, rng: random.Random) -> float:
    return rng.uniform(0.0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * (2 ** retry)))


@dataclass
class AIMD:
    ceiling: float
    period_s: float = 1.0
    start_share: float = 0.25  # the rate starts at a quarter of the ceiling
    step_share: float = 0.1  # and grows by a tenth of it per quiet period
    concurrency: int = 2
    max_concurrency: int = 64
    rate: float = 0.0
    baseline_ms: float | None = None
    _latencies: list[float] = field(default_factory=list)
    _throttled: bool = False
    _last_cut: float = -1e18
    _period_start: float | None = None
    cuts: int = 0

    def __post_init__(self) -> None:
        self.rate = self.rate or self.ceiling * self.start_share

    def set_ceiling(self, ceiling: float) -> None:
        self.ceiling = ceiling
        self.rate = min(self.rate, ceiling)

    def on_success(self, latency_ms: float) -> None:
        self._latencies.append(latency_ms)

    def on_throttle(self, now: float) -> bool:
        """Halve at once (once a period). True if this throttle cut the limits."""
        self._throttled = True
        if now - self._last_cut < self.period_s:
            return False
        self._last_cut = now
        self.rate = max(self.ceiling * 0.01, self.rate / 2)
        self.concurrency = max(1, self.concurrency // 2)
        self.cuts += 1
        return True

    def tick(self, now: float) -> None:
        """End of a control period: grow if nothing was throttled and latency is not much worse."""
        if self._period_start is None:
            self._period_start = now
        if now - self._period_start < self.period_s:
            return
        self._period_start = now
        p50 = statistics.median(self._latencies) if self._latencies else None
        if self.baseline_ms is None and p50 is not None:
            self.baseline_ms = p50
        slow = (p50 is not None and self.baseline_ms is not None and p50 > SLOW_FACTOR * self.baseline_ms
                and p50 - self.baseline_ms > SLOW_MIN_MS)
        if not self._throttled and not slow:
            self.rate = min(self.ceiling, self.rate + self.ceiling * self.step_share)
            self.concurrency = min(self.max_concurrency, self.concurrency + 1)
        self._throttled = False
        self._latencies.clear()
