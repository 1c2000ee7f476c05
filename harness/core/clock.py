"""Injectable time, so tests and short scenarios can scale TTLs and waits down.

The datastore never calls ``time`` directly for anything with a meaning (lock
expiry, backoff, watermarks); it asks its clock. Durations that are only
*measured* (step timings) use ``time.perf_counter`` in the caller instead.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""

    def sleep(self, seconds: float) -> None:
        """Wait; under Locust this yields to other greenlets (time is patched)."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to (or when someone sleeps on it)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._t = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._t += seconds


def now_ms(clock: Clock) -> int:
    return int(clock.now() * 1000)


def iso(ms: int) -> str:
    """An epoch time in ms as JavaScript's ``new Date(ms).toISOString()`` writes it (swamp's timestamps)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def ms_of(text: str) -> int:
    """``iso``'s inverse: the epoch ms of an ISO-8601 time with milliseconds and a ``Z``."""
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() * 1000)
