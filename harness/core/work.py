"""What a step did, counted where it happens, so slowdowns can be explained.

Neutral ground between the datastore (which does the work) and the AWS
instrumentation (which counts requests, bytes and capacity units into it): the
step a request belongs to is carried in a context variable, set once where a
step starts (``recording``), so neither layer imports the other. Greenlets and
threads each have their own context; a thread pool task sets its own.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

# The requests that write (DynamoDB's and S3's): the spec's "write operations" (the row's ``write_requests``)
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "PutObject",
                    "DeleteObject", "DeleteObjects", "CopyObject", "UploadPart", "CompleteMultipartUpload"})


@dataclass
class Work:
    """Work counts of one step (or a sum of steps)."""

    requests: Counter[str] = field(default_factory=Counter)
    items_read: int = 0
    items_written: int = 0
    index_entries_written: int = 0
    files_pushed: int = 0
    files_pulled: int = 0
    catalog_rows: int = 0
    lock_attempts: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    request_ms: float = 0.0  # time inside this step's calls, summed (concurrent calls each count)
    queries: int = 0  # index reads of a pull: DynamoDB Queries, S3 index objects read (the backend counts them)
    item_bytes: dict[str, int] = field(default_factory=dict)  # sizes of items that grow, as last seen (the largest)
    # of the above, what only the harness's fencing made (beyond swamp): counted in ``for_fencing`` blocks
    fencing_requests: int = 0
    fencing_write_units: float = 0.0

    def request(self, op: str, n: int = 1) -> None:
        self.requests[op] += n

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def write_requests(self) -> int:
        return sum(n for op, n in self.requests.items() if op in WRITES)

    def add(self, other: Work) -> Work:
        """Add ``other`` into self; catalog_rows is a level, so the latest non-zero wins."""
        for f in fields(self):
            if f.name == "requests":
                self.requests.update(other.requests)
            elif f.name == "item_bytes":
                for k, v in other.item_bytes.items():
                    self.item_bytes[k] = max(v, self.item_bytes.get(k, 0))
            elif f.name == "catalog_rows":
                self.catalog_rows = other.catalog_rows or self.catalog_rows
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


_current: contextvars.ContextVar[Work | None] = contextvars.ContextVar("harness_work", default=None)


@contextmanager
def recording(work: Work) -> Iterator[Work]:
    """Attribute every instrumented request made inside the block (this thread/greenlet) to ``work``."""
    token = _current.set(work)
    try:
        yield work
    finally:
        _current.reset(token)


@contextmanager
def for_fencing(work: Work) -> Iterator[Work]:
    """Requests made in the block exist only for the harness's fencing (swamp makes none of them): they count
    into ``work`` as any request does, and into its ``fencing_requests`` and ``fencing_write_units`` too, so a
    fenced run says what fencing costs on top of swamp. Pass the yielded Work to calls that take one."""
    sub = Work()
    try:
        with recording(sub):
            yield sub
    finally:
        sub.fencing_requests, sub.fencing_write_units = sub.total_requests, sub.write_units  # all of them
        work.add(sub)


def current_work() -> Work | None:
    """The Work the request in flight counts into, if any step is recording."""
    return _current.get()


class Sends:
    """When the requests of a block were handed to the wire (botocore's before-send: retries too), in ms."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.times: list[int] = []

    @property
    def first(self) -> int | None:
        return self.times[0] if self.times else None

    @property
    def last(self) -> int | None:
        return self.times[-1] if self.times else None


_sends: contextvars.ContextVar[Sends | None] = contextvars.ContextVar("harness_sends", default=None)


@contextmanager
def sending(clock: Any) -> Iterator[Sends]:
    """Note the send time (on ``clock``) of every instrumented request made inside the block.

    A commit's seal is judged by when it was sent, not by when its caller
    started building it: a holder frozen between the two would otherwise hide
    a seal sent after a newer holder's grant. Without instrumentation (a bare
    client) nothing is noted and ``first`` is None.
    """
    log = Sends(lambda: int(clock.now() * 1000))
    token = _sends.set(log)
    try:
        yield log
    finally:
        _sends.reset(token)


def sealing() -> bool:
    """Is a seal being sent (inside ``sending``)? The explorer labels such a request a seal, whatever its key."""
    return _sends.get() is not None


def note_send() -> None:
    """Called by the instrumentation as a request is sent."""
    log = _sends.get()
    if log is not None:
        log.times.append(log.now_ms())
