"""Report findings on synthetic runs with known shapes: each test fails when a finding is wrong."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from PIL import Image

from harness.errors import HarnessError
from reports import compute
from reports.build import build_report
from reports.load import open_run
from reports.synthetic import make_run

T = 3600.0


def _falling(t):  # the legacy GSI: 0.10 -> 0.01 per worker, falling to the very end
    return 0.10 * (1 - 0.9 * t / T)


def _floor(t):  # the shared lock: down to a 0.007 floor within 30 % of the run, then flat
    return np.where(t < 0.3 * T, 0.10 - (0.10 - 0.007) * t / (0.3 * T), 0.007)


def _findings(tmp_path, name, **kw):
    return compute.findings(open_run(make_run(tmp_path / name, **kw)).rows)


def test_falling_curve_is_still_falling(tmp_path):
    f = _findings(tmp_path, "falling", workers=20, rate=_falling)
    assert f["fleet"]["shape"] == "still falling"
    assert 1.8 < f["fleet"]["start_rate"] < 2.2  # 20 workers x 0.10
    assert f["fleet"]["degradation_ratio"] > 5


def test_flat_floor_is_flat_with_the_right_floor_and_time(tmp_path):
    f = _findings(tmp_path, "floor", workers=40, rate=_floor)
    assert f["fleet"]["shape"] == "flat"
    assert f["fleet"]["floor_rate"] == pytest.approx(40 * 0.007, rel=0.3)
    assert f["per_worker"]["floor_rate"] == pytest.approx(0.007, rel=0.3)
    assert 0.2 * T < f["fleet"]["floor_reached_at_s"] < 0.45 * T


def test_no_degradation_is_flat(tmp_path):
    f = _findings(tmp_path, "steady", workers=20, rate=lambda t: np.full_like(t, 0.2))
    assert f["fleet"]["shape"] == "flat" and f["fleet"]["degradation_ratio"] < 1.3


def test_dominant_step_migrates_and_the_right_count_explains_it(tmp_path):
    f = _findings(tmp_path, "migrate", workers=20, rate=lambda t: np.full_like(t, 0.1),
                  steps={"lock_wait_ms": lambda t: 800 - 700 * t / T, "pull_ms": lambda t: np.full_like(t, 40.0),
                         "commit_ms": lambda t: 50 + 3000 * t / T},
                  counts={"index_entries_written": lambda t: 10 + 3 * t, "catalog_rows": lambda t: np.full_like(t, 6),
                          "pull_items_read": lambda t: np.full_like(t, 7)})
    d = f["dominant_step"]
    assert d["first"]["step"] == "lock wait" and d["last"]["step"] == "commit"
    assert d["first"]["share"] > 0.7 and d["last"]["share"] > 0.8
    assert re.fullmatch(r"lock wait \d+ % -> commit \d+ %", d["migration"])
    assert f["explained_by"] == "index_entries_written"
    assert f["work_counts"]["index_entries_written"]["corr_with_iteration_time"] > 0.9
    assert f["work_counts"]["pull_items_read"]["growth"] == pytest.approx(1.0)
    assert "migrated" in f["sentences"][1]


def test_pull_bottleneck_is_explained_by_items_read(tmp_path):
    f = _findings(tmp_path, "pull", workers=10, rate=_falling,
                  steps={"pull_ms": lambda t: 20 + 900 * t / T, "commit_ms": lambda t: np.full_like(t, 60.0)},
                  counts={"pull_items_read": lambda t: 100 + 5 * t,
                          "index_entries_written": lambda t: np.full_like(t, 4)})
    assert f["dominant_step"]["last"]["step"] == "pull" and f["explained_by"] == "pull_items_read"


def test_every_error_kind_is_counted_and_charted(tmp_path):
    kinds = ("lock_timeout", "throttled", "fenced", "other")
    run = open_run(make_run(tmp_path / "errors", workers=20, rate=lambda t: np.full_like(t, 0.2),
                            failure=lambda t: np.full_like(t, 0.4), error_kinds=kinds))
    f = compute.findings(run.rows)
    assert f["failure_ratio"] == pytest.approx(0.4, abs=0.03)
    assert all(f["errors"][k] > 0 for k in kinds) and f["errors"]["conflict"] == 0
    assert sum(f["errors"].values()) == int((~run.rows["ok"]).sum())
    window = f["window_s"]
    table = compute.failure_rates(compute.with_windows(run.rows, window), window)
    assert list(table.columns) == compute.ERROR_KINDS
    assert all(table[k].mean() > 0 for k in kinds)


def test_rate_series_does_not_spike_in_a_trailing_sliver(tmp_path):
    run = open_run(make_run(tmp_path / "sliver", workers=10, duration_s=101.0, rate=lambda t: np.full_like(t, 1.0)))
    rate = compute.fleet_rate(compute.with_windows(run.rows, 10.0), 10.0)
    assert rate.index[-1] == 90.0 and rate.max() < 13  # [100, 101) is dropped, not divided by 1 s


def test_fleet_doubling_that_does_not_raise_the_rate(tmp_path):
    small = open_run(make_run(tmp_path / "w10", workers=10, rate=lambda t: np.full_like(t, 0.014),
                              scenario="shared-lock"))
    big = open_run(make_run(tmp_path / "w20", workers=20, rate=lambda t: np.full_like(t, 0.007),
                            scenario="shared-lock"))
    c = compute.compare([(r.label, r.info, r.rows) for r in (small, big)])
    (s,) = c["fleet_scaling"]
    assert s["workers"] == [10, 20] and s["fleet_ratio"] == 2
    assert s["rate_ratio"] == pytest.approx(1.0, abs=0.15) and s["raised_rate"] is False
    scaled = open_run(make_run(tmp_path / "w20b", workers=20, rate=lambda t: np.full_like(t, 0.014),
                               scenario="shared-lock"))
    (s2,) = compute.compare([(r.label, r.info, r.rows) for r in (small, scaled)])["fleet_scaling"]
    assert s2["raised_rate"] is True


def test_dynamodb_against_s3(tmp_path):
    ddb = open_run(make_run(tmp_path / "d", workers=10, rate=lambda t: np.full_like(t, 0.15), scenario="pruning"))
    s3 = open_run(make_run(tmp_path / "s", workers=10, rate=lambda t: np.full_like(t, 0.05), scenario="pruning",
                           backend="s3"))
    (b,) = compute.compare([(r.label, r.info, r.rows) for r in (s3, ddb)])["backends"]
    assert b["dynamodb_over_s3"] == pytest.approx(3.0, rel=0.15)


def test_report_files(tmp_path):
    run = make_run(tmp_path / "run", workers=10, rate=_falling, failure=lambda t: np.full_like(t, 0.1))
    out = build_report([run])
    summary = json.loads((out / "summary.json").read_text())
    html = (out / "index.html").read_text()
    assert len(summary["figures"]) == 6
    for name in summary["figures"]:
        png = out / "figures" / name
        assert f'src="figures/{name}"' in html
        with Image.open(png) as im:
            assert im.format == "PNG" and im.width >= 600 and im.height >= 300
            assert len(im.convert("L").getcolors(maxcolors=65536) or []) > 20  # not a blank canvas
    f = summary["runs"][0]["findings"]
    assert f["fleet"]["shape"] == "still falling" and f["sentences"][0] in html


def test_comparison_report(tmp_path):
    a = make_run(tmp_path / "a", workers=10, rate=_floor, scenario="shared-lock")
    b = make_run(tmp_path / "b", workers=20, rate=lambda t: _floor(t) / 2, scenario="shared-lock")
    out = build_report([a, b], tmp_path / "cmp")
    summary = json.loads((out / "summary.json").read_text())
    assert {"compare_rate.png", "compare_steps.png"} <= set(summary["figures"])
    assert len(summary["figures"]) == 14
    assert summary["comparison"]["fleet_scaling"][0]["raised_rate"] is False
    assert "did not raise the rate" in (out / "index.html").read_text()


# ---- bad input ------------------------------------------------------------------------


def test_not_a_run_directory(tmp_path):
    with pytest.raises(HarnessError, match=r"is not a run directory \(no run.json\)"):
        open_run(tmp_path)
    with pytest.raises(HarnessError, match="is not a directory"):
        open_run(tmp_path / "missing")


def test_run_with_no_rows(tmp_path):
    run = make_run(tmp_path / "empty", workers=1, duration_s=10, rate=lambda t: np.zeros_like(t))
    for p in (run / "iterations").glob("*.parquet"):
        p.unlink()
    with pytest.raises(HarnessError, match="has no iteration rows yet"):
        open_run(run)


def test_run_still_being_written_gets_a_partial_report(tmp_path, capsys):
    run = make_run(tmp_path / "live", workers=5, duration_s=600, rate=_falling, status="running")
    (run / "iterations" / "part-x-000009.parquet.tmp").write_bytes(b"half a shard")  # a flush in progress
    out = build_report([run])
    assert "still being written" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"][0]["partial"] is True
    assert "still being written" in (out / "index.html").read_text()


def test_probe_tells_a_slower_backend_from_a_heavier_workload(tmp_path):
    import pandas as pd

    run = make_run(tmp_path / "probe", workers=5, duration_s=600, rate=_falling)
    ts = 1_750_000_000 + np.arange(0, 600, 5.0)
    pd.DataFrame({"ts": ts, "op": "GetItem", "ms": 2 + ts * 0}).to_csv(run / "probes.csv", index=False)
    f = compute.findings(open_run(run).rows, probes=open_run(run).probes)
    assert f["probe"]["backend_slowed"] is False and "did not slow down" in f["sentences"][-1]
    pd.DataFrame({"ts": ts, "op": "GetItem", "ms": 2 + (ts - ts[0]) / 10}).to_csv(run / "probes.csv", index=False)
    r = open_run(run)
    f = compute.findings(r.rows, probes=r.probes)
    assert f["probe"]["backend_slowed"] is True and f["probe"]["growth"] > 5
    assert "The backend itself got slower" in f["sentences"][-1]
