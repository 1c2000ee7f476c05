"""swamp's ``retryable`` schedule, shared by its two extensions' models: 3 tries, 500 ms x 3^n +- 25 % between.

Both of swamp's datastore extensions retry a request at their own layer the same way (DynamoDB's
``_lib/retry.ts`` around every data-path request; S3's ``retryWithBackoff`` in its cache sync, with the SDK
at one attempt, on a throttle, a 5xx, a timeout or a dropped connection, never a refused condition or a 404);
they differ only in what they call retryable, which each backend passes in. Neither wraps its lock's
requests (S3's are then never retried; DynamoDB's get the SDK's own retries). Time is the
backend's injected clock, so a test on a FakeClock reads the requested sleeps.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import TypeVar

from harness.core.aws_errors import is_transient
from harness.core.clock import Clock

T = TypeVar("T")
TRIES = 3  # maxAttempts
BASE_S = 0.5  # baseDelayMs
JITTER = 0.25


def delay_s(attempt: int, rng: random.Random) -> float:
    """The sleep after failed try ``attempt`` (0-based): 500 ms x 3^n, +- 25 % uniform, floored to a millisecond."""
    raw = BASE_S * 1000 * 3 ** attempt
    return max(0, math.floor(raw + raw * JITTER * (rng.random() * 2 - 1))) / 1000


class SwampRetry:
    """Runs a request as swamp's sync layer does: up to ``TRIES`` tries, sleeping on ``clock`` between them,
    again only after an error ``retryable`` accepts (anything else, and the last try's error, is raised)."""

    def __init__(self, clock: Clock, rng: random.Random | None = None,
                 retryable: Callable[[BaseException], bool] | None = None) -> None:
        self.clock, self.rng = clock, rng or random.Random()
        self.retryable = retryable or is_transient

    def __call__(self, op: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return op()
            except Exception as e:  # noqa: BLE001 - classified, re-raised when not retryable or out of tries
                if attempt == TRIES - 1 or not self.retryable(e):
                    raise
                self.clock.sleep(delay_s(attempt, self.rng))
                attempt += 1

    call = __call__
