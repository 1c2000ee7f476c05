"""``keys.csv``: read and write units per partition key per interval (top keys only), with throttles.

Columns ``ts,process,table,index,key,read_units,write_units,throttles``: one row
per key per interval and Locust process (``index`` empty for the base table;
``key`` empty for the sum of the keys below the top ones). Units are the ones
DynamoDB would bill (``harness.aws.capacity``), summed over the interval;
``throttles`` counts throttled attempts (retried or not). The report reads it
to compare the hottest key against the per-partition limits
(``harness/report/run/utilization.py``); a run without it has no per-key view.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

KEYS_CSV = "keys.csv"
COLUMNS = ("ts", "process", "table", "index", "key", "read_units", "write_units", "throttles")


class KeysLog:
    """Appends intervals to ``RUN_DIR/keys.csv`` (header once), flushed at every ``add``."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / KEYS_CSV
        self.rows = 0

    def add(self, process: str, rows: list[dict[str, Any]]) -> None:
        """One interval of one process (``KeyLoad.drain``'s rows); nothing is written for an empty one."""
        if not rows:
            return
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(COLUMNS)
            for r in rows:
                w.writerow([f"{float(r['ts']):.3f}", process, r["table"], r.get("index") or "", r.get("key") or "",
                            f"{float(r.get('read_units') or 0):.1f}", f"{float(r.get('write_units') or 0):.1f}",
                            int(r.get("throttles") or 0)])
        self.rows += len(rows)
