"""Write the run's history (lock grants, renewals, releases, commit attempts) as JSON lines.

One file per Locust process that writes (``history/part-<tag>-<pid>-<n>.jsonl``),
appended every few seconds and never overwritten, so a crash loses at most the
last few seconds and two processes never share a file. In distributed mode the
workers' events ride their reports to the master, like the iteration rows.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path

HISTORY_DIR = "history"


class HistoryWriter:
    def __init__(self, run_dir: str | Path, tag: str = "local", flush_every_s: float = 5.0) -> None:
        self.dir = Path(run_dir) / HISTORY_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        for n in itertools.count(1):
            self.path = self.dir / f"part-{tag}-{os.getpid()}-{n:03d}.jsonl"
            if not self.path.exists():
                break
        self.path.touch()  # a run that recorded nothing still has a (empty) history
        self.flush_every_s = flush_every_s
        self._events: list[dict] = []
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self.written = 0

    def add(self, events: list[dict]) -> None:
        if not events:
            return
        with self._lock:
            self._events.extend(events)
        if time.monotonic() - self._last >= self.flush_every_s:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            events, self._events = self._events, []
            self._last = time.monotonic()
        if not events:
            return
        with self.path.open("a") as f:
            f.write("".join(json.dumps(e, separators=(",", ":"), default=str) + "\n" for e in events))
        self.written += len(events)
