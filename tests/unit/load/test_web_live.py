"""The harness tab's numbers over rows as they arrive: each checked against its definition on the same rows
(both the tab and the report compute them with ``harness.metrics.numbers``, tested in tests/unit/metrics)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from harness.load.web.live import COUNTS, REPORT_STEPS, Live, summarize
from harness.record.schema import STEP_COLUMNS

T0 = 1_750_000_000.0


def _rows(n: int = 400, span: float = 60.0, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        start = T0 + rng.uniform(0, span - 2)
        total = rng.uniform(50, 1500)
        row = {"ts_start": start, "ts_end": start + total / 1000, "user": f"w0-{i % 7}", "ok": rng.random() > 0.2,
               "error_kind": "", "total_ms": total}
        for c in STEP_COLUMNS.values():
            row[c] = rng.uniform(0, 300) if c != "prune_ms" or i % 3 == 0 else 0.0
        row.update(pull_items_read=rng.randint(0, 50), index_entries_written=rng.randint(1, 500),
                   catalog_rows=rng.randint(0, 900), files_pushed=rng.randint(0, 6),
                   read_units=rng.uniform(0, 20), write_units=rng.uniform(0, 80), requests=10)
        rows.append(row)
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in ("ts_start", "ts_end"):
        df[c] = pd.to_datetime(df[c], unit="s", utc=True)
    return df


def test_whole_span_numbers_follow_the_reports_definitions():
    rows = _rows()
    df = _frame(rows)
    span = float((df["ts_end"].max() - df["ts_start"].min()).total_seconds())
    s = summarize(rows, span)
    ok = df[df["ok"]]
    means = ok[list(REPORT_STEPS)].mean()
    for c in REPORT_STEPS:  # step shares and work counts: successful iterations
        assert s.step_shares[c] == pytest.approx(means[c] / means.sum(), rel=1e-9)
    for c in COUNTS:
        assert s.counts[c] == pytest.approx(ok[c].mean(), rel=1e-9)
    assert s.failure_ratio == pytest.approx((~df["ok"]).mean(), rel=1e-12)
    assert s.ok_per_s == pytest.approx(len(ok) / span, rel=1e-12)
    assert [s.lock_p50, s.lock_p95] == pytest.approx(list(ok["lock_wait_ms"].quantile([0.5, 0.95])), rel=1e-12)
    assert s.units_per_s["write_units"] == pytest.approx(df["write_units"].sum() / span, rel=1e-12)


def test_a_window_matches_the_reports_rate_for_that_window():
    rows = _rows(n=600)
    df = _frame(rows)
    window = 10.0
    t0 = df["ts_start"].min().timestamp()
    ends = df["ts_end"].map(lambda x: x.timestamp()) - t0
    live = Live(window_s=window, lag_s=0.0, keep_s=1e9)
    live.add(rows)
    for start in np.arange(window, 50.0, window):  # the report bins [start, start + window) by end time
        expected = int(((ends >= start) & (ends < start + window) & df["ok"]).sum()) / window
        got = live.window(t0 + start + window - 1e-7, started_at=t0)  # (now - window, now]
        assert got.ok_per_s == pytest.approx(expected, rel=1e-6), start


def test_the_live_window_waits_for_late_rows_and_is_cut_at_the_tests_start():
    live = Live(window_s=10.0, lag_s=3.5)
    now = T0 + 100.0
    row = {"ok": True, "lock_wait_ms": 5.0, **{c: 1.0 for c in REPORT_STEPS}}
    live.add([{**row, "ts_start": now - 2, "ts_end": now - 1},  # too recent: its batch may not be complete
              {**row, "ts_start": now - 6, "ts_end": now - 5},
              {**row, "ts_start": now - 30, "ts_end": now - 20}])  # older than the window
    w = live.window(now, started_at=T0)
    assert (w.iterations, w.seconds) == (1, 10.0)
    young = live.window(now, started_at=now - 8)  # the test began 8 s ago: 4.5 s of complete data
    assert young.seconds == pytest.approx(4.5) and young.ok_per_s == pytest.approx(1 / 4.5)
    assert live.test(now, started_at=now - 40).iterations == 3


def test_no_rows_is_no_number_rather_than_zero():
    s = summarize([], 10.0)
    assert s.failure_ratio is None and s.lock_p50 is None and s.counts["catalog_rows"] is None
    assert s.ok_per_s == 0.0 and not np.isnan(sum(s.step_shares.values()))


def test_the_rate_chart_has_no_spike_from_a_bin_still_filling():
    # 6 it/s, evenly, for 60.02 s: the newest row ends 0.02 s into a 2 s bin. Divided by that sliver, its row drew
    # a point of 50 it/s (issue 54: 240 it/s against 6); whole bins only, every point is about 6.
    live = Live(window_s=10.0)
    start = 1_750_000_000.0  # on a bin's edge
    row = {"ok": True, "lock_wait_ms": 1.0, **{c: 1.0 for c in REPORT_STEPS}}
    ends = [start + 0.02 + i / 6 for i in range(361)]
    rows = [{**row, "ts_start": e - 0.1, "ts_end": e, "user": f"u{i % 3}"} for i, e in enumerate(ends)]
    live.add(rows)
    for now in (ends[-1], ends[-1] + 0.01, ends[-1] + 1.9):  # read while the last bin fills
        c = live.test(now, start).charts
        assert max(c["ok_rate"]) == pytest.approx(6.0, abs=0.51), c["ok_rate"][-3:]
        assert len(c["t"]) == 30  # the 30 whole bins before the one still filling
    lagged = Live(window_s=10.0, lag_s=3.5)  # a master: the bins a worker has not reported yet wait too
    lagged.add(rows)
    c = lagged.test(ends[-1], start).charts
    assert len(c["t"]) == 28 and max(c["ok_rate"]) == pytest.approx(6.0, abs=0.51)
    late = Live(window_s=10.0)
    late.add([{**row, "ts_start": e - 0.1, "ts_end": e, "user": "u"} for e in ends if e >= start + 1.9])
    assert late.test(ends[-1], start + 1.9).charts["t"][0] == pytest.approx(0.1)  # a first bin entered late: left out
