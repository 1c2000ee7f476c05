"""swamp's S3 sync-layer retry (``retryWithBackoff`` in the extension's cache sync): with the SDK at one attempt.

swamp sets the S3 SDK to ``maxAttempts: 1`` and retries at its own layer
instead: 3 tries in all, sleeping 500 ms x 3^n (n = 0, 1) with +-25 % jitter
between them, and only on what is transient (a throttle, a 5xx, a timeout,
a dropped connection; never a refused condition or a 404). Its lock's
requests go through no such wrapper, so they are never retried.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from harness.aws_errors import is_transient
from harness.clock import Clock

T = TypeVar("T")
TRIES = 3
BASE_S = 0.5
JITTER = 0.25


def delay_s(attempt: int, rng: random.Random) -> float:
    """The sleep after failed attempt ``attempt`` (0-based): 500 ms x 3^attempt, +-25 %, in whole milliseconds."""
    raw = BASE_S * 1000 * 3 ** attempt
    return max(0, int(raw + raw * JITTER * (rng.random() * 2 - 1))) / 1000


class SwampRetry:
    """Runs a request the way swamp's sync layer does: up to ``TRIES`` attempts, sleeping on ``clock``."""

    def __init__(self, clock: Clock, rng: random.Random | None = None) -> None:
        self.clock, self.rng = clock, rng or random.Random()

    def __call__(self, op: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return op()
            except Exception as e:  # noqa: BLE001 - classified, re-raised when not transient or out of tries
                if attempt == TRIES - 1 or not is_transient(e):
                    raise
                self.clock.sleep(delay_s(attempt, self.rng))
                attempt += 1
