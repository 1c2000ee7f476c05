"""Synthetic run directories with known shapes, for report tests and the report benchmark.

Vectorized (numpy) so a million-row run takes seconds to make. Each worker's
iterations in a window are Poisson with the rate ``rate(t)``; per-step times
and work counts are functions of time, so a test knows exactly which step
dominates when and which count grows with it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness.record import runinfo
from harness.record.schema import COUNT_COLUMNS, SCHEMA, STEP_COLUMNS, UNIT_COLUMNS

Curve = Callable[[np.ndarray], np.ndarray]
STEP_FIELDS = list(STEP_COLUMNS.values())


def make_run(path: str | Path, *, workers: int = 10, duration_s: float = 3600.0, rate: Curve,
             steps: dict[str, Curve] | None = None, counts: dict[str, Curve] | None = None,
             failure: Curve | None = None, error_kinds: tuple[str, ...] = ("lock_timeout",),
             status: str = "finished", scenario: str = "synthetic", backend: str = "dynamodb",
             shard_rows: int = 250_000, seed: int = 0, t0: float = 1_750_000_000.0) -> Path:
    """Write ``run.json`` and ``iterations/*.parquet``; ``rate(t)`` is iterations/s per worker."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    (path / "iterations").mkdir(parents=True, exist_ok=True)
    dt = 1.0
    grid = np.arange(0.0, duration_s, dt)
    per_window = rng.poisson(np.clip(rate(grid), 0, None) * dt, size=(workers, len(grid)))
    n_per_worker = per_window.sum(axis=1)
    user = np.repeat(np.arange(workers), n_per_worker)
    t_end = np.concatenate([np.repeat(grid, row) for row in per_window]) + rng.random(len(user)) * dt
    order = np.argsort(t_end, kind="stable")
    user, t_end = user[order], t_end[order]
    n = len(t_end)
    cols: dict[str, np.ndarray] = {}
    steps = steps or {"pull_ms": lambda t: np.full_like(t, 50.0)}
    for f in STEP_FIELDS:
        base = steps[f](t_end) if f in steps else np.zeros(n)
        cols[f] = base * rng.uniform(0.8, 1.2, n)
    total = sum(cols[f] for f in STEP_FIELDS) + 1.0
    counts = counts or {}
    for c in COUNT_COLUMNS:
        cols[c] = np.round(counts[c](t_end)).astype(np.int64) if c in counts else np.zeros(n, dtype=np.int64)
    for c in UNIT_COLUMNS:
        cols[c] = counts[c](t_end).astype(float) if c in counts else np.zeros(n)
    ok = rng.random(n) >= (failure(t_end) if failure else 0.0)
    kinds = np.array(error_kinds)[rng.integers(0, len(error_kinds), n)]
    error_kind = np.where(ok, "", kinds)
    iteration = np.zeros(n, dtype=np.int64)
    for w in range(workers):  # per-worker iteration counters
        idx = np.nonzero(user == w)[0]
        iteration[idx] = np.arange(len(idx))
    ts_end_us = ((t0 + t_end) * 1e6).astype(np.int64)
    ts_start_us = ts_end_us - (total * 1000).astype(np.int64)
    names = np.array([f"w0-{i}" for i in range(workers)])
    data = {
        "ts_start": pa.array(ts_start_us).cast(SCHEMA.field("ts_start").type),
        "ts_end": pa.array(ts_end_us).cast(SCHEMA.field("ts_end").type),
        "worker": pa.array(np.full(n, "local")), "user": pa.array(names[user]),
        "scenario": pa.array(np.full(n, scenario)), "backend": pa.array(np.full(n, backend)),
        "iteration": pa.array(iteration), "model_id": pa.array(np.char.add(names[user], "-m")),
        "ok": pa.array(ok), "error_kind": pa.array(error_kind),
        "error": pa.array(np.where(ok, "", np.char.add(error_kind, ": synthetic"))),
        "total_ms": pa.array(total),
    }
    for c in SCHEMA.names:
        if c not in data:
            data[c] = pa.array(cols[c])
    table = pa.table(data, schema=SCHEMA)
    for i, start in enumerate(range(0, max(n, 1), shard_rows)):
        pq.write_table(table.slice(start, shard_rows), path / "iterations" / f"part-synthetic-{i:06d}.parquet")
    runinfo.write(path, {
        "run_id": path.name, "scenario_name": scenario, "backend": backend, "endpoint_kind": "synthetic",
        "fleet": {"workers": workers, "processes": 1}, "status": status, "started_at": "synthetic",
        "ended_at": None if status != "finished" else "synthetic", "versions": runinfo.versions(),
    })
    return path
