"""Open run directories for reporting: validate, read only the needed columns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.errors import HarnessError
from harness.record.reader import read_rows, shard_paths
from harness.record.schema import STEP_COLUMNS as _SCHEMA_STEPS

STEP_COLUMNS = [c for c in _SCHEMA_STEPS.values() if c != "release_ms"]  # the steps a report stacks
COUNT_COLUMNS = ["pull_items_read", "index_entries_written", "catalog_rows", "files_pushed", "read_units",
                 "write_units"]
REPORT_COLUMNS = ["ts_start", "ts_end", "user", "ok", "error_kind", "total_ms", "requests", *STEP_COLUMNS,
                  *COUNT_COLUMNS]


@dataclass
class Run:
    path: Path
    info: dict
    rows: pd.DataFrame
    partial: bool
    probes: pd.DataFrame | None = None  # constant-cost request latencies (stand-in detection)

    @property
    def label(self) -> str:
        fleet = self.info.get("fleet", {}).get("workers", "?")
        return f"{self.info.get('scenario_name', self.path.name)} / {self.info.get('backend', '?')} / {fleet} workers"


def open_run(path: str | Path) -> Run:
    """One-line errors for what is not a run or has nothing to report yet."""
    p = Path(path)
    if not p.is_dir():
        raise HarnessError(f"{p} is not a directory: pass a run directory that `harness run` printed")
    info_path = p / "run.json"
    if not info_path.exists():
        raise HarnessError(f"{p} is not a run directory (no run.json): pass a directory that `harness run` made")
    try:
        info = json.loads(info_path.read_text())
    except json.JSONDecodeError:
        raise HarnessError(f"{info_path} is not valid JSON: the run directory is damaged") from None
    if not shard_paths(p):
        raise HarnessError(f"{p} has no iteration rows yet: wait for the run to record some, or check locust.log")
    rows = read_rows(p, REPORT_COLUMNS)
    if rows.empty:
        raise HarnessError(f"{p} has no iteration rows: the run recorded nothing, see locust.log")
    partial = info.get("status") != "finished"
    return Run(p, info, rows, partial, _probes(p))


def _probes(p: Path) -> pd.DataFrame | None:
    path = p / "probes.csv"
    if not path.exists():
        return None
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    if df.empty or not {"ts", "ms"} <= set(df.columns):
        return None
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    return df
