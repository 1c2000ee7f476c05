"""swamp's DynamoDB retry schedules (``[datastore] retries = "swamp"``), on the backend's injected clock.

swamp's extension wraps every data-path request in ``retryable``
(``_lib/retry.ts``): 3 tries in all, sleeping ``500 ms x 3^n`` +- 25 %
(uniform, floored to a millisecond) after try ``n``, on throttles, an
internal error and a few socket errors only; on top of the SDK's own retries,
which it leaves on (its ``client.ts`` builds the client with the defaults:
standard mode, 3 attempts, as the harness's clients are). Its BatchWriteItem
and BatchGetItem loops (``sendBatchWrite``, ``querySpecificPaths`` in
``sync.ts``) resend unprocessed items up to 8 tries in all, sleeping
``min(500 ms x 2^n, 5 s)`` before try ``n`` (no jitter), then fail. Its lock
(``lock.ts``) calls the client directly: lock requests get the SDK's retries
only, so the lock store keeps the plain client.

The harness's own schedule (``"harness"``, the default): no ``retryable``, and
unprocessed items resent without a bound after ``U(0, min(5 s, 50 ms x 2^n))``.
"""

from __future__ import annotations

import random
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from harness.core.clock import Clock
from harness.datastore.backends.swamp_retry import BASE_S, SwampRetry, delay_s
from harness.datastore.variant import Retries, values

RETRIES = values(Retries)
UNPROCESSED_TRIES = 8  # sendBatchWrite's and querySpecificPaths' loops
UNPROCESSED_CAP_S = 5.0
RETRYABLE = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
                       "InternalServerError", "LimitExceededException"})

T = TypeVar("T")


class UnprocessedError(Exception):
    """A batch's items still unprocessed after swamp's 8 tries (its ``sendBatchWrite`` throws)."""


retryable_delay = delay_s  # swamp's retryable: the schedule both extensions share


def unprocessed_delay(attempt: int) -> float:
    """The sleep before try ``attempt`` (1-based resend) of a batch's unprocessed items."""
    return min(BASE_S * 2 ** attempt, UNPROCESSED_CAP_S)


def is_retryable(e: BaseException) -> bool:
    return isinstance(e, ClientError) and e.response.get("Error", {}).get("Code") in RETRYABLE


class Retryable(SwampRetry):
    """``retryable`` on a clock: ``call(op)`` tries ``op`` up to 3 times, again on DynamoDB's retryable codes."""

    def __init__(self, clock: Clock, rng: random.Random | None = None) -> None:
        super().__init__(clock, rng, retryable=is_retryable)


class RetryingClient:
    """A DynamoDB client whose every data-path call goes through ``retryable`` (the rest passes through).

    Each try is a request of its own, so the instrumentation counts it as one.
    Writes to a lock item are the lock's (swamp's lock calls the client
    directly), and a conditional seal tried again after an unknown outcome
    would report its own success as a refusal: they are sent once.
    """

    def __init__(self, client: Any, retry: Retryable) -> None:
        self._client, self._retry = client, retry
        self._ops = set(client.meta.method_to_api_mapping)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self._ops:
            return attr

        def call(**kw: Any) -> Any:
            if str(kw.get("Key", {}).get("pk", {}).get("S", "")).startswith("LOCK#"):
                return attr(**kw)  # a lock item (the harness's seal, a model's fence): lock requests, not wrapped
            return self._retry.call(lambda: attr(**kw))
        return call


class HarnessRetries:
    """The harness's schedule: botocore's retries alone, a batch's unprocessed items resent without a bound."""

    def client(self, client: Any, clock: Clock, rng: random.Random) -> Any:
        return client

    def backoff(self, clock: Clock, rng: random.Random, attempt: int, left: int) -> None:
        """Before resending a batch's unprocessed items: jittered, ``U(0, min(5 s, 50 ms x 2^n))``."""
        clock.sleep(rng.uniform(0, min(5.0, 0.05 * 2 ** attempt)))


class SwampRetries:
    """swamp's: ``retryable`` around each data-path request, unprocessed items resent 8 tries in all."""

    def client(self, client: Any, clock: Clock, rng: random.Random) -> Any:
        return RetryingClient(client, Retryable(clock, rng))

    def backoff(self, clock: Clock, rng: random.Random, attempt: int, left: int) -> None:
        """No jitter, 8 tries in all, then the batch fails with ``left`` items unsent."""
        if attempt >= UNPROCESSED_TRIES:
            raise UnprocessedError(f"BatchWriteItem / BatchGetItem left {left} unprocessed item(s) after "
                                   f"{UNPROCESSED_TRIES} tries")
        clock.sleep(unprocessed_delay(attempt))
