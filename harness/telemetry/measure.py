"""Rows and history events as measurements: what the live meters count, defined once for both exporters.

The definitions (docs/live-metrics.md), each over every row that arrives (successful and failed):

- an iteration counts once, by outcome (``ok`` | ``failed``) and, when failed, its error kind (as
  ``harness.metrics.numbers.outcome`` says, for the live tab too);
- a step's duration is observed when the step ran in the iteration (its column above 0 ms: a step that did not
  run, such as a prune between prunes or the steps after a failure, is 0), in seconds;
- a step's requests are its ``<step>_requests`` column, summed;
- capacity units are the row's ``read_units`` and ``write_units``, summed;
- a lock grant counts once per ``grant`` event, and its wait (``granted_ms - started_ms``) is observed;
  a ``lock_timeout`` counts once. Lock keys are bounded (``KeyNames``): the first ``MAX_LOCK_KEYS`` keys seen
  keep their name, every later one is ``other`` (a disposable model's key is used once; a label per key
  would grow without end).

Pure: no exporter here, so the tests compare these with the rows themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.metrics import numbers
from harness.record.schema import STEP_COLUMNS, STEP_REQUEST_COLUMNS

MAX_LOCK_KEYS = 20
OTHER = "other"
UNITS = {"read": "read_units", "write": "write_units"}
# seconds: a local stand-in's millisecond steps up to a minute-long lock wait
BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class Batch:
    """A batch of rows and events, measured: counts keyed by their labels, and the observations."""

    iterations: Counter = field(default_factory=Counter)  # (process, outcome, error_kind) -> n
    steps: list[tuple[str, str, float]] = field(default_factory=list)  # (process, step, seconds)
    requests: Counter = field(default_factory=Counter)  # (process, step) -> n
    units: Counter = field(default_factory=Counter)  # (process, read|write) -> units
    grants: Counter = field(default_factory=Counter)  # lock key -> n
    waits: list[tuple[str, float]] = field(default_factory=list)  # (lock key, seconds)
    timeouts: Counter = field(default_factory=Counter)  # lock key -> n


class KeyNames:
    """Lock keys as labels: the first ``limit`` keys seen keep their name, the rest are ``other``."""

    def __init__(self, limit: int = MAX_LOCK_KEYS) -> None:
        self.limit, self.kept = limit, set[str]()

    def __call__(self, key: str) -> str:
        if key in self.kept:
            return key
        if len(self.kept) < self.limit:
            self.kept.add(key)
            return key
        return OTHER


def measure_rows(rows: Iterable[dict], batch: Batch | None = None) -> Batch:
    """Rows into ``batch`` (a new one by default)."""
    b = batch or Batch()
    for r in rows:
        process = str(r.get("worker") or "")
        ok, kind = numbers.outcome(r)
        b.iterations[(process, "ok" if ok else "failed", kind)] += 1
        for step, col in STEP_COLUMNS.items():
            ms = float(r.get(col) or 0.0)
            if ms > 0:
                b.steps.append((process, step, ms / 1000.0))
            n = int(r.get(STEP_REQUEST_COLUMNS[step][0]) or 0)
            if n:
                b.requests[(process, step)] += n
        for kind, col in UNITS.items():
            v = float(r.get(col) or 0.0)
            if v:
                b.units[(process, kind)] += v
    return b


def measure_events(events: Iterable[dict], names: KeyNames, batch: Batch | None = None) -> Batch:
    """The history's lock grants and timeouts into ``batch`` (other events are not measured)."""
    b = batch or Batch()
    for e in events:
        kind, key = e.get("type"), e.get("key")
        if key is None or kind not in ("grant", "lock_timeout"):
            continue
        label = names(str(key))
        if kind == "grant":
            b.grants[label] += 1
            started, granted = e.get("started_ms"), e.get("granted_ms")
            if started is not None and granted is not None:
                b.waits.append((label, max(0.0, (float(granted) - float(started)) / 1000.0)))
        else:
            b.timeouts[label] += 1
    return b
