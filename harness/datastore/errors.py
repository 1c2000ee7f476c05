"""Errors the datastore raises, and the error kinds they are reported as (``error_kind``)."""

from harness.core import aws_errors
from harness.core.errors import HarnessError


class DatastoreError(Exception):
    """Base for failures of a sync step (not user input errors)."""


class LockTimeoutError(DatastoreError):
    """The lock could not be acquired within the wait limit (swamp's exact message)."""

    def __init__(self, key: str, wait_ms: int) -> None:
        super().__init__(f"Lock timeout after {wait_ms}ms on key: {key}")
        self.key = key


class LockLostError(DatastoreError):
    """A heartbeat or release found the lock no longer ours."""


class FencedError(DatastoreError):
    """A commit was rejected because its lock grant is no longer the current one."""


class CommitIndeterminateError(DatastoreError):
    """A commit whose seal may or may not have landed, and whose fate record no longer says: indeterminate."""

    indeterminate = True  # (the history records the commit so: neither acknowledged nor refused)


class ConflictError(DatastoreError):
    """A push found the remote file changed since this worker last pulled it."""


class TornReadError(ConflictError):
    """A pull could not read one sealed state of the index: it kept changing, the GSI stayed behind, or an
    entry's content was gone (superseded and collected under the reader) every time it looked."""


class ContentMissingError(TornReadError):
    """An entry's content object is not there (a pull reads the index again rather than take empty bytes)."""


class ConfigError(HarnessError, ValueError):
    """Bad datastore configuration or input (one line, user-fixable)."""


def error_kind(exc: BaseException) -> str:
    """A failure as the reports and Locust's failure table name it (the model driver's rows, the reference
    command's ``--json`` error code): lock_timeout, fenced, conflict, throttled, timeout, connection or other."""
    if isinstance(exc, LockTimeoutError):
        return "lock_timeout"
    if isinstance(exc, FencedError | LockLostError):
        return "fenced"
    if isinstance(exc, ConflictError):
        return "conflict"
    kind = aws_errors.kind(exc)
    return kind if kind in ("throttled", "conflict", "timeout", "connection") else "other"
