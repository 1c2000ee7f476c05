"""When repeated failures pause or stop a job (throttles only slow it down).

- More than one in five of the last 500 results failed for a reason other than
  throttling: pause, ``Paused: too many errors``.
- DynamoDB rejected each of the first 50 items as invalid: fail,
  ``DynamoDB rejected the first 50 items``.
- Expired credentials or access denied: pause with that reason.
A pause keeps the job's place.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

WINDOW = 500
MAX_ERROR_SHARE = 0.2
FIRST_N = 50
TOO_MANY_ERRORS = "Paused: too many errors"
REJECTED_FIRST = "DynamoDB rejected the first 50 items"
CREDENTIAL_CODES = {"ExpiredToken": "Paused: credentials expired",
                    "ExpiredTokenException": "Paused: credentials expired",
                    "RequestExpired": "Paused: credentials expired",
                    "UnrecognizedClientException": "Paused: credentials not recognized",
                    "AccessDeniedException": "Paused: access denied", "AccessDenied": "Paused: access denied"}
INVALID_CODES = {"ValidationException", "SerializationException"}


@dataclass(frozen=True)
class Verdict:
    state: str  # "paused" | "failed"
    reason: str


class FailurePolicy:
    def __init__(self) -> None:
        self.window: deque[bool] = deque(maxlen=WINDOW)  # True = a non-throttle failure
        self.seen = 0
        self.invalid_first = 0

    def record(self, ok: bool, code: str | None = None) -> Verdict | None:
        """One item's final result (``code``: the error code when it failed); a verdict stops the job."""
        if code in CREDENTIAL_CODES:
            return Verdict("paused", CREDENTIAL_CODES[code])
        self.seen += 1
        if self.seen <= FIRST_N:
            if not ok and code in INVALID_CODES:
                self.invalid_first += 1
                if self.invalid_first == FIRST_N:
                    return Verdict("failed", REJECTED_FIRST)
        self.window.append(not ok)
        if len(self.window) >= 50 and sum(self.window) > MAX_ERROR_SHARE * len(self.window):
            return Verdict("paused", TOO_MANY_ERRORS)
        return None
