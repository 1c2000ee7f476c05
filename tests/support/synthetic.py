"""Synthetic run directories with known shapes, for report tests and the report benchmark.

Vectorized (numpy) so a million-row run takes seconds to make. Each worker's
iterations in a second are Poisson with the rate ``rate(t)``; per-step times
and work counts of successful iterations are functions of time (with +-20 %
noise on the times), so a test knows exactly which step dominates when and
which count grows with it. Failed iterations are what they are in a real run:
fast, no work done, only the step they failed in (``failure_ms`` in
``failure_step``) and their error message.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from harness.record import runinfo
from harness.record.schema import (
    COUNT_COLUMNS,
    QUERY_COLUMNS,
    SCHEMA,
    SIZE_COLUMNS,
    STEP_COLUMNS,
    STEP_REQUEST_COLUMNS,
    UNIT_COLUMNS,
)

Curve = Callable[[np.ndarray], np.ndarray]
STEP_FIELDS = list(STEP_COLUMNS.values())
REQUEST_FIELDS = [c for pair in STEP_REQUEST_COLUMNS.values() for c in pair] + list(QUERY_COLUMNS) + list(SIZE_COLUMNS)
T0 = 1_750_000_000.0
HISTORY_FLUSH_S = 5.0  # a run's history writer flushes a file every 5 s


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def make_table(*, workers: int = 10, duration_s: float = 3600.0, rate: Curve,
               steps: dict[str, Curve] | None = None, counts: dict[str, Curve] | None = None,
               failure: Curve | None = None, error_kinds: tuple[str, ...] = ("lock_timeout",),
               messages: dict[str, str] | None = None, failure_step: str = "lock_wait_ms",
               failure_ms: Curve | None = None, failure_counts: dict[str, Curve] | None = None,
               requests: dict[str, Curve] | None = None, think_ms: Curve | None = None,
               scenario: str = "synthetic", backend: str = "dynamodb", seed: int = 0,
               t0: float = T0, unrecorded: tuple[str, ...] = ()) -> pa.Table:
    """The iteration rows of a synthetic run, in the record schema; ``rate(t)`` is iterations/s per worker.

    ``requests`` gives per-step request columns of successful iterations (``pull_requests``,
    ``pull_request_ms``, ``pull_queries``, ..., and the size column ``registry_bytes``); the ones not given are
    left null, as in a run recorded
    before the rows had them. ``think_ms`` is each iteration's time outside the steps (client CPU, waits).
    ``unrecorded``: columns left null (a driver that cannot measure them: the command driver's work counts).
    """
    rng = np.random.default_rng(seed)
    dt = 1.0
    grid = np.arange(0.0, duration_s, dt)
    per_window = rng.poisson(np.clip(rate(grid), 0, None) * dt, size=(workers, len(grid)))
    n_per_worker = per_window.sum(axis=1)
    user = np.repeat(np.arange(workers), n_per_worker)
    t_end = np.concatenate([np.repeat(grid, row) for row in per_window]) + rng.random(len(user)) * dt
    t_end = np.minimum(t_end, duration_s)
    order = np.argsort(t_end, kind="stable")
    user, t_end = user[order], t_end[order]
    n = len(t_end)
    ok = rng.random(n) >= (failure(t_end) if failure else 0.0)
    cols: dict[str, np.ndarray] = {}
    steps = steps or {"pull_ms": lambda t: np.full_like(t, 50.0)}
    for f in STEP_FIELDS:
        base = steps[f](t_end) if f in steps else np.zeros(n)
        cols[f] = np.where(ok, base * rng.uniform(0.8, 1.2, n), 0.0)
    fail_ms = failure_ms(t_end) if failure_ms else np.full(n, 5.0)
    cols[failure_step] = np.where(ok, cols[failure_step], fail_ms)
    total = sum(cols[f] for f in STEP_FIELDS) + (think_ms(t_end) if think_ms else 1.0)
    counts = counts or {}
    failure_counts = failure_counts or {}
    for c in (*COUNT_COLUMNS, *UNIT_COLUMNS):
        good = counts[c](t_end) if c in counts else np.zeros(n)
        bad = failure_counts[c](t_end) if c in failure_counts else np.zeros(n)
        v = np.where(ok, good, bad)
        cols[c] = np.round(v).astype(np.int64) if c in COUNT_COLUMNS else v.astype(float)
    requests = requests or {}
    for c in REQUEST_FIELDS:
        if c in requests:
            v = np.where(ok, requests[c](t_end), 0.0)
            cols[c] = np.round(v).astype(np.int64) if SCHEMA.field(c).type == pa.int64() else v.astype(float)
    pick = rng.integers(0, len(error_kinds), n)
    error_kind = np.where(ok, "", np.array(error_kinds)[pick])
    texts = np.array([(messages or {}).get(k, f"{k}: synthetic") for k in error_kinds])
    error = np.where(ok, "", texts[pick])
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
        "ok": pa.array(ok), "error_kind": pa.array(error_kind), "error": pa.array(error),
        "total_ms": pa.array(total),
    }
    for c in SCHEMA.names:
        if c not in data:
            data[c] = pa.array(cols[c]) if c in cols and c not in unrecorded else pa.nulls(n, SCHEMA.field(c).type)
    return pa.table(data, schema=SCHEMA)


def _write_lock_history(path: Path, table: pa.Table, scope: str) -> None:
    """A grant and a release per iteration that got the lock (not the ones that timed out waiting)."""
    df = table.select(["ts_start", "user", "ok", "error_kind", *STEP_FIELDS]).to_pandas()
    got = df["error_kind"] != "lock_timeout"
    df = df[got]
    start = df["ts_start"].astype("int64").to_numpy() / 1e3  # us -> ms
    granted = start + df["lock_wait_ms"].to_numpy()
    held = df[["pull_ms", "method_ms", "push_ms", "commit_ms", "export_ms"]].sum(axis=1).to_numpy()
    user = df["user"].to_numpy()
    key = np.char.add(".locks/", np.char.add(user.astype(str), ".lock")) if scope == "per-user" else np.full(
        len(df), "dynamodb://synthetic-table")
    nonce = np.char.add("n", np.arange(len(df)).astype(str))
    grants = pd.DataFrame({"type": "grant", "key": key, "holder": user, "nonce": nonce,
                           "started_ms": np.round(start).astype(np.int64),
                           "granted_ms": np.round(granted).astype(np.int64),
                           "expires_ms": np.round(granted + 3000).astype(np.int64), "attempts": 1})
    releases = pd.DataFrame({"type": "release", "key": key, "holder": user, "nonce": nonce,
                             "invoke_ms": np.round(granted + held).astype(np.int64), "ok": True})
    at = np.concatenate([grants["granted_ms"].to_numpy(), releases["invoke_ms"].to_numpy()])
    lines = np.array((grants.to_json(orient="records", lines=True).splitlines()
                      + releases.to_json(orient="records", lines=True).splitlines()), dtype=object)[np.argsort(at)]
    (path / "history").mkdir(exist_ok=True)
    span_ms = float(at.max() - at.min()) if len(at) else 0.0
    per = max(1, int(len(lines) * HISTORY_FLUSH_S * 1000 / max(span_ms, 1.0)))  # one file per flush, as a run
    for i in range(0, len(lines), per):
        (path / "history" / f"part-synthetic-{i // per:06d}.jsonl").write_text("\n".join(lines[i:i + per]) + "\n")


def make_rows(**kw: Any) -> pd.DataFrame:
    """The rows as a report reads them (for tests that need no directory)."""
    from harness.report.load import REPORT_COLUMNS

    df = make_table(**kw).select(REPORT_COLUMNS).to_pandas()
    return df


def run_info(*, workers: int, duration_s: float, scenario: str = "synthetic", backend: str = "dynamodb",
             status: str = "finished", t0: float = T0, checks: dict | None = None, **extra: Any) -> dict:
    """A run.json for a synthetic run; ``ended_at`` is the load's end (None while it runs)."""
    info = {
        "run_id": f"{scenario}-synthetic", "scenario_name": scenario, "backend": backend,
        "endpoint_kind": "synthetic", "fleet": {"workers": workers, "processes": 1}, "status": status,
        "started_at": iso(t0), "ended_at": iso(t0 + duration_s) if status == "finished" else None,
        "versions": runinfo.versions(), "stop_reason": "run time reached" if status == "finished" else None,
        "scenario": {"name": scenario, "description": f"synthetic {scenario} run", "backend": backend,
                     "fleet": {"workers": workers, "duration_s": duration_s},
                     "checks": checks or {"max_failure_ratio": 1.0, "min_rate_last_window": 0.0, "window_s": 30.0}},
    }
    info.update(extra)
    return info


def make_run(path: str | Path, *, workers: int = 10, duration_s: float = 3600.0, rate: Curve,
             status: str = "finished", scenario: str = "synthetic", backend: str = "dynamodb",
             shard_rows: int = 250_000, seed: int = 0, t0: float = T0, checks: dict | None = None,
             probe: Curve | None = None, probe_op: str = "GetItem", probe_every_s: float = 5.0,
             generator: dict[str, Curve] | None = None, generator_every_s: float = 3.0,
             safety: dict | None = None, info: dict | None = None, history: bool = False,
             lock_history: str | None = None, **table_kw: Any) -> Path:
    """Write ``run.json``, ``iterations/*.parquet`` and the optional side files of a synthetic run.

    ``lock_history`` writes ``history/`` with a grant and a release per iteration that got the lock:
    ``"per-user"`` one key per user (a namespace each), ``"shared"`` one key for all (held from the end
    of the lock wait until the steps under it are done).
    """
    rng = np.random.default_rng(seed + 1_000_003)
    path = Path(path)
    (path / "iterations").mkdir(parents=True, exist_ok=True)
    table = make_table(workers=workers, duration_s=duration_s, rate=rate, scenario=scenario, backend=backend,
                       seed=seed, t0=t0, **table_kw)
    n = table.num_rows
    for i, start in enumerate(range(0, max(n, 1), shard_rows)):
        pq.write_table(table.slice(start, shard_rows), path / "iterations" / f"part-synthetic-{i:06d}.parquet")
    if lock_history:
        _write_lock_history(path, table, lock_history)
    if probe is not None:  # sampled only while the load ran, like the real probe
        ts = np.arange(probe_every_s, duration_s, probe_every_s)
        ms = probe(ts) * rng.lognormal(0, 0.1, len(ts))
        pd.DataFrame({"ts": np.round(t0 + ts, 3), "op": probe_op, "ms": np.round(ms, 3)}).to_csv(
            path / "probes.csv", index=False)
    if generator is not None:
        with (path / "generator.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["ts", "process", "cpu_percent"])
            for ts in np.arange(generator_every_s, duration_s, generator_every_s):
                for proc, curve in generator.items():
                    w.writerow([f"{t0 + ts:.3f}", proc, f"{float(curve(np.array([ts]))[0]):.1f}"])
    if history:
        ts = np.arange(0, duration_s + 1, 2.0)
        pd.DataFrame({"Timestamp": (t0 + ts).astype(int), "User Count": workers, "Type": "",
                      "Name": "Aggregated"}).to_csv(path / "locust_stats_history.csv", index=False)
    if safety is not None:
        (path / "safety.json").write_text(json.dumps(safety))
    meta = run_info(workers=workers, duration_s=duration_s, scenario=scenario, backend=backend, status=status,
                    t0=t0, checks=checks)
    meta["run_id"] = path.name
    meta.update(info or {})
    runinfo.write(path, meta)
    return path


def simulate_lock(*, workers: int, duration_s: float, hold_ms: tuple[float, float], retry_ms: tuple[float, float],
                  wait_ms: float = 1000.0, outside_ms: float = 5.0, key: str = "dynamodb://synthetic-table",
                  seed: int = 0, t0: float = T0) -> tuple[list[dict], list[dict], dict[str, float]]:
    """One lock key shared by ``workers``, as the datastore's lock runs it: (rows, history events, truth).

    Each worker acquires (the first attempt at once, then a retry every ``retry_ms`` drawn uniformly), holds
    it for ``hold_ms`` (its pull and commit), releases, spends ``outside_ms`` outside any iteration, and
    starts the next; a wait past ``wait_ms`` fails the iteration with swamp's lock-timeout message. The truth
    is integrated from the simulation's own state (a holder, waiters), not from the events, so a test of
    the report's reading of the history is not circular.
    """
    import heapq

    rng = np.random.default_rng(seed)
    end = duration_s
    holder_until = -1.0  # the lock is held until then
    waiting: dict[int, float] = {}  # worker -> when it started waiting
    heap: list[tuple[float, int, int]] = [(float(rng.uniform(0, 0.05)), w, 0) for w in range(workers)]
    heapq.heapify(heap)
    rows: list[dict] = []
    events: list[dict] = []
    seq = itertools.count()
    held_total, busy_total, last_t = 0.0, 0.0, 0.0
    iteration = [0] * workers
    msg = f"Lock timeout after {int(wait_ms)}ms on key: {key}"

    def account(now: float) -> None:
        nonlocal held_total, busy_total, last_t
        now = min(now, end)
        if now <= last_t:
            return
        held = max(0.0, min(now, holder_until) - last_t)
        held_total += held
        busy_total += (now - last_t) if waiting else held
        last_t = now

    while heap:
        now, w, _ = heapq.heappop(heap)
        if now >= end:
            break
        account(now)
        if w not in waiting:
            waiting[w] = now
        started = waiting[w]
        if now >= holder_until:  # free: granted
            del waiting[w]
            hold = float(rng.uniform(*hold_ms)) / 1000
            nonce = f"n{next(seq)}"
            holder_until = now + hold
            user = f"w0-{w}"
            events.append({"type": "grant", "key": key, "holder": user, "nonce": nonce,
                           "started_ms": int((t0 + started) * 1000), "invoke_ms": int((t0 + now) * 1000),
                           "granted_ms": int((t0 + now) * 1000), "expires_ms": int((t0 + now + 3) * 1000),
                           "attempts": 1, "worker": "local", "user": user})
            if now + hold < end:
                events.append({"type": "release", "key": key, "holder": user, "nonce": nonce,
                               "invoke_ms": int((t0 + now + hold) * 1000), "ok": True})
                wait = (now - started) * 1000
                rows.append({"ts_start": t0 + started, "ts_end": t0 + now + hold, "user": user, "ok": True,
                             "error_kind": "", "error": "", "lock_wait_ms": wait, "pull_ms": hold * 400,
                             "commit_ms": hold * 600, "total_ms": wait + hold * 1000, "lock_attempts": 1,
                             "iteration": iteration[w]})
                iteration[w] += 1
            heapq.heappush(heap, (now + hold + outside_ms / 1000, w, next(seq)))
        elif (now - started) * 1000 + retry_ms[0] > wait_ms:  # the next retry would pass the wait: give up
            del waiting[w]
            user = f"w0-{w}"
            events.append({"type": "lock_timeout", "key": key, "holder": user, "invoke_ms": int((t0 + started) * 1000),
                           "end_ms": int((t0 + now) * 1000), "attempts": 1})
            rows.append({"ts_start": t0 + started, "ts_end": t0 + now, "user": user, "ok": False,
                         "error_kind": "lock_timeout", "error": msg, "lock_wait_ms": (now - started) * 1000,
                         "pull_ms": 0.0, "commit_ms": 0.0, "total_ms": (now - started) * 1000, "lock_attempts": 1,
                         "iteration": iteration[w]})
            iteration[w] += 1
            heapq.heappush(heap, (now + outside_ms / 1000, w, next(seq)))
        else:
            heapq.heappush(heap, (now + float(rng.uniform(*retry_ms)) / 1000, w, next(seq)))
    account(end)
    return rows, events, {"held": held_total / end, "busy": busy_total / end}


def make_lock_run(path: str | Path, *, workers: int, duration_s: float, seed: int = 0, t0: float = T0,
                  scenario: str = "shared-lock", **sim: Any) -> tuple[Path, dict[str, float]]:
    """A run directory of ``simulate_lock``: its rows, ``history/``, run.json; and the simulation's truth."""
    from harness.record.writer import to_table

    path = Path(path)
    rows, events, truth = simulate_lock(workers=workers, duration_s=duration_s, seed=seed, t0=t0, **sim)
    full = []
    for r in rows:
        row = {c: None for c in SCHEMA.names}
        row.update({c: 0.0 for c in (*STEP_FIELDS, *UNIT_COLUMNS)})
        row.update({c: 0 for c in COUNT_COLUMNS})
        row.update(r, worker="local", scenario=scenario, backend="dynamodb", model_id=f"{r['user']}-m")
        full.append(row)
    (path / "iterations").mkdir(parents=True, exist_ok=True)
    pq.write_table(to_table(full), path / "iterations" / "part-synthetic-000000.parquet")
    (path / "history").mkdir(exist_ok=True)
    with (path / "history" / "part-synthetic-000000.jsonl").open("w") as f:
        for e in events:
            f.write(json.dumps(e, sort_keys=True) + "\n")
    meta = run_info(workers=workers, duration_s=duration_s, scenario=scenario, t0=t0)
    meta["run_id"] = path.name
    runinfo.write(path, meta)
    return path, truth
