"""Buffer iteration rows and flush them as Parquet shards every few seconds.

Memory stays flat on a nine-hour run (the buffer only holds a few seconds of
rows) and a crash loses at most the rows since the last flush. A shard is
written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.record.schema import SCHEMA


def to_table(rows: list[dict]) -> pa.Table:
    """Rows carry epoch-second floats (they cross Locust's msgpack channel); store UTC timestamps."""
    cols = {name: [r.get(name) for r in rows] for name in SCHEMA.names}
    for ts in ("ts_start", "ts_end"):
        cols[ts] = pa.array([int(v * 1_000_000) for v in cols[ts]], pa.int64()).cast(SCHEMA.field(ts).type)
    return pa.table(cols, schema=SCHEMA)


class ShardWriter:
    def __init__(self, run_dir: str | Path, tag: str = "local", flush_every_s: float = 5.0) -> None:
        self.dir = Path(run_dir) / "iterations"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tag = tag
        self.flush_every_s = flush_every_s
        self._rows: list[dict] = []
        self._seq = itertools.count(1)
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self.written = 0

    def add(self, rows: list[dict]) -> None:
        with self._lock:
            self._rows.extend(rows)
        if time.monotonic() - self._last >= self.flush_every_s:
            self.flush()

    def flush(self) -> Path | None:
        with self._lock:
            rows, self._rows = self._rows, []
            self._last = time.monotonic()
        if not rows:
            return None
        table = to_table(rows)
        path = self.dir / f"part-{self.tag}-{os.getpid()}-{next(self._seq):06d}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
        self.written += len(rows)
        return path
