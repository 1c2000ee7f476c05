"""The ``spans`` table: every span a command-driver run received, mapped to a row's column or not.

``RUN_DIR/spans/part-*.parquet``, written like the iteration rows (buffered, flushed every few seconds
under a temporary name): one row per span, with the iteration and the command (``step``: setup, run,
delete, prune) it belongs to, its parent, start, duration, status and attributes (JSON), and the row column
it fed (null: none); ``late`` spans came after their row was built, unjoined ones (no iteration) belong
to no trace the harness handed out. A datastore whose span names the mapping does not know still has its
steps here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from harness.record.writer import _BufferedFiles

SPANS_DIR = "spans"
SCHEMA = pa.schema([
    ("start", pa.timestamp("us", tz="UTC")), ("duration_ms", pa.float64()), ("worker", pa.string()),
    ("user", pa.string()), ("iteration", pa.int64()), ("step", pa.string()), ("name", pa.string()),
    ("trace_id", pa.string()), ("span_id", pa.string()), ("parent", pa.string()), ("status", pa.string()),
    ("status_message", pa.string()), ("attributes", pa.string()), ("events", pa.string()), ("column", pa.string()),
    ("late", pa.bool_()),
])


def to_table(records: list[dict]) -> pa.Table:
    cols = {name: [r.get(name) for r in records] for name in SCHEMA.names}
    cols["start"] = pa.array([None if v is None else int(v * 1_000_000) for v in cols["start"]],
                             pa.int64()).cast(SCHEMA.field("start").type)
    return pa.table(cols, schema=SCHEMA)


class SpanWriter(_BufferedFiles):
    """Span records -> ``RUN_DIR/spans/part-*.parquet``."""

    suffix = ".parquet"

    def __init__(self, run_dir: str | Path, tag: str = "local", flush_every_s: float = 5.0) -> None:
        super().__init__(Path(run_dir) / SPANS_DIR, tag, flush_every_s)

    def _write(self, records: list[dict], path: Path) -> None:
        pq.write_table(to_table(records), path, compression="zstd")


def read_spans(run_dir: str | Path, columns: list[str] | None = None) -> pd.DataFrame | None:
    """The run's spans (None when it has no spans table: a model-driver run)."""
    d = Path(run_dir) / SPANS_DIR
    paths = sorted(d.glob("*.parquet")) if d.is_dir() else []
    if not paths:
        return None
    cols = columns or list(SCHEMA.names)
    try:
        return ds.dataset([str(p) for p in paths], format="parquet", schema=SCHEMA).to_table(columns=cols).to_pandas()
    except (pa.ArrowException, OSError):  # a damaged shard: the intact ones, the others named (as read_rows does)
        from harness.record.reader import SKIPPED, read_intact

        table, skipped = read_intact(paths, cols, SCHEMA)
        out = table.to_pandas()
        out.attrs[SKIPPED] = [f"{SPANS_DIR}/{x}" for x in skipped]
        return out
