"""``generator.csv``: the load generator's own CPU, one row per Locust process per sample.

A slow iteration rate means nothing if the processes sending the load were
saturated themselves; the reports read this file to say so. The numbers are
Locust's own measure (``runner.current_cpu_usage`` for this process, and each
worker's ``cpu_usage`` as the master sees it in its heartbeats).
"""

from __future__ import annotations

import csv
from pathlib import Path

GENERATOR_CSV = "generator.csv"
COLUMNS = ("ts", "process", "cpu_percent")


class GeneratorLog:
    """Appends samples to ``RUN_DIR/generator.csv`` (header once), flushed at every sample."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / GENERATOR_CSV
        self.samples = 0

    def add(self, ts: float, cpu_by_process: dict[str, float]) -> None:
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(COLUMNS)
            for process, cpu in sorted(cpu_by_process.items()):
                w.writerow([f"{ts:.3f}", process, f"{float(cpu):.1f}"])
        self.samples += 1
