"""The harness tab's numbers, computed from iteration rows with the report's definitions.

The report (``reports/compute.py``) and this tab must agree, or a user sees
one number live and another afterwards. So these are the same definitions,
over rows as they arrive instead of a DataFrame at the end:

- rate: successful (failed) iterations whose end falls in the span, per second;
- iteration failure ratio: failed iterations over all iterations;
- a step's share: its mean milliseconds over the sum of the steps' means (the
  report's stacked steps: lock wait, pull, method, push, commit, export,
  delete, prune; ``release`` is not stacked), over successful iterations;
- work counts: their mean per successful iteration;
- lock wait p50 / p95: linear-interpolated quantiles (pandas' default), over
  successful iterations (failed ones count in the failure rows);
- read / write units: their sum over the span, per second (every iteration's:
  a failed one consumed them too).

``tests/test_web_live.py`` checks these against ``reports.compute`` on the
same rows.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from harness.record.schema import STEP_COLUMNS

REPORT_STEPS = tuple(c for c in STEP_COLUMNS.values() if c != "release_ms")
COUNTS = ("pull_items_read", "index_entries_written", "catalog_rows", "files_pushed")
UNITS = ("read_units", "write_units")


def quantiles(values: array, qs: tuple[float, ...]) -> list[float | None]:
    """Linear interpolation between the closest ranks (numpy's and pandas' default); O(n), no sort kept."""
    if len(values) == 0:
        return [None] * len(qs)
    return [float(x) for x in np.quantile(np.frombuffer(values, dtype=np.float64), qs)]


@dataclass
class Summary:
    """Numbers over one span of a test."""

    seconds: float
    iterations: int
    ok: int
    lock_p50: float | None
    lock_p95: float | None
    step_shares: dict[str, float]
    counts: dict[str, float | None]
    units_per_s: dict[str, float]

    @property
    def failed(self) -> int:
        return self.iterations - self.ok

    @property
    def ok_per_s(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0

    @property
    def failed_per_s(self) -> float:
        return self.failed / self.seconds if self.seconds > 0 else 0.0

    @property
    def failure_ratio(self) -> float | None:
        return self.failed / self.iterations if self.iterations else None


@dataclass
class Totals:
    """Running sums over rows: a whole test's summary without keeping its rows."""

    iterations: int = 0
    ok: int = 0
    steps: dict[str, float] = field(default_factory=lambda: dict.fromkeys(REPORT_STEPS, 0.0))
    counts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0.0))
    units: dict[str, float] = field(default_factory=lambda: dict.fromkeys(UNITS, 0.0))
    lock_waits: array = field(default_factory=lambda: array("d"))
    first_start: float | None = None
    last_end: float | None = None

    def add(self, row: dict) -> None:
        self.iterations += 1
        for c in UNITS:
            self.units[c] += float(row.get(c) or 0.0)
        if row["ok"]:
            self.ok += 1
            for c in REPORT_STEPS:
                self.steps[c] += float(row.get(c) or 0.0)
            for c in COUNTS:
                self.counts[c] += float(row.get(c) or 0)
            self.lock_waits.append(float(row.get("lock_wait_ms") or 0.0))
        start, end = float(row["ts_start"]), float(row["ts_end"])
        self.first_start = start if self.first_start is None else min(self.first_start, start)
        self.last_end = end if self.last_end is None else max(self.last_end, end)

    def summary(self, seconds: float) -> Summary:
        n = self.ok  # step times and work counts are per successful iteration
        means = {c: (v / n if n else 0.0) for c, v in self.steps.items()}
        total = sum(means.values())
        p50, p95 = quantiles(self.lock_waits, (0.5, 0.95))
        shares = {c: (m / total if total > 0 else 0.0) for c, m in means.items()}
        return Summary(
            seconds=seconds, iterations=self.iterations, ok=self.ok,
            lock_p50=p50, lock_p95=p95,
            step_shares=shares, counts={c: (v / n if n else None) for c, v in self.counts.items()},
            units_per_s={c: (v / seconds if seconds > 0 else 0.0) for c, v in self.units.items()})


def summarize(rows: list[dict], seconds: float) -> Summary:
    """The summary of ``rows`` over a span of ``seconds``."""
    t = Totals()
    for r in rows:
        t.add(r)
    return t.summary(seconds)


class Live:
    """One test's rows as they arrive: a recent window, and the whole test so far.

    ``lag_s`` is how late rows arrive (a worker reports every 3 s): the recent
    window ends that long ago, so it is not read before its rows are in.
    """

    def __init__(self, window_s: float = 10.0, lag_s: float = 0.0, keep_s: float = 60.0) -> None:
        self.window_s, self.lag_s, self.keep_s = window_s, lag_s, keep_s
        self.recent: deque[dict] = deque()
        self.whole = Totals()

    def add(self, rows: list[dict]) -> None:
        for r in rows:
            self.whole.add(r)
            self.recent.append(r)

    def window(self, now: float, started_at: float) -> Summary:
        """The last ``window_s`` seconds that have all their rows (or less, early in a test)."""
        end = now - self.lag_s
        start = max(end - self.window_s, started_at)
        while self.recent and float(self.recent[0]["ts_end"]) < now - self.keep_s:
            self.recent.popleft()
        rows = [r for r in self.recent if start < float(r["ts_end"]) <= end]
        return summarize(rows, max(end - start, 1e-9))

    def test(self, now: float, started_at: float) -> Summary:
        """The whole test so far; its span runs from the test's start to the last row's end."""
        end = self.whole.last_end if self.whole.last_end is not None else now
        return self.whole.summary(max(end - started_at, 1e-9))
