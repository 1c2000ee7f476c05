"""Stand-in detection: time a constant-cost request every few seconds.

A GetItem of one small item (S3: a GetObject of one small object) costs the
same on any healthy backend whatever the table holds. If its latency grows
over a run, the backend itself got slower (moto's Query scans the whole table,
so a stand-in slows as the table grows); if it stays flat while iterations slow
down, the workload is asking for more. Rows go to ``RUN_DIR/probes.csv``.
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from typing import Any

from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend

PROBES_CSV = "probes.csv"
PROBE_KEY = "PROBE#harness"


class Probe:
    def __init__(self, backend: Any, run_dir: str | Path, every_s: float) -> None:
        self.backend, self.every_s = backend, every_s
        self.path = Path(run_dir) / PROBES_CSV
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="harness-probe")

    def _seed(self) -> None:
        if isinstance(self.backend, DynamoBackend):
            self.backend.client.put_item(TableName=self.backend.table, Item={
                "pk": {"S": PROBE_KEY}, "sk": {"S": "PROBE"}, "v": {"S": "x" * 100}})
        else:
            self.backend.client.put_object(Bucket=self.backend.bucket, Key=self.backend.objects.key(".probe"),
                                           Body=b"x" * 100)

    def once(self) -> tuple[str, float]:
        t = time.perf_counter()
        if isinstance(self.backend, DynamoBackend):
            self.backend.client.get_item(TableName=self.backend.table, Key={"pk": {"S": PROBE_KEY},
                                                                            "sk": {"S": "PROBE"}})
            op = "GetItem"
        else:
            assert isinstance(self.backend, S3Backend)
            self.backend.client.get_object(Bucket=self.backend.bucket,
                                           Key=self.backend.objects.key(".probe"))["Body"].read()
            op = "GetObject"
        return op, (time.perf_counter() - t) * 1000

    def _run(self) -> None:
        try:
            self._seed()
        except Exception:
            return
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["ts", "op", "ms"])
            while not self._stop.wait(self.every_s):
                try:
                    op, ms = self.once()
                except Exception:
                    continue
                w.writerow([f"{time.time():.3f}", op, f"{ms:.3f}"])
                f.flush()

    def start(self) -> Probe:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
