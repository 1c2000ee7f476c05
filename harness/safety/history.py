"""Read a run's history: the JSON-lines events written under ``RUN_DIR/history/``."""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.errors import HarnessError

HISTORY_DIR = "history"


def history_files(run_dir: str | Path) -> list[Path]:
    d = Path(run_dir) / HISTORY_DIR
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def read_events(run_dir: str | Path) -> list[dict]:
    """Every event of the run; a line cut short by a crash is skipped (it was never complete)."""
    files = history_files(run_dir)
    if not (Path(run_dir) / HISTORY_DIR).is_dir():
        raise HarnessError(f"{run_dir} has no history (history/*.jsonl): it was recorded by a harness without "
                           "safety history, or the run never started")
    events = []
    for path in files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events
