"""The rate forecast meets a partition's capacity (issue 59): the capacity bound beside the composed rate.

A simulated closed fleet (``forecast_runs.simulate``) whose iterations each write to one partition key a number
of units that grows with the fleet's iterations (a catalog export growing with the catalog), priced into keys.csv
rows as the run would record them (a row every 3 s), against the [fidelity] model's partition limit. The step
times alone forecast a rate the partition cannot carry; the forecast must be the partition's bound there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.aws.fidelity.throttle import DynamoCapacity, partition_of
from harness.report.forecast.capacity import capacity_of, model_of
from harness.report.forecast.forecast import forecast, sentence
from harness.report.forecast.horizon import Horizon
from tests.support.forecast_calibration import WARMUP_S, inputs_of_rows
from tests.support.forecast_runs import EXPORT_KEY, forecast_against, simulate, write_run
from tests.support.synthetic import T0

KEY = "FILE#w0-0/.catalog-export.json"
SCALE = 0.1  # 100 write units/s a partition
DURATION_S = 120.0


def _info(scale: float = SCALE, **fid) -> dict:
    cfg = {"mode": "on-demand", "read": 12_000.0, "write": 4_000.0, "partition_read": 3_000.0,
           "partition_write": 1_000.0, "scale": scale}
    return {"backend": "dynamodb", "endpoint_kind": "embedded", "fidelity": {"enabled": True, "dynamodb": cfg},
            "scenario": {"fidelity": {"mode": "auto", "config": {"dynamodb": cfg}}, **fid}}


def _keys(rows: list[dict], units: callable, every_s: float = 3.0) -> pd.DataFrame:
    """keys.csv's rows for the run: each iteration's ``units(n)`` (n: its place among the fleet's successes)
    on ``KEY``, plus a small constant load on other keys, summed per ``every_s`` interval (``t``: its end)."""
    t = np.sort(np.array([r["ts_end"] - T0 for r in rows]))
    n = np.arange(1, len(t) + 1)
    edges = np.arange(0.0, DURATION_S + every_s, every_s)
    w = np.searchsorted(edges, t, side="left")
    out = []
    for k, (key, per) in enumerate(((KEY, units(n)), ("LOCK#.locks/w0-0.lock", np.full(len(t), 2.0)))):
        sums = np.bincount(w, weights=per, minlength=len(edges))
        for j in np.flatnonzero(sums):
            out.append({"t": edges[min(j, len(edges) - 1)], "table": "tbl", "index": "", "key": key,
                        "read_units": 0.0 if k == 0 else 1.0, "write_units": float(sums[j]), "throttles": 0})
    return pd.DataFrame(out)


def _inputs(units: callable, info: dict | None = None, seed: int = 0):
    rows = simulate(workers=3, duration_s=DURATION_S, per_entry_ms=0.01, seed=seed)
    x = inputs_of_rows(rows, DURATION_S, 3)
    x.capacity = capacity_of(info or _info(), _keys(rows, units), x.ok["t"].to_numpy(), DURATION_S, WARMUP_S,
                             x.successes - len(x.ok))
    return x


def test_the_model_partition_rule_is_the_throttle_one(monkeypatch):
    """The throttle's buckets follow ``partition_of`` (the rule the bound reads), not a copy of it."""
    import harness.aws.fidelity.throttle as throttle
    from harness.aws.capacity import Charge
    from harness.core.clock import FakeClock

    assert DynamoCapacity().partitions() == 4
    keys = [f"FILE#k{i}" for i in range(12)]
    assert len({partition_of(k, 4) for k in keys}) > 1
    t = throttle.DynamoThrottle(DynamoCapacity(), FakeClock())
    t.admit_writes([Charge("tbl", None, k, "write", 1.0) for k in keys])
    assert {b[3] for b in t._buckets} == {partition_of(k, 4) for k in keys}
    monkeypatch.setattr(throttle, "partition_of", lambda key, partitions: 0)
    t = throttle.DynamoThrottle(DynamoCapacity(), FakeClock())
    t.admit_writes([Charge("tbl", None, k, "write", 1.0) for k in keys])
    assert {b[3] for b in t._buckets} == {0}


def test_units_growing_towards_a_partition_limit_bind_the_forecast_at_the_horizon():
    """Units per iteration 3e-5 n^1.5 on one partition of 100 units/s: its bound about 30 it/s at the run's end,
    above the fleet's rate; at 10x the run's length below what the step times give: the forecast is the bound."""
    grow = lambda n: 3e-5 * np.power(n, 1.5)  # noqa: E731
    x = _inputs(grow)
    fc = forecast(x, Horizon("multiple", 10.0), draws=60)
    cap = fc["capacity"]
    assert cap["binds"] and cap["bucket"]["partition"] == partition_of(KEY, 4) and cap["bucket"]["kind"] == "write"
    assert cap["bucket"]["limit"] == 100.0 and cap["bucket"]["keys"] == [KEY]
    n_h = fc["horizon_iterations"]
    bound = 100.0 / grow(n_h)
    assert abs(fc["rate"]["point"] / bound - 1) < 0.05, (fc["rate"], bound)
    assert fc["rate"]["lo"] <= bound * 1.02 and fc["rate"]["hi"] >= bound * 0.98
    assert abs(cap["units_per_iteration_at_horizon"]["point"] / grow(n_h) - 1) < 0.05
    # the step times alone would forecast far above it
    unbound = forecast(_inputs(grow, {"backend": "dynamodb", "fidelity": {"enabled": False}}),
                       Horizon("multiple", 10.0), draws=60)
    assert unbound["rate"]["point"] > 1.5 * bound
    assert x.successes < cap["binds_from_iteration"] < n_h and not cap["already"]
    said = sentence(fc)
    assert f"the fleet is bound by partition {partition_of(KEY, 4)} of the table's writes (1 key: {KEY})" in said
    assert "at its 100 units/s" in said


def test_a_run_far_from_any_limit_forecasts_as_without_the_bound_to_the_digit():
    far = lambda n: np.full(len(n), 3.0)  # noqa: E731
    x = _inputs(far, _info(scale=1.0))
    with_bound = forecast(x, Horizon("multiple", 10.0), draws=60)
    x.capacity = None
    without = forecast(x, Horizon("multiple", 10.0), draws=60)
    assert with_bound["capacity"]["bucket"] is not None and not with_bound["capacity"]["binds"]
    assert with_bound["capacity"]["binds_from_iteration"] is None
    for k in ("rate", "horizon_iterations", "horizon_s", "halves", "curve", "terms"):
        assert with_bound[k] == without[k], k
    assert sentence(with_bound) == sentence(without)


def test_no_fidelity_model_no_bound_and_the_reason():
    off = {"backend": "dynamodb", "fidelity": {"enabled": False}, "scenario": {"fidelity": {"mode": "auto"}}}
    fc = forecast(_inputs(lambda n: 1.0 + 0.004 * n, off), Horizon("multiple", 10.0), draws=20)
    cap = fc["capacity"]
    assert cap["bucket"] is None and not cap["binds"] and "enabled = false" in cap["reason"]
    assert model_of({"backend": "s3"})[1].startswith("the s3 backend")
    aws = {"backend": "dynamodb", "endpoint_kind": "aws", "scenario": {"fidelity": {"mode": "auto"}}}
    assert "AWS" in model_of(aws)[1]
    assert "no DynamoDB capacity model" in model_of({"backend": "dynamodb"})[1]
    assert "keys.csv" in capacity_of(_info(), None, np.arange(10.0), 120.0, 10.0).why


def test_a_provisioned_table_limit_is_a_bucket_of_its_own():
    info = _info()
    for d in (info["fidelity"]["dynamodb"], info["scenario"]["fidelity"]["config"]["dynamodb"]):
        d.update(mode="provisioned", write=500.0)  # 50 units/s at scale 0.1: below the partition's 100
    x = _inputs(lambda n: 1.0 + 0.004 * n, info)
    fc = forecast(x, Horizon("multiple", 10.0), draws=20)
    b = fc["capacity"]["bucket"]
    assert b["partition"] is None and b["limit"] == 50.0 and fc["capacity"]["binds"]
    assert fc["capacity"]["already"] and "by the table's writes at its 50 units/s" in sentence(fc)


def test_a_run_directory_with_keys_csv_forecasts_the_long_run_its_partition_holds_back(tmp_path):
    """Through the report's own path (run.json's model, keys.csv read and put on the load's clock): a simulated
    fleet whose exports' units grow with the catalog against a 1,000 units/s partition (a token bucket: exports
    wait while the fleet asks more), run for 2 and 10 minutes."""
    case = dict(workers=3, per_entry_ms=0.002, export_per_row_ms=0.001, rows_per_it=1.0, units_per_row=0.01)
    runs = {label: write_run(tmp_path / label, simulate(duration_s=d, **case), workers=3, duration_s=d)
            for label, d in (("short", 120.0), ("long", 600.0))}
    assert (runs["short"] / "keys.csv").is_file()
    fc, level = forecast_against(runs["short"], runs["long"])
    cap = fc["capacity"]
    assert cap["binds"] and cap["bucket"]["keys"] == [EXPORT_KEY] and cap["bucket"]["limit"] == 1000.0
    assert fc["horizon_iterations"] > cap["binds_from_iteration"] > fc["anchor"]["iterations"]
    assert abs(float(level["rate"]) / fc["rate"]["point"] - 1) < 0.1, (fc["rate"], level["rate"])
