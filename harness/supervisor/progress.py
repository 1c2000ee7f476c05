"""The progress line ``harness run`` prints every 10 s while a test runs: the rate now beside the total.

``[  40s/90s] 242 iterations recorded: 2.1 it/s now (last 10 s), 2.47 it/s since the start``

- **now** is the iterations that ended in the last ``WINDOW_S`` of what was recorded: the window ends at the
  newest recorded iteration's end (rows reach the disk every 5 s, so a window ending at the wall clock would
  read the unflushed seconds as a fall), and a window the test has not yet filled is not shown as one;
- **since the start** is every recorded iteration over the test's time so far;
- the clock stops at the test's bound: past it the test is being stopped (its rows collected), not running, so
  the line reads ``[ 90s/90s] ... stopping`` instead of ``[ 98s/90s]``.

Pure (times in, a line out) but for ``Ends``, which reads the new shards' end times; the supervisor's
``Watcher`` prints the line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

WINDOW_S = 10.0  # the "now" of the progress line


class Ends:
    """The end times (epoch s) of a test's recorded iterations, read once per shard as shards appear."""

    def __init__(self) -> None:
        self.seen: set[Path] = set()
        self.parts: list[np.ndarray] = []

    def add(self, paths: list[Path]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for p in paths:
            if p in self.seen:
                continue
            self.seen.add(p)
            try:
                col = pq.read_table(p, columns=["ts_end"]).column("ts_end")
            except (OSError, pa.ArrowException):
                continue  # a shard that cannot be read now counts in the total, not in the window
            us = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
            self.parts.append(us.astype(float) / 1e6)

    def array(self) -> np.ndarray:
        if len(self.parts) > 1:
            self.parts = [np.concatenate(self.parts)]
        return self.parts[0] if self.parts else np.empty(0)


def current_rate(ends: np.ndarray, started: float, window: float = WINDOW_S) -> float | None:
    """Iterations a second over the last ``window`` of the recorded rows (None until the rows cover one)."""
    if len(ends) == 0:
        return None
    last = float(ends.max())
    if last - started < window:
        return None
    return float(((ends > last - window) & (ends <= last)).sum()) / window


def line(label: str, elapsed: float, bound: float | None, rows: int, now: float | None) -> str:
    """The progress line (``label``: ``test 002`` in a web session, else empty)."""
    over = bound is not None and elapsed >= bound
    shown = min(elapsed, bound) if bound is not None else elapsed
    clock = f"{shown:5.0f}s/{bound:.0f}s" if bound is not None else f"{shown:5.0f}s"
    mean = rows / max(shown, 1.0)
    rate = (f"{now:.3g} it/s now (last {WINDOW_S:g} s), " if now is not None else "") + \
        f"{mean:.3g} it/s since the start"
    return (f"[{label}{' ' if label else ''}{clock}] {rows} iterations recorded: {rate}"
            + ("; stopping (collecting the rows)" if over else ""))
