"""Buffer records and flush them as files in a run directory every few seconds.

Memory stays flat on a nine-hour run (a buffer only holds a few seconds of
records) and a crash loses at most the records since the last flush. A file is
written under a temporary name and renamed, so a reader never sees half a file;
a write that fails (a full disk) removes its temporary file and keeps its
records for the next flush, so a shard is whole or absent.

File names never collide: each writer has a random token besides its tag and
process id, and never reuses a sequence number, so two tests, two processes or
a restarted process writing into the same directory all add files, never
replace one.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.record.schema import SCHEMA

log = logging.getLogger("harness")

HISTORY_DIR = "history"
ITERATIONS_DIR = "iterations"


def to_table(rows: list[dict]) -> pa.Table:
    """Rows carry epoch-second floats (they cross Locust's msgpack channel); store UTC timestamps."""
    cols = {name: [r.get(name) for r in rows] for name in SCHEMA.names}
    for ts in ("ts_start", "ts_end", "ts_intended"):
        cols[ts] = pa.array([None if v is None else int(v * 1_000_000) for v in cols[ts]],
                            pa.int64()).cast(SCHEMA.field(ts).type)
    return pa.table(cols, schema=SCHEMA)


class _BufferedFiles:
    """A buffer flushed to ``<dir>/part-<tag>-<pid>-<token>-<seq><suffix>`` files."""

    suffix = ""

    def __init__(self, directory: Path, tag: str, flush_every_s: float) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tag = tag
        self.flush_every_s = flush_every_s
        self._token = secrets.token_hex(3)
        self._records: list[dict] = []
        self._seq = itertools.count(1)
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self.written = 0
        self.error: OSError | None = None  # the last flush's failure (a full disk), until one succeeds

    def add(self, records: list[dict]) -> None:
        if not records:
            return
        with self._lock:
            self._records.extend(records)
        if time.monotonic() - self._last >= self.flush_every_s:
            try:
                self.flush()
            except OSError as e:  # a full disk: the records stay buffered, tried again at the next flush
                if self.error is None:
                    log.error("harness: cannot write %s (%s); its records are kept for the next flush", self.dir, e)
                self.error = e

    def _next_path(self) -> Path:
        while True:
            path = self.dir / f"part-{self.tag}-{os.getpid()}-{self._token}-{next(self._seq):06d}{self.suffix}"
            if not path.exists():
                return path

    def flush(self) -> Path | None:
        with self._lock:
            records, self._records = self._records, []
            self._last = time.monotonic()
        if not records:
            return None
        path = self._next_path()
        tmp = path.with_name(path.name + ".tmp")
        try:
            self._write(records, tmp)
            os.replace(tmp, path)
        except OSError:  # whole or absent: the half-written file goes, its records back to the buffer's front
            tmp.unlink(missing_ok=True)
            with self._lock:
                self._records[:0] = records
            raise
        self.written += len(records)
        self.error = None
        return path

    def _write(self, records: list[dict], path: Path) -> None:
        raise NotImplementedError


class ShardWriter(_BufferedFiles):
    """Iteration rows -> ``RUN_DIR/iterations/part-*.parquet`` (schema in ``harness.record.schema``)."""

    suffix = ".parquet"

    def __init__(self, run_dir: str | Path, tag: str = "local", flush_every_s: float = 5.0) -> None:
        super().__init__(Path(run_dir) / ITERATIONS_DIR, tag, flush_every_s)

    def _write(self, records: list[dict], path: Path) -> None:
        pq.write_table(to_table(records), path, compression="zstd")


class HistoryWriter(_BufferedFiles):
    """Events (lock grants, commit attempts, ...) -> ``RUN_DIR/history/part-*.jsonl``, one JSON object a line."""

    suffix = ".jsonl"

    def __init__(self, run_dir: str | Path, tag: str = "local", flush_every_s: float = 5.0) -> None:
        super().__init__(Path(run_dir) / HISTORY_DIR, tag, flush_every_s)

    def _write(self, records: list[dict], path: Path) -> None:
        with path.open("w") as f:
            for r in records:
                f.write(json.dumps(r, sort_keys=True, default=str))
                f.write("\n")
