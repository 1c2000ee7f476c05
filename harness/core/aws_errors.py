"""The one place that classifies AWS errors (DynamoDB and S3, botocore exceptions).

Neutral ground: the datastore (conditional writes, heartbeat retries), the load
layer (error kinds in the iteration row) and pacing (back off on throttles)
all ask here, so a new throttle code or stand-in quirk is taught once.
"""

from __future__ import annotations

import socket
import ssl

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ProxyConnectionError,
    ReadTimeoutError,
)
from botocore.exceptions import SSLError as BotocoreSSLError

THROTTLE_CODES = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "SlowDown", "Throttling", "TooManyRequestsException",
})
# DynamoDB's failed condition; S3's failed If-Match / If-None-Match (moto answers the status as the code)
CONDITION_CODES = frozenset({"ConditionalCheckFailedException", "PreconditionFailed", "412",
                             "ConditionalRequestConflict"})
CONFLICT_CODES = CONDITION_CODES | {"TransactionConflictException"}
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchBucket", "ResourceNotFoundException"})
SERVER_CODES = frozenset({"InternalServerError", "InternalError", "ServiceUnavailable", "500", "503"})
TIMEOUTS = (ReadTimeoutError, ConnectTimeoutError, TimeoutError, socket.timeout)
DROPS = (ConnectionClosedError, EndpointConnectionError, ConnectionError)
# No answer could come at all: refused (EndpointConnectionError), DNS (EndpointConnectionError too), reset or
# closed mid-request, TLS, a proxy. A timeout is not one (a slow server answers later): ``timeout``.
CONNECTION_FAILURES = (EndpointConnectionError, ConnectionClosedError, BotocoreSSLError, ProxyConnectionError,
                       ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError, socket.gaierror,
                       ssl.SSLError)


def error_code(exc: BaseException | None) -> str:
    """The service's error code of a ``ClientError`` ("" for anything else)."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_throttle(exc: BaseException | None) -> bool:
    return error_code(exc) in THROTTLE_CODES


def is_condition_failed(exc: BaseException | None) -> bool:
    """A conditional write (DynamoDB condition, S3 If-Match / If-None-Match) was refused."""
    return error_code(exc) in CONDITION_CODES


def is_not_found(exc: BaseException | None) -> bool:
    return error_code(exc) in NOT_FOUND_CODES


def is_timeout(exc: BaseException | None) -> bool:
    return isinstance(exc, TIMEOUTS)


def is_connection_failure(exc: BaseException | None) -> bool:
    """The endpoint could not be talked to (refused, reset, DNS, TLS), here or in what caused ``exc``.

    The datastore may raise its own error from a failed request (``raise ... from e``), so the chain of causes
    is read too (a few links: a chain never loops, but it need not be read to its end).
    """
    for _ in range(5):
        if exc is None:
            return False
        if isinstance(exc, TIMEOUTS):
            return False
        if isinstance(exc, CONNECTION_FAILURES):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def is_transient(exc: BaseException | None) -> bool:
    """Worth retrying: a throttle, a server error, a timeout or a dropped connection."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0
        return code in THROTTLE_CODES or code in SERVER_CODES or status >= 500
    return isinstance(exc, TIMEOUTS + DROPS)


# Set (as an attribute of the exception, or in a ClientError's ResponseMetadata) by the instrumentation when an
# attempt of the call before the last one had no answer: botocore retried it, so the last error says nothing
# about whether that earlier attempt landed (``harness.aws.instrument`` notes each attempt)
EARLIER_UNANSWERED = "HarnessEarlierAttemptUnanswered"


def attempt_unanswered(caught: BaseException | None, response: tuple | None) -> bool:
    """One attempt of a call whose answer never came (timed out, dropped, a server error): it may have landed."""
    if caught is not None:
        return isinstance(caught, TIMEOUTS + DROPS) or error_code(caught) in SERVER_CODES
    parsed = response[1] if response is not None and len(response) > 1 else None
    return isinstance(parsed, dict) and str(parsed.get("Error", {}).get("Code", "")) in SERVER_CODES


def mark_unanswered(exc: BaseException) -> None:
    """Note on ``exc`` that an earlier attempt of its call had no answer (the instrumentation calls this)."""
    try:
        setattr(exc, EARLIER_UNANSWERED, True)
    except AttributeError:  # (an exception type without a __dict__: its ResponseMetadata below still says it)
        pass
    if isinstance(exc, ClientError):
        exc.response.setdefault("ResponseMetadata", {})[EARLIER_UNANSWERED] = True


def outcome_unknown(exc: BaseException | None) -> bool:
    """The request may have been applied although the client saw an error (its answer was lost).

    Unknown whatever the last attempt's code when an earlier attempt of the call had no answer (a timeout, a
    reset, a server error, then botocore's resend throttled or refused): that attempt may have landed. A run of
    attempts each answered (throttles, refusals) did not land, and stays known.
    """
    if exc is None:
        return False
    if getattr(exc, EARLIER_UNANSWERED, False):
        return True
    if isinstance(exc, ClientError) and exc.response.get("ResponseMetadata", {}).get(EARLIER_UNANSWERED):
        return True
    return isinstance(exc, TIMEOUTS + DROPS) or (isinstance(exc, ClientError) and error_code(exc) in SERVER_CODES)


def kind(exc: BaseException | None) -> str:
    """``throttled``, ``conflict``, ``timeout``, ``connection``, ``not_found`` or ``other`` for an AWS failure."""
    code = error_code(exc)
    if code in THROTTLE_CODES:
        return "throttled"
    if code in CONFLICT_CODES:
        return "conflict"
    if code in NOT_FOUND_CODES:
        return "not_found"
    if is_timeout(exc):
        return "timeout"
    if is_connection_failure(exc):
        return "connection"
    return "other"
