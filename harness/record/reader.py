"""Read a run directory's iteration rows (only the columns asked for)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from harness.record.schema import SCHEMA


def shard_paths(run_dir: str | Path) -> list[Path]:
    d = Path(run_dir) / "iterations"
    return sorted(d.glob("*.parquet")) if d.is_dir() else []


def read_rows(run_dir: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """All finished shards as one DataFrame; an empty frame with the schema's columns if none."""
    paths = shard_paths(run_dir)
    cols = columns or list(SCHEMA.names)
    if not paths:
        return SCHEMA.empty_table().select(cols).to_pandas()
    table = ds.dataset([str(p) for p in paths], format="parquet", schema=SCHEMA).to_table(columns=cols)
    return table.to_pandas()


def count_rows(paths: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
