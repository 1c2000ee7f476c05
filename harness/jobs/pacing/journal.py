"""The job journal (SQLite): every job's identity and state, every item's result.

Results are committed in small batches (WAL, synchronous=NORMAL): a crash
loses at most the last batch, and those items are simply written again on
resume; the jobs' writes are conditional, so a second write of an item that
already landed is recognised, not duplicated. A job recorded as running whose
process is gone reads ``Interrupted``.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL, state TEXT NOT NULL, reason TEXT,
    table_name TEXT, table_arn TEXT, table_created TEXT, key_schema TEXT, endpoint TEXT,
    total INTEGER NOT NULL, done INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
    throttled INTEGER NOT NULL DEFAULT 0, rate REAL DEFAULT 0, ceiling REAL DEFAULT 0,
    pid INTEGER, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    job_id TEXT NOT NULL, idx INTEGER NOT NULL, status TEXT NOT NULL, error TEXT,
    PRIMARY KEY (job_id, idx));
"""


def default_path(jobs_dir: str | Path | None = None) -> Path:
    """``jobs_dir`` (``HARNESS_JOBS_DIR``, read at the command line's edge) or ``runs/jobs``, then ``jobs.db``."""
    return Path(jobs_dir or Path.cwd() / "runs" / "jobs") / "jobs.db"


@dataclass
class JobRow:
    id: str
    kind: str
    params: dict[str, Any]
    state: str
    reason: str | None
    table_name: str | None
    table_arn: str | None
    table_created: str | None
    key_schema: list | None
    endpoint: str | None
    total: int
    done: int
    failed: int
    throttled: int
    rate: float
    ceiling: float
    pid: int | None
    created_at: float
    updated_at: float

    @property
    def shown_state(self) -> str:
        """``running`` only while its process lives; after a crash it reads ``interrupted``."""
        if self.state == "running" and not _alive(self.pid):
            return "interrupted"
        return self.state


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return True


def _serialized(method: Callable[..., T]) -> Callable[..., T]:
    """One statement (or transaction) on the shared connection at a time."""

    @functools.wraps(method)
    def locked(self: Journal, *args: Any, **kwargs: Any) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class Journal:
    """The jobs' checkpoints. Jobs in several threads of one process share one connection (two jobs on one
    table, a background load beside a run), so every use of it is serialized: interleaved on one connection,
    one thread's ``with self.db`` commits or rolls back another's transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.RLock()
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self.db.commit()

    @_serialized
    def create(self, job_id: str, kind: str, params: dict, total: int, table: dict | None,
               endpoint: str | None) -> None:
        now = time.time()
        t = table or {}
        self.db.execute(
            "INSERT INTO jobs (id, kind, params, state, table_name, table_arn, table_created, key_schema, endpoint, "
            "total, pid, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (job_id, kind, json.dumps(params), "running", t.get("TableName"), t.get("TableArn"),
             str(t.get("CreationDateTime")) if t else None, json.dumps(t.get("KeySchema")) if t else None,
             endpoint, total, os.getpid(), now, now))
        self.db.commit()

    @_serialized
    def get(self, job_id: str) -> JobRow | None:
        cur = self.db.execute("SELECT * FROM jobs WHERE id=?", (job_id,))
        row = cur.fetchone()
        return self._row(cur, row) if row else None

    @_serialized
    def all(self) -> list[JobRow]:
        cur = self.db.execute("SELECT * FROM jobs ORDER BY created_at")
        return [self._row(cur, r) for r in cur.fetchall()]

    @staticmethod
    def _row(cur: sqlite3.Cursor, row: tuple) -> JobRow:
        d = dict(zip([c[0] for c in cur.description], row, strict=True))
        d["params"] = json.loads(d["params"])
        d["key_schema"] = json.loads(d["key_schema"]) if d["key_schema"] else None
        return JobRow(**d)

    @_serialized
    def done_indexes(self, job_id: str) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT idx FROM items WHERE job_id=? AND status='ok'", (job_id,))}

    @_serialized
    def record(self, job_id: str, results: list[tuple[int, str, str | None]], progress: dict[str, Any]) -> None:
        """Commit a batch of item results and the job's counters in one transaction."""
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO items (job_id, idx, status, error) VALUES (?,?,?,?)",
                                [(job_id, i, s, e) for i, s, e in results])
            sets = ", ".join(f"{k}=?" for k in progress)
            self.db.execute(f"UPDATE jobs SET {sets}, updated_at=? WHERE id=?",
                            (*progress.values(), time.time(), job_id))

    @_serialized
    def set_state(self, job_id: str, state: str, reason: str | None = None, pid: int | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE jobs SET state=?, reason=?, pid=?, updated_at=? WHERE id=?",
                            (state, reason, pid if pid is not None else os.getpid(), time.time(), job_id))

    @_serialized
    def counts(self, job_id: str) -> tuple[int, int]:
        ok = self.db.execute("SELECT COUNT(*) FROM items WHERE job_id=? AND status='ok'", (job_id,)).fetchone()[0]
        bad = self.db.execute("SELECT COUNT(*) FROM items WHERE job_id=? AND status='failed'", (job_id,)).fetchone()[0]
        return ok, bad
