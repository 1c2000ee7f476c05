"""The report's readers keep every value while they save memory (issue 39: a nine-hour report under 1 GB).

``read_rows`` hands Arrow's columns to pandas as it frees them and casts its float32 columns in Arrow;
``lock_events`` builds its frame column by column. Both must give exactly what the plain readings give:
the rows as ``to_pandas`` then ``astype``, the lock's intervals as the line-by-line reading of the same
history files. ``bench/report_same.py`` diffs a whole report's summary.json between two checkouts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from harness.metrics import lockuse
from harness.record.reader import read_rows, shard_paths
from harness.record.schema import SCHEMA
from harness.report import load
from tests.support.synthetic import make_run


def _run(tmp_path):
    return make_run(tmp_path / "run", workers=6, duration_s=600.0, rate=lambda t: 0.5 + 0 * t, shard_rows=400,
                    lock_history="shared", failure=lambda t: 0.05 + 0 * t, error_kinds=("lock_timeout", "other"))


def test_read_rows_is_the_plain_reading_with_its_casts(tmp_path):
    run = _run(tmp_path)
    assert len(shard_paths(run)) > 1  # several shards: the column-by-column hand-over crosses them
    f32 = (*load.REQUEST_COLUMNS, *load.QUERY_COLUMNS, *load.SIZE_COLUMNS)
    got = read_rows(run, load.REPORT_COLUMNS, float32=f32)
    plain = ds.dataset([str(p) for p in shard_paths(run)], format="parquet", schema=SCHEMA).to_table(
        columns=load.REPORT_COLUMNS).to_pandas()
    for c in f32:
        plain[c] = plain[c].astype("float32")
    assert len(got) > 1000 and list(got.columns) == load.REPORT_COLUMNS
    pd.testing.assert_frame_equal(got, plain)


def test_lock_events_give_the_line_by_line_intervals(tmp_path):
    run = _run(tmp_path)
    frame = load.lock_events(run)
    lines = pd.concat([load._events_line_by_line(f) for f in sorted((run / "history").glob("*.jsonl"))],
                      ignore_index=True)
    assert len(frame) == len(lines) > 1000
    fast, slow = lockuse.intervals(frame), lockuse.intervals(lines)
    assert list(fast) == list(slow)
    for key in fast:
        a, b = fast[key], slow[key]
        np.testing.assert_array_equal(a.held, b.held)
        np.testing.assert_array_equal(a.waits, b.waits)
        assert a.holders.tolist() == b.holders.tolist()
        grants = lines[(lines["type"] == "grant") & (lines["key"] == key)]
        assert sorted(set(a.holders.tolist())) == sorted(set(grants["holder"])) and len(grants["holder"].unique()) == 6
        assert all(type(h) is str for h in a.holders)


def test_nonces_coded_per_batch_are_one_code_per_string_across_batches():
    import pyarrow as pa

    # batch 1 holds a grant of "n1" and "n2"; batch 2 the release of "n2" (a flush between them), a new "n3"
    # and an event without a nonce
    d1, d2 = pa.array(["n1", "n2"]), pa.array(["n3", "n2"])
    codes = load._one_code([np.array([0, 1, 1], np.int32), np.array([1, 0, -1], np.int32)], [d1, d2])
    assert codes.dtype == np.int32
    assert codes[1] == codes[2] == codes[3]  # "n2" in both batches: one code
    assert len({int(codes[0]), int(codes[1]), int(codes[4])}) == 3 and codes[5] == -1


def test_timelines_from_intervals_match_those_from_events_and_let_each_key_go(tmp_path):
    run = _run(tmp_path)
    frame = load.lock_events(run)
    ivs = lockuse.intervals(frame, end_s=1e12)
    assert ivs
    keys = list(ivs)
    from_ivs = lockuse.timelines(ivs)
    assert ivs == {}  # popped as each timeline was built
    from_events = lockuse.timelines(frame, end_s=1e12)
    assert list(from_ivs) == keys == list(from_events)
    for k in keys:
        np.testing.assert_array_equal(from_ivs[k].t, from_events[k].t)
        np.testing.assert_array_equal(from_ivs[k].cum_busy, from_events[k].cum_busy)


def test_give_back_returns_freed_heap_memory_to_the_system():
    from harness.record import memory

    assert memory._trim() is not None  # glibc here (Debian): malloc_trim is called, not skipped

    def rss_mib() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    # 4,000 arrays of 32 KB (under glibc's mmap threshold: from the heap), freed but one in 64 kept: the
    # heap cannot shrink from its top, so its free pages stay resident until a trim gives them back
    blocks = [np.ones(4_000) for _ in range(4_000)]
    kept = blocks[::64] + [blocks[-1]]
    del blocks
    before = rss_mib()
    memory.give_back()
    after = rss_mib()
    assert len(kept) == 64 and before - after > 50, (before, after)
