"""Simulated closed fleets for the rate forecast: rows whose step time follows a count each iteration grows, and
the run directory the report reads. The forecast's tests (tests/unit/report/test_forecast.py) and its benchmark
(bench/forecast.py) run the same fleets; they live here, not in bench/, so no test imports a benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from harness.record import runinfo
from harness.record.schema import COUNT_COLUMNS, SCHEMA, STEP_COLUMNS, UNIT_COLUMNS
from tests.support.synthetic import T0, run_info


def simulate(*, workers: int, duration_s: float, base_ms: float = 100.0, per_entry_ms: float = 0.5,
             power: float = 1.0, entries_per_it: float = 10.0, start_entries: float = 0.0, cap: float | None = None,
             shared: bool = False, lock_hold_ms: float | None = None, gap_ms: float = 20.0, seed: int = 0,
             noise: float = 0.15, export_per_row_ms: float = 0.0, rows_per_it: float = 1.0,
             slowing_per_it_ms: float = 0.0, outside_per_entry_ms: float = 0.0, first_pass: int | None = None,
             entries_after: float = 0.0, speed_sd: float = 0.0,
             speed_block_s: float = 20.0, units_per_row: float = 0.0,
             partition_limit: float = 1000.0) -> list[dict[str, Any]]:
    """A closed fleet, iteration by iteration: each iteration adds ``entries_per_it`` to its namespace's count
    (its worker's own, or the fleet's with ``shared``; at most ``cap``: a pruned catalog) and its commit takes
    ``per_entry_ms * count ** power`` beside ``base_ms`` of other steps (lognormal noise). With ``lock_hold_ms``
    one lock serialises every iteration's pull and commit: a worker waits for it (the lock-bound fleet).

    A second growing step, beside the commit: with ``export_per_row_ms`` each iteration's export takes that much
    per row of a catalog the whole fleet grows by ``rows_per_it`` an iteration (its ``catalog_rows``); with
    ``slowing_per_it_ms`` the pull slows by that much per iteration the fleet has made, with no count recorded
    (a stand-in whose table fills); with ``outside_per_entry_ms`` each iteration spends that much per entry of its
    count outside every recorded step (in its total only: work between timed requests).

    A count whose growth saturates: with ``first_pass`` an iteration adds ``entries_per_it`` only for its
    namespace's first ``first_pass`` iterations (a worker meeting models it has not run yet), then
    ``entries_after`` (the floor: 0 stops the count).

    A machine whose share of the cores wanders: with ``speed_sd`` every step an iteration starts in a block of
    ``speed_block_s`` seconds takes a factor drawn for that block (lognormal, mean 1), the same for every worker
    (the counts vary more than Poisson's, as the kept real runs' do: their dispersion 2-8 over 20 s). Drawn from
    a generator of its own, so the fleet with ``speed_sd`` 0 is the one simulated before.

    A partition's capacity: with ``units_per_row`` each iteration's export writes that many units per catalog row
    to one partition key that takes ``partition_limit`` units/s (the fidelity model's 1,000 write units): a
    token bucket holding a second's worth, so an export waits only while the fleet asks more than the partition
    takes (a throttled write backing off and retrying), and the row records its ``write_units``. No random draw is
    added: the fleets without it are the ones simulated before."""
    rng = np.random.default_rng(seed)
    blocks = int(duration_s // speed_block_s) + 2
    speed = (np.random.default_rng([seed, 7919]).lognormal(-speed_sd ** 2 / 2, speed_sd, blocks) if speed_sd
             else np.ones(blocks))
    t = rng.uniform(0, 0.2, workers)
    counts = np.full(workers, float(start_entries))
    fleet_count = float(start_entries)
    it = np.zeros(workers, dtype=int)
    free_at = 0.0
    tokens, refilled = partition_limit, 0.0  # the partition's bucket: a second's worth at most
    catalog, fleet_its = 0.0, 0
    rows: list[dict[str, Any]] = []
    while True:
        w = int(np.argmin(t))
        if t[w] >= duration_s:
            break
        nth = fleet_its if shared else int(it[w])
        add = entries_after if first_pass is not None and nth >= first_pass else entries_per_it
        if shared:
            fleet_count = min(fleet_count + add, cap) if cap else fleet_count + add
            c = fleet_count
        else:
            counts[w] = min(counts[w] + add, cap) if cap else counts[w] + add
            c = counts[w]
        k = speed[min(int(t[w] // speed_block_s), blocks - 1)]
        commit = per_entry_ms * c ** power * rng.lognormal(0, noise) * k
        pull = (base_ms + slowing_per_it_ms * fleet_its) * rng.lognormal(0, noise) * k
        catalog += rows_per_it
        export = export_per_row_ms * catalog * rng.lognormal(0, noise) * k if export_per_row_ms else 0.0
        fleet_its += 1
        start = t[w]
        wait = 0.0
        if lock_hold_ms is not None:
            granted = max(start, free_at)
            wait = (granted - start) * 1000
            hold = lock_hold_ms * rng.lognormal(0, noise) + commit
            free_at = granted + hold / 1000
            end = free_at
            pull = lock_hold_ms
        else:
            outside = outside_per_entry_ms * c * rng.lognormal(0, noise) * k if outside_per_entry_ms else 0.0
            if units_per_row:  # the export's units from the partition's bucket: it waits for what is not there
                asked = start + (pull + commit) / 1000
                tokens = min(partition_limit, tokens + partition_limit * max(asked - refilled, 0.0))
                tokens -= units_per_row * catalog
                refilled = max(asked, refilled)
                if tokens < 0:
                    wait = -tokens / partition_limit
                    export += wait * 1000
                    tokens, refilled = 0.0, refilled + wait
            end = start + (pull + commit + export + outside) / 1000
        total = (end - start) * 1000
        row = {c_: None for c_ in SCHEMA.names}
        row.update({c_: 0.0 for c_ in (*STEP_COLUMNS.values(), *UNIT_COLUMNS)})
        row.update({c_: 0 for c_ in COUNT_COLUMNS})
        row.update(ts_start=T0 + start, ts_end=T0 + end, user=f"w0-{w}", worker="local", scenario="forecast",
                   backend="dynamodb", model_id=f"w0-{w}-m", ok=True, error_kind="", error="", total_ms=total,
                   iteration=int(it[w]), pull_ms=pull, commit_ms=commit, lock_wait_ms=wait,
                   index_entries_written=int(round(c)), lock_attempts=1)
        if export_per_row_ms:
            row.update(export_ms=export, catalog_rows=int(round(catalog)))
        if units_per_row:
            row.update(write_units=units_per_row * catalog)
        rows.append(row)
        it[w] += 1
        t[w] = end + gap_ms / 1000 * rng.lognormal(0, noise)
    return rows


EXPORT_KEY = "FILE#.catalog-export.json"  # the simulated export's partition key (keys.csv)
DRAIN_S = 3.0  # keys.csv's interval, as the load's processes drain it


def keys_rows(rows: list[dict[str, Any]], duration_s: float) -> list[dict[str, Any]]:
    """keys.csv's rows for a simulated run: each iteration's ``write_units`` on ``EXPORT_KEY``, summed per
    ``DRAIN_S`` (the drain's stamp: its interval's end); none when no row wrote units."""
    edges = np.arange(DRAIN_S, duration_s + DRAIN_S, DRAIN_S)
    sums = np.zeros(len(edges))
    for r in rows:
        if r.get("write_units"):
            sums[min(int(np.searchsorted(edges, r["ts_end"] - T0, side="left")), len(edges) - 1)] += r["write_units"]
    return [{"ts": T0 + edges[j], "process": "local", "table": "forecast", "index": "", "key": EXPORT_KEY,
             "read_units": 0.0, "write_units": float(sums[j]), "throttles": 0} for j in np.flatnonzero(sums)]


def capacity_model(partition_write: float = 1000.0) -> dict[str, Any]:
    """run.json's fidelity fields for a simulated run on the model (4 partitions of ``partition_write``)."""
    cfg = {"mode": "on-demand", "read": 12_000.0, "write": 4_000.0, "partition_read": 3_000.0,
           "partition_write": partition_write, "scale": 1.0, "max_read": 0.0, "max_write": 0.0, "burst_s": 300.0}
    return {"fidelity": {"enabled": True, "dynamodb": cfg}, "endpoint_kind": "embedded",
            "scenario_fidelity": {"mode": "auto", "config": {"dynamodb": cfg}}}


def write_run(path: Path, rows: list[dict[str, Any]], *, workers: int, duration_s: float,
              namespaces: str = "per-worker") -> Path:
    """The rows as a run directory the report reads (run.json, one Parquet shard); rows that wrote units (a
    partition's capacity) also get keys.csv and the capacity model in run.json."""
    from harness.record.writer import to_table

    (path / "iterations").mkdir(parents=True, exist_ok=True)
    pq.write_table(to_table(rows), path / "iterations" / "part-synthetic-000000.parquet")
    meta = run_info(workers=workers, duration_s=duration_s, scenario="forecast")
    keys = keys_rows(rows, duration_s)
    if keys:
        import pandas as pd

        pd.DataFrame(keys).to_csv(path / "keys.csv", index=False)
        model = capacity_model()
        meta.update(fidelity=model["fidelity"], endpoint_kind=model["endpoint_kind"])
        meta["scenario"]["fidelity"] = model["scenario_fidelity"]
    meta["scenario"]["datastore"] = {"namespaces": namespaces}
    meta["run_id"] = path.name
    runinfo.write(path, meta)
    return path


def findings_at(path: Path, at: str) -> dict[str, Any]:
    from harness.report.forecast.horizon import parse
    from harness.report.load import open_run
    from harness.report.run.build import findings_of

    return findings_of(open_run(path), horizon=parse(at))


def end_level(path: Path) -> dict[str, Any]:
    """A run's end level as its findings measure it (``rate``, ``lo``, ``hi``, ``t0``, ``t1``): a mean over a
    window (the run's last sixth), so a forecast is read against it at the window's middle, where a rate that
    falls about linearly across the window has its mean (read at the window's end, a falling rate's forecast
    sits below the level measured over it)."""
    return findings_at(path, "10x")["fleet"]["levels"][-1]


def forecast_against(short: Path, long: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The short run's forecast at the middle of the long run's end level, and that level."""
    lv = end_level(long)
    return findings_at(short, f"{(lv['t0'] + lv['t1']) / 2:.1f}s")["forecast"], lv


def prefix_against(long: Path, seconds: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The long run's own first ``seconds`` (``harness/report/forecast/prefix.py``: the same fleet under the same
    machine conditions) forecast at the middle of that run's end level, and that level."""
    from harness.report.forecast.horizon import parse
    from harness.report.forecast.prefix import prefix
    from harness.report.load import open_run
    from harness.report.run.build import findings_of

    lv = end_level(long)
    cut = prefix(open_run(long), seconds)
    return findings_of(cut, horizon=parse(f"{(lv['t0'] + lv['t1']) / 2:.1f}s"))["forecast"], lv
