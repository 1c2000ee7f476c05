"""Read a run directory's iteration rows (only the columns asked for)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from harness.record.memory import give_back
from harness.record.schema import SCHEMA


def shard_paths(run_dir: str | Path) -> list[Path]:
    d = Path(run_dir) / "iterations"
    return sorted(d.glob("*.parquet")) if d.is_dir() else []


def read_rows(run_dir: str | Path, columns: list[str] | None = None,
              float32: tuple[str, ...] = ()) -> pd.DataFrame:
    """All finished shards as one DataFrame; an empty frame with the schema's columns if none.

    A nine-hour run is a million rows: the Arrow table is handed to pandas column by column and freed as it
    goes (``self_destruct``, one block per column; numbers without nulls stay in Arrow's buffers), and the
    pool's freed memory is handed back, so the two copies are never whole at once; the columns
    in ``float32`` are cast in Arrow first (no float64 copy in pandas to cast from).
    """
    paths = shard_paths(run_dir)
    cols = columns or list(SCHEMA.names)
    if not paths:
        table = SCHEMA.empty_table().select(cols)
    else:
        table = ds.dataset([str(p) for p in paths], format="parquet", schema=SCHEMA).to_table(columns=cols)
    for c in float32:
        i = table.schema.get_field_index(c)
        table = table.set_column(i, c, table.column(i).cast(pa.float32()))
    out = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    give_back()  # the freed Arrow table: its pool and the C heap keep what was freed otherwise
    return out


def count_rows(paths: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
