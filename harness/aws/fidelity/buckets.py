"""A token bucket with DynamoDB-style burst credit (rate limiting as a small, separate unit)."""

from __future__ import annotations

import threading

from harness.core.clock import Clock


class TokenBucket:
    """``rate`` tokens a second; unused tokens accumulate up to ``burst_s`` seconds' worth.

    It starts with one second's worth, so a fresh table takes its rate at once
    but has no burst credit until it has been under-used. ``take`` refuses a
    request that does not fit (writes: their cost is known up front);
    ``charge`` always spends and may go into debt (reads: billed on what came back).
    """

    def __init__(self, rate: float, clock: Clock, burst_s: float = 300.0) -> None:
        if rate <= 0:
            raise ValueError("a bucket needs a positive rate")
        self.rate = rate
        self.capacity = rate * max(1.0, burst_s)
        self._now = clock.now  # bound once: this runs on every request
        self.tokens = rate
        self.t = self._now()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._now()
        if now > self.t:
            self.tokens = min(self.capacity, self.tokens + (now - self.t) * self.rate)
        self.t = now

    def level(self) -> float:
        with self._lock:
            self._refill()
            return self.tokens

    def fits(self, n: float) -> bool:
        with self._lock:
            self._refill()
            return self.tokens >= min(n, self.rate)

    def take(self, n: float) -> bool:
        """Spend ``n`` if there is room (a request larger than a second's rate needs a full second's worth)."""
        with self._lock:
            self._refill()
            if self.tokens < min(n, self.rate):
                return False
            self.tokens -= n
            return True

    def charge(self, n: float) -> None:
        with self._lock:
            self._refill()
            self.tokens -= n

    def set_rate(self, rate: float, burst_s: float | None = None) -> None:
        """A new rate (a capacity change, a halving) applies from now on."""
        with self._lock:
            self._refill()
            self.rate = rate
            if burst_s is not None:
                self.capacity = rate * max(1.0, burst_s)
            self.tokens = min(self.tokens, self.capacity)

    def wait_time(self, n: float) -> float:
        """Seconds until ``n`` would fit (0 if it fits now); takes it when it fits."""
        with self._lock:
            self._refill()
            need = min(n, self.rate)
            if self.tokens >= need:
                self.tokens -= n
                return 0.0
            return (need - self.tokens) / self.rate
