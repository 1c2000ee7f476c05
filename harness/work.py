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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields


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

    def request(self, op: str, n: int = 1) -> None:
        self.requests[op] += n

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

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


def current_work() -> Work | None:
    """The Work the request in flight counts into, if any step is recording."""
    return _current.get()
