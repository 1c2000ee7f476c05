"""Open arrivals on a FakeClock: the process asked for, intended starts while every user is busy, the queue's
growth the report states for a known service time and rate, and the scenario keys and checks behind them."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.config import scenario as scenarios
from harness.core.clock import FakeClock
from harness.core.errors import HarnessError
from harness.core.rates import parse_rate
from harness.load.arrivals import ArrivalQueue, ArrivalSchedule
from harness.record.reader import read_rows
from harness.record.writer import to_table
from harness.report.run import checks
from harness.report.run.wait import queued_series, stage_rows, wait_findings
from harness.report.series import run_span

T0 = 1_700_000_000.0


def _counts(times: list[float], start: float, seconds: int) -> np.ndarray:
    return np.bincount(np.floor(np.asarray(times) - start).astype(int), minlength=seconds)[:seconds]


def test_poisson_arrivals_count_like_poisson_per_window():
    rate, seconds = 4.0, 3000
    sched = ArrivalSchedule(lambda _: rate, "poisson", T0, random.Random(7))
    times = []
    while not times or times[-1] < T0 + seconds:
        times.append(sched.next())
    counts = _counts(times, T0, seconds)
    assert abs(counts.mean() - rate) < 0.15
    assert 0.85 < counts.var() / counts.mean() < 1.15  # Poisson: variance = mean (uniform would give 0)
    # chi-square of the counts per window against Poisson(4): 0..9 and 10+ as 11 cells, 10 df; 99.9 % is 29.6
    expected = np.array([math.exp(-rate) * rate ** k / math.factorial(k) for k in range(10)])
    expected = np.append(expected, 1 - expected.sum()) * seconds
    observed = np.append(np.bincount(np.minimum(counts, 10), minlength=11)[:10], (counts >= 10).sum())
    assert ((observed - expected) ** 2 / expected).sum() < 29.6


def test_uniform_arrivals_are_even_and_follow_the_stage_rate():
    sched = ArrivalSchedule(lambda t: 2.0 if t < 10 else 5.0, "uniform", T0, random.Random(1))
    times = [sched.next() for _ in range(70)]
    gaps = np.diff(times)
    assert np.allclose(gaps[:18], 0.5) and np.allclose(gaps[-10:], 0.2)
    counts = _counts(times, T0, 20)
    assert list(counts[1:9]) == [2] * 8 and list(counts[11:19]) == [5] * 8


class RecordingClock(FakeClock):
    def __init__(self) -> None:
        super().__init__(T0)
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)


def test_intended_starts_are_kept_while_every_user_is_busy():
    """One user, a sync of 1 s, arrivals every 0.5 s: each arrival keeps its intended start; the queue builds."""
    clock = RecordingClock()
    q = ArrivalQueue(ArrivalSchedule(lambda _: 2.0, "uniform", T0, random.Random(3)), clock)
    first = q.take()  # due in the future: the free user sleeps until it
    assert clock.sleeps == [pytest.approx(first - T0)] and clock.now() == pytest.approx(first)
    starts, intended = [], [first]
    for _ in range(9):
        clock.advance(1.0)  # the sync runs
        starts.append(clock.now())
        intended.append(q.take())  # overdue: taken at once, no sleep
    assert len(clock.sleeps) == 1
    assert np.allclose(np.diff(intended), 0.5)  # the schedule's own times, not when the user got to them
    waited = np.array(starts) - np.array(intended[1:])
    assert np.allclose(np.diff(waited), 0.5)  # each arrival waits half a second longer than the last
    assert q.queued() == 9  # 19 due by now (0.5 s apart over 9.5 s), 10 taken


def _served(rate: float, users: int, service_s: float, seconds: float) -> tuple[pd.DataFrame, dict]:
    """An open fleet run on a FakeClock: ``users`` users each taking the next arrival, every sync ``service_s``."""
    clock = FakeClock(T0)
    q = ArrivalQueue(ArrivalSchedule(lambda _: rate, "uniform", T0, random.Random(5)), clock)
    free = [T0] * users
    rows = []
    while True:
        u = int(np.argmin(free))
        if free[u] >= T0 + seconds:
            break
        clock.advance(max(0.0, free[u] - clock.now()))
        intended = q.take()
        start = clock.now()
        free[u] = start + service_s
        if free[u] <= T0 + seconds:
            rows.append({"ts_intended": intended, "ts_start": start, "ts_end": free[u], "user": f"w0-{u}",
                         "ok": True, "error_kind": "", "total_ms": service_s * 1000,
                         "wait_ms": (free[u] - intended) * 1000})
    df = pd.DataFrame(rows)
    for c in ("ts_intended", "ts_start", "ts_end"):
        df[c] = pd.to_datetime(df[c], unit="s", utc=True)
    iso = pd.Timestamp(T0, unit="s", tz="UTC")
    info = {"started_at": iso.isoformat(), "ended_at": (iso + pd.Timedelta(seconds=seconds)).isoformat(),
            "scenario": {"fleet": {"arrival": "open", "rate_per_s": rate, "stages": []}}}
    return df, info


def test_a_known_service_time_and_rate_give_the_queue_growth_the_report_states():
    rows, info = _served(rate=6.0, users=2, service_s=0.5, seconds=120)  # served 2 / 0.5 s = 4/s
    span = run_span(info, rows)
    w = wait_findings(rows, info, span, 10.0)
    assert w["growing"] and w["queue_growth_per_s"] == pytest.approx(2.0, abs=0.1)
    assert w["served_per_s"] == pytest.approx(4.0, abs=0.1)
    assert w["sentence"].startswith("arrivals 6.0/s, served 4.0/s: the queue grows 2.0 a second; a run arriving "
                                    "at minute 10 waits about 5 min")  # 600 s x 2/s queued, served 4/s: 300 s
    q = queued_series(rows, span, info["scenario"]["fleet"], 10.0)
    assert q["queued"].iloc[-1] == pytest.approx(240, rel=0.05)  # 2/s for 120 s
    assert np.all(np.diff(q["queued"].to_numpy()) > 0)
    assert w["p99_ms"] > w["p50_ms"] > 20_000  # half-way through the wait is already ~30 s


def test_below_saturation_the_queue_stays_bounded():
    rows, info = _served(rate=3.0, users=2, service_s=0.5, seconds=120)
    w = wait_findings(rows, info, run_span(info, rows), 10.0)
    assert not w["growing"] and w["queue_growth_per_s"] == 0.0
    assert w["p99_ms"] == pytest.approx(500, abs=1) and "stays bounded" in w["sentence"]
    lo, hi = w["intervals"]["p50_ms"]
    assert lo <= w["p50_ms"] <= hi


def test_each_stage_gets_its_rate_wait_and_bound():
    rows, info = _served(rate=3.0, users=2, service_s=0.5, seconds=60)
    info["scenario"]["fleet"]["stages"] = [{"duration_s": 30.0, "workers": 0, "rate_per_s": 3.0},
                                           {"duration_s": 30.0, "workers": 0, "rate_per_s": 6.0}]
    st = stage_rows(rows, info, run_span(info, rows))
    assert [(s["stage"], s["t0"], s["t1"], s["rate_per_s"]) for s in st] == [(1, 0.0, 30.0, 3.0), (2, 30.0, 60.0, 6.0)]
    assert st[0]["bound"] == "bounded" and st[1]["bound"] == "growing"  # the rows were served at 3/s throughout


def test_the_p99_wait_check_names_the_gate_and_the_measured_p99():
    rows, info = _served(rate=6.0, users=2, service_s=0.5, seconds=60)
    sc = scenarios.parse({}).with_checks(max_p99_wait_s=5.0)
    failed = checks.evaluate(rows, sc.checks, info)
    assert len(failed) == 1 and failed[0].startswith("max_p99_wait: the wait's p99 ")
    p99 = float(failed[0].split("p99 ")[1].split("s")[0])
    assert p99 == pytest.approx(rows["wait_ms"].quantile(0.99) / 1000, rel=0.01) and p99 > 5
    assert checks.evaluate(rows, sc.with_checks(max_p99_wait_s=p99 * 2).checks, info) == []


def test_open_fleet_keys_and_their_errors():
    sc = scenarios.parse({"fleet": {"arrival": "open", "rate": "120/min", "process": "uniform", "workers": 3},
                          "checks": {"max_p99_wait": "30s"}})
    assert (sc.fleet.arrival, sc.fleet.rate_per_s, sc.fleet.process, sc.checks.max_p99_wait_s) == \
        ("open", 2.0, "uniform", 30.0)
    assert scenarios.scenario_from_dict(sc.to_dict()) == sc
    closed = scenarios.parse({}).with_overrides(rate_per_s=12.0, workers=2)
    assert (closed.fleet.arrival, closed.fleet.rate_per_s, closed.fleet.workers) == ("open", 12.0, 2)
    for bad, says in [({"arrival": "open"}, "needs fleet.rate"), ({"rate": "2/s"}, "only applies to arrival"),
                      ({"arrival": "open", "rate": "fast"}, "must be a rate like"),
                      ({"arrival": "open", "rate": "2/s", "process": "bursty"}, "must be one of poisson, uniform"),
                      ({"stages": [{"duration": "10s", "rate": "2/s"}]}, "needs fleet.arrival = \"open\""),
                      ({"stages": [{"workers": 3}]}, "stages.0.?.duration must be a positive duration")]:
        with pytest.raises(HarnessError, match=says):
            scenarios.parse({"fleet": bad})
    assert parse_rate("2/s") == 2.0 and parse_rate("300/h") == pytest.approx(1 / 12)
    with pytest.raises(ValueError):
        parse_rate("0/s")


def test_closed_rows_stay_valid_and_old_shards_read_as_nulls(tmp_path):
    closed = {"ts_start": T0, "ts_end": T0 + 1, "ok": True, "total_ms": 1000.0, "ts_intended": T0, "wait_ms": 1000.0}
    older = {"ts_start": T0 + 2, "ts_end": T0 + 3, "ok": True, "total_ms": 1000.0}  # a row without the columns
    table = to_table([closed, older])
    assert table.column("ts_intended").null_count == 1
    d = tmp_path / "iterations"
    d.mkdir()
    pq.write_table(table, d / "part-a.parquet")
    old = pa.table({"ts_start": pa.array([int(T0 * 1e6)], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                    "ok": [True], "total_ms": [5.0]})  # a shard written before the schema had the columns
    pq.write_table(old, d / "part-b.parquet")
    rows = read_rows(tmp_path, ["ts_start", "ts_intended", "wait_ms", "total_ms"])
    assert len(rows) == 3 and rows["wait_ms"].isna().sum() == 2
    assert rows["ts_intended"].iloc[0] == rows["ts_start"].iloc[0]


def test_an_iteration_records_its_intended_start_and_wait(aws, clock):
    """Closed: intended = actual start, wait = total; open: the wait runs from the intended start (before it)."""
    from harness.load.drivers.model import SwampWorker
    from tests.conftest import make_backend

    sw = SwampWorker(scenarios.parse({}, "x.toml"), make_backend("per-model", aws, clock=clock), process="local",
                     user="w0", clock=clock, rng_seed=1)
    closed = sw.run_once().row
    assert closed["ts_intended"] == closed["ts_start"] and closed["wait_ms"] == closed["total_ms"]
    late = sw.run_once(intended=closed["ts_end"] - 2.0).row  # arrived 2 s before the user was free
    assert late["ok"] and late["wait_ms"] == pytest.approx((late["ts_end"] - late["ts_intended"]) * 1000)
    assert late["wait_ms"] >= 2000 + late["total_ms"] - 1


def test_the_saturation_point_is_the_first_rate_whose_queue_grows():
    from harness.report.run.wait import saturation

    def step(rate: float, growing: bool, served: float) -> dict:
        return {"rate_per_s": rate, "wait": {"growing": growing, "served_per_s": served,
                                             "queue_growth_per_s": rate - served if growing else 0.0}}

    point = saturation([step(6.0, True, 4.2), step(2.0, False, 2.0), step(4.0, False, 4.0), step(8.0, True, 4.1)],
                       4.3)
    assert (point["bounded_up_to_per_s"], point["grows_from_per_s"]) == (4.0, 6.0)
    assert point["sentence"] == ("the wait grows without bound from 6.00/s (served 4.20/s, the queue grows 1.80 a "
                                 "second); bounded up to 4.00/s; the closed fleet's rate 4.30/s.")
    never = saturation([step(1.0, False, 1.0), step(2.0, False, 2.0)], None)
    assert never["grows_from_per_s"] is None and "climb higher" in never["sentence"]
    # a step that finished no iteration (wait None) says nothing: not bounded, not growing, not the top rate
    empty = {"rate_per_s": 9.0, "wait": None}
    assert saturation([step(1.0, False, 1.0), step(2.0, False, 2.0), empty], None)["sentence"] == never["sentence"]
    assert "bounded up to 2.00/s" in never["sentence"]
    assert saturation([{**empty, "rate_per_s": 0.5}, step(6.0, True, 4.2), step(4.0, False, 4.0)], 4.3) == {
        **point, "sentence": point["sentence"]}
    at_once = saturation([{**empty, "rate_per_s": 0.5}, step(6.0, True, 4.2)], 4.3)
    assert at_once["bounded_up_to_per_s"] is None and at_once["sentence"] == (
        "the wait grows without bound from 6.00/s (served 4.20/s, the queue grows 1.80 a second); no lower rate was "
        "seen bounded; the closed fleet's rate 4.30/s.")
    none = saturation([empty], 4.3)
    assert none["bounded_up_to_per_s"] is None and none["grows_from_per_s"] is None
    assert none["sentence"] == ("no step finished an iteration, so none says where the wait grows; the closed "
                                "fleet's rate 4.30/s: lengthen --duration.")


def test_a_rate_range_climbs_in_steps():
    from harness.cli.main import build_parser
    from harness.products.climb.command import rates

    args = build_parser().parse_args(["climb", "namespaced", "--rate", "1/s..8/s", "--steps", "8"])
    assert args.rate == (1.0, 8.0)
    assert rates(*args.rate, args.steps) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert build_parser().parse_args(["run", "namespaced", "--rate", "120/min"]).rate == 2.0
    with pytest.raises(HarnessError, match="--steps must be at least 2"):
        rates(1.0, 2.0, 1)
