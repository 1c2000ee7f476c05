"""Read a run directory's iteration rows (only the columns asked for)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from harness.record.memory import give_back
from harness.record.schema import SCHEMA

_OPEN = re.compile(r"^Could not open Parquet input source '[^']*': ")  # the path is named once, before
SKIPPED = "skipped_shards"  # DataFrame.attrs key: the damaged shards read_rows left out


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
    skipped: list[str] = []
    if not paths:
        table = SCHEMA.empty_table().select(cols)
    else:
        try:
            table = _read(paths, cols)
        except (pa.ArrowException, OSError):  # a damaged shard: read the intact ones, one by one
            table, skipped = read_intact(paths, cols)
            skipped = [f"iterations/{x}" for x in skipped]
    for c in float32:
        i = table.schema.get_field_index(c)
        table = table.set_column(i, c, table.column(i).cast(pa.float32()))
    out = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    give_back()  # the freed Arrow table: its pool and the C heap keep what was freed otherwise
    if skipped:
        out.attrs[SKIPPED] = skipped
    return out


def skipped_shards(rows: pd.DataFrame) -> list[str]:
    """The damaged shards ``read_rows`` (or ``read_spans``) left out, each as ``iterations/NAME (why)``; [] when
    none."""
    return list(rows.attrs.get(SKIPPED, []))


def _read(paths: list[Path], cols: list[str]) -> pa.Table:
    return ds.dataset([str(p) for p in paths], format="parquet", schema=SCHEMA).to_table(columns=cols)


def read_intact(paths: list[Path], cols: list[str], schema: pa.Schema = SCHEMA) -> tuple[pa.Table, list[str]]:
    """The rows of the shards that read whole, and the others as ``name (why)``.

    A shard is written whole or not at all, but a disk fault, a copy cut short or a hand can still truncate one
    later; its rows are lost, the other shards' are not, so a report says what it skipped instead of failing.
    """
    import pyarrow.parquet as pq

    tables, bad = [], []
    for p in paths:
        try:
            tables.append(pq.read_table(p, schema=schema, columns=cols))
        except (pa.ArrowException, OSError) as e:
            why = _OPEN.sub("", str(e).splitlines()[0])[:100] if str(e) else type(e).__name__
            bad.append(f"{p.name} ({why})")
    return (pa.concat_tables(tables) if tables else schema.empty_table().select(cols)), bad


def first_intact(run_dir: str | Path) -> Path | None:
    """The first shard whose footer reads (so ``harness report`` has rows to report), or None."""
    import pyarrow.parquet as pq

    for p in shard_paths(run_dir):
        try:
            if pq.ParquetFile(p).metadata.num_rows:
                return p
        except (pa.ArrowException, OSError):
            continue
    return None


def count_rows(paths: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
