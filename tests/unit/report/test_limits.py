"""The next ceilings (findings.limits): a growing item and a hot key, on generated runs whose answers are known."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from harness.report.limits.limits import ITEM_LIMIT_BYTES, item_forecast, key_forecast, line
from harness.report.load import open_run
from harness.report.run.build import build_report, findings_of
from harness.report.run.findings import findings
from tests.support.synthetic import make_rows, make_run, run_info

WORKERS, RATE, DURATION = 4, 1.0, 600.0  # a fleet of 4 at 1 it/s each: 4 iterations a second
PER_IT = 21.0  # bytes the registry grows by per iteration of the fleet


def _registry(t):  # 1,000 B at the start, 21 B per fleet iteration, some wobble (pushes see it a little late)
    return 1000.0 + PER_IT * WORKERS * RATE * t + 40.0 * np.sin(t * 1.7)


def _rows(size, seed=0):
    return make_rows(workers=WORKERS, duration_s=DURATION, rate=lambda t: np.full_like(t, RATE), seed=seed,
                     steps={"push_ms": lambda t: np.full_like(t, 100.0)}, requests={"registry_bytes": size})


def test_a_growing_registry_is_forecast_to_the_item_limit_with_an_interval():
    f = findings(_rows(_registry), run_info(workers=WORKERS, duration_s=DURATION))
    item = next(x for x in f["limits"] if x["kind"] == "item size")
    assert item["name"] == "PARTITIONS#registry/LIST"
    assert item["growth_per_iteration"] == pytest.approx(PER_IT, rel=0.1)
    last = _registry(np.array([DURATION]))[0]
    truth_s = (ITEM_LIMIT_BYTES - last) / (PER_IT * WORKERS * RATE)  # ~4,270 s
    assert item["seconds_to_limit"] == pytest.approx(truth_s, rel=0.1)
    lo, hi = item["seconds_to_limit_interval"]
    assert lo <= truth_s * 1.02 and hi >= truth_s * 0.98 and lo < hi
    assert item["iterations_to_limit"] == pytest.approx(truth_s * WORKERS * RATE, rel=0.1)
    assert item["growing"] and item["within_horizon"] and not item["within_run"]
    assert "reaches DynamoDB's 400 KB item limit after ~17,000 iterations (~71 min" in item["sentence"]
    assert item["sentence"] in f["sentences"]  # said on the page's lead too


def test_a_registry_that_does_not_grow_is_not_on_course():
    f = findings(_rows(lambda t: 2000.0 + 30.0 * np.sin(t)), run_info(workers=WORKERS, duration_s=DURATION))
    item = next(x for x in f["limits"] if x["kind"] == "item size")
    assert not item["growing"] and not item["within_horizon"]
    assert "not clearly above zero" in item["sentence"] and item["sentence"] not in f["sentences"]


def test_a_run_without_the_size_column_has_no_item_forecast():
    rows = make_rows(workers=2, duration_s=120.0, rate=lambda t: np.full_like(t, 1.0))
    assert [x for x in findings(rows, run_info(workers=2, duration_s=120.0))["limits"]
            if x["kind"] == "item size"] == []


def test_the_line_and_its_interval():
    t = np.arange(100.0)
    a, b, (lo, hi) = line(t, 5 + 2 * t)
    assert a == pytest.approx(5) and b == pytest.approx(2) and lo == pytest.approx(2) == pytest.approx(hi)
    assert line(t[:3], t[:3]) is None and line(np.zeros(10), np.arange(10.0)) is None
    f = item_forecast("x", t, np.full(100, ITEM_LIMIT_BYTES + 1.0) + t, rate=1.0, run_s=100.0)
    assert f["seconds_to_limit"] == 0 and f["within_run"]  # already past it


def _partition_row(key, used, limit, throttles=0, iv=None):
    return {"kind": "partition", "name": key, "utilization": used / limit, "interval": iv,
            "evidence": {"units": "write", "table": "t", "index": None, "used_per_s": used, "limit_per_s": limit,
                         "throttles": throttles}}


def test_a_key_below_the_limit_says_at_what_fleet_it_throttles():
    k = key_forecast(_partition_row("SYNCSTATE#global", 640.0, 1000.0, iv=[0.6, 0.68]), scale=1.0)
    assert k["share_of_limit"] == pytest.approx(0.64) and k["fleet_multiple_to_limit"] == pytest.approx(1000 / 640)
    assert not k["within_run"]
    assert k["sentence"] == ("`SYNCSTATE#global` takes 640.0 WCU/s, 64.0 % of one partition key's 1,000 [60-68 %]: "
                             "at 1.6x this fleet it throttles at DynamoDB's limit.")


def test_a_key_at_a_scaled_down_limit_is_forecast_against_dynamodbs_own():
    k = key_forecast(_partition_row("SYNCSTATE#global", 9.5, 10.0, throttles=120, iv=[0.9, 1.0]), scale=0.01)
    assert k["within_run"] and k["throttles"] == 120
    assert k["limit_per_s"] == 1000.0 and k["fleet_multiple_to_limit"] == pytest.approx(1000 / 9.5)
    assert "scaled by 0.01" in k["sentence"] and "took 95 % [90-100] of that" in k["sentence"]
    assert "at no more than 105.3x this fleet it throttles at DynamoDB's limit (its throttled demand was higher)" \
        in k["sentence"]


def test_the_hot_global_item_is_the_bound_and_its_forecast_is_on_the_page(tmp_path):
    run = make_run(tmp_path / "hot", workers=8, duration_s=120.0, rate=lambda t: np.full_like(t, 0.6),
                   steps={"push_ms": lambda t: np.full_like(t, 100.0)})
    info = open_run(run).info
    info["scenario"]["fidelity"] = {"mode": "on", "config": {"enabled": True, "dynamodb": {
        "mode": "on-demand", "read": 12000.0, "write": 4000.0, "partition_read": 3000.0, "partition_write": 1000.0,
        "scale": 0.01}}}
    info["fidelity"] = {"enabled": True}
    (run / "run.json").write_text(json.dumps(info))
    rng = np.random.default_rng(3)
    rows = []
    for t in np.arange(2.0, 120.0, 2.0) + 1_750_000_000.0:  # 2 WCU a push, ~4.8 pushes/s: ~9.6 of the 10 WCU/s
        rows.append([t, "local", "t", "", "SYNCSTATE#global", 0.0, 2 * 9.6 * rng.uniform(0.95, 1.05), 3])
        rows.append([t, "local", "t", "", "FILE#a", 0.0, 2 * 1.0, 0])
    pd.DataFrame(rows, columns=["ts", "process", "table", "index", "key", "read_units", "write_units",
                                "throttles"]).to_csv(run / "keys.csv", index=False)
    f = findings_of(open_run(run))
    b = f["bottleneck"]
    assert b["kind"] == "partition" and b["name"] == "SYNCSTATE#global" and b["evidence"]["throttles"] > 0
    hot = next(x for x in f["limits"] if x["kind"] == "key throughput")
    assert hot["name"] == "SYNCSTATE#global" and hot["within_run"] and hot["scale"] == 0.01
    assert hot["sentence"] in f["sentences"]
    out = build_report([run], tmp_path / "report")
    page = (out / "index.html").read_text()
    assert "What reaches a limit next?" in page and "SYNCSTATE#global" in page


def test_growth_that_levels_off_is_said_to_slow():
    def filling(t):  # a registry of long-lived models: fast while new models come in, flat once all are in
        return 1000.0 + 20_000.0 * (1 - np.exp(-t / 150.0)) + 20.0 * np.sin(t * 1.3)

    f = findings(_rows(filling), run_info(workers=WORKERS, duration_s=DURATION))
    item = next(x for x in f["limits"] if x["kind"] == "item size")
    assert item["slowing"] and item["halves_growth_per_s"][1] < item["halves_growth_per_s"][0] / 3
    assert "Its growth slowed over the run" in item["sentence"]
    steady = next(x for x in findings(_rows(_registry), run_info(workers=WORKERS, duration_s=DURATION))["limits"]
                  if x["kind"] == "item size")
    assert not steady["slowing"]


def test_iterations_that_did_not_see_the_item_carry_its_last_size():
    """A registry filled in the first minute and left alone: the line must see it stop, not only the additions."""
    def early(t):
        return np.where(t < 60, 1000.0 + 50.0 * t, 0.0)  # only the first minute's pushes added (and saw) it

    f = findings(_rows(early), run_info(workers=WORKERS, duration_s=DURATION))
    item = next(x for x in f["limits"] if x["kind"] == "item size")
    assert item["now"] == pytest.approx(1000 + 50 * 60, rel=0.01)
    assert item["growth_per_s"] < 5 and item["slowing"]  # the plateau is in the line, and said
    assert item["sentence"] not in f["sentences"]  # an item that slowed is not the page's lead


def test_the_size_columns_name_the_items_the_backend_measures():
    from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY_ITEM
    from harness.record.schema import SIZE_ITEMS

    assert SIZE_ITEMS["registry_bytes"] == REGISTRY_ITEM


def test_a_steady_line_with_a_tight_interval_is_not_slowing():
    f = findings(_rows(lambda t: 1000.0 + 84.0 * t - 0.002 * t * t), run_info(workers=WORKERS, duration_s=DURATION))
    item = next(x for x in f["limits"] if x["kind"] == "item size")
    assert not item["slowing"]  # 3 % less growth in the second half: credible with no noise, but not material


def test_a_point_estimate_past_the_horizon_is_only_possibly_within_it():
    rng = np.random.default_rng(7)
    t = np.arange(0.0, 600.0, 1.0)
    size = 20_000.0 + 4.2 * t + rng.normal(0, 2000, len(t))  # ~25.6 h to 400 KB, 95 %: ~21-33 h
    f = item_forecast("x", t, size, rate=1.0, run_s=600.0)
    lo, hi = f["seconds_to_limit_interval"]
    assert lo < 24 * 3600 < f["seconds_to_limit"] < hi
    assert "possibly within 24.0 h (the interval's soonest end)" in f["sentence"]
