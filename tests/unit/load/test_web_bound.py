"""The harness tab names the same bound as the report, from the same code, and carries its live charts.

The rows and lock events of a simulated shared lock go into the tab's ``Live`` as they would arrive; the
tab's "Bound by" row and the report's ``findings.bottleneck`` on the same run directory must agree.
"""

from __future__ import annotations

import bisect
import json
import re

import numpy as np
import pytest

from harness.load.web import live as live_mod
from harness.load.web.live import Live
from harness.load.web.tab import table
from harness.metrics.numbers import poisson_band
from harness.report.load import open_run
from harness.report.run.build import findings_of
from harness.report.stats import poisson_interval as report_poisson
from tests.support.synthetic import T0, make_lock_run, simulate_lock


def _feed(live: Live, rows: list[dict], events: list[dict]) -> None:
    """Rows and events in the order they end (a row ships with its iteration's events)."""
    full = [{**r, "ts_start": float(r["ts_start"]), "ts_end": float(r["ts_end"])} for r in rows]
    for r in full:
        for c in live_mod.REPORT_STEPS:
            r.setdefault(c, 0.0)
    live.add(full)
    live.add_events(events)


def _tab(live: Live, now: float, started: float) -> dict[str, dict]:
    rows = table(live.window(now, started), live.test(now, started), capacity=None, throttles_now=None,
                 throttles_test=None, probe=None)
    return {r["metric"]: r for r in rows}, rows


def test_the_tab_and_the_report_name_the_same_saturated_lock(tmp_path):
    run, truth = make_lock_run(tmp_path / "lock", workers=6, duration_s=60.0, hold_ms=(40, 60),
                               retry_ms=(50, 100), seed=4)
    rows, events, _ = simulate_lock(workers=6, duration_s=60.0, hold_ms=(40, 60), retry_ms=(50, 100), seed=4)
    live = Live()
    _feed(live, rows, events)
    by_metric, raw = _tab(live, T0 + 60.0, T0)
    report = findings_of(open_run(run))["bottleneck"]
    assert report["kind"] == "lock"
    bound = by_metric["Bound by"]
    assert bound["test"].startswith(f"the lock {report['name']}: busy ")
    shown = float(re.search(r"busy (\d+) % of the time", bound["test"]).group(1)) / 100
    assert shown == pytest.approx(report["utilization"], abs=0.02) and shown == pytest.approx(truth["busy"], abs=0.02)
    assert bound["how"].startswith(f"The fleet is bound by the lock {report['name']}: busy")
    busy, held = by_metric["Lock busy / held"]["test"].split(" / ")
    assert float(held.rstrip(" %")) / 100 == pytest.approx(truth["held"], abs=0.02)
    # Locust's table shows only its columns; the charts and the page header's numbers ride on the first row, as JSON
    assert set(raw[0]) == {"metric", "now", "test", "how", "charts", "header"}
    json.dumps(raw[0]["charts"])


def test_the_charts_carry_the_rate_band_the_step_shares_and_the_bound_utilization():
    rows, events, truth = simulate_lock(workers=6, duration_s=600.0, hold_ms=(40, 60), retry_ms=(50, 100), seed=1)
    live = Live()
    _feed(live, rows, events)
    c = live.test(T0 + 600.0, T0).charts
    assert 100 <= len(c["t"]) <= live_mod.MAX_POINTS  # 300 bins of 2 s, merged
    rate, lo, hi = (np.array(c[k]) for k in ("ok_rate", "ok_lo", "ok_hi"))
    assert (lo <= rate).all() and (rate <= hi).all()
    assert np.mean(rate) == pytest.approx(sum(r["ok"] for r in rows) / 600.0, rel=0.05)
    total = np.nansum([np.array(v, dtype=float) for v in c["shares"].values()], axis=0)
    assert np.allclose(total[total > 0], 1.0)
    assert set(c["shares"]) == {"lock wait", "pull", "commit"}  # the steps these iterations had
    u = c["utilization"]
    assert u["kind"] == "lock" and c["bound"] == {"kind": "lock", "name": "dynamodb://synthetic-table"}
    assert np.mean(u["values"]) == pytest.approx(truth["busy"], abs=0.02)
    assert np.mean(u["held"]) == pytest.approx(truth["held"], abs=0.03)


def test_without_lock_events_the_tab_names_the_workers_own_time():
    # until the session feeds the history to the tab, a rows-only view: the workers and their dominant step
    rows, _, _ = simulate_lock(workers=6, duration_s=60.0, hold_ms=(40, 60), retry_ms=(50, 100), seed=2)
    live = Live()
    _feed(live, rows, [])
    by_metric, _ = _tab(live, T0 + 60.0, T0)
    bound = by_metric["Bound by"]
    assert bound["test"].startswith("its own iteration time: inside an iteration ")
    assert bound["test"].split(": ", 1)[1] in bound["how"]  # the sentence's own words and numbers
    assert "Lock busy / held" not in by_metric


def test_folded_lock_events_keep_the_whole_tests_figures(monkeypatch):
    rows, events, truth = simulate_lock(workers=6, duration_s=300.0, hold_ms=(40, 60), retry_ms=(50, 100), seed=3)
    monkeypatch.setattr(live_mod, "MAX_LOCK_EVENTS", 2_000)
    live = Live()
    _feed(live, rows, [])
    events.sort(key=lambda e: e.get("granted_ms") or e.get("end_ms") or e.get("invoke_ms"))
    for i in range(0, len(events), 500):  # as they arrive, a batch at a time, oldest first
        live.add_events(events[i:i + 500])
    assert len(live.lock_events) < len(events) and live.lock_folded  # the oldest were folded, then dropped
    lock = next(r for r in live.test(T0 + 300.0, T0).resources if r.kind == "lock")
    assert lock.utilization == pytest.approx(truth["busy"], abs=0.02)
    assert lock.evidence["held"] == pytest.approx(truth["held"], abs=0.03)


def test_a_long_headless_run_keeps_the_tab_flat_and_the_busiest_lock_right():
    """Nine hours headless ask for no window until the end: the tab keeps the recent rows, the last few
    minutes of lock events, and folded figures for the busiest keys, not everything. Beside the shared lock,
    every iteration locks a model of its own once (disposable models): 10,000 keys that must not pile up."""
    duration = 900.0
    rows, events, truth = simulate_lock(workers=6, duration_s=duration, hold_ms=(40, 60), retry_ms=(50, 100),
                                        seed=5)
    model_events = []
    for i in range(10_000):  # one model lock per iteration, held 10 ms, spread over the run
        at = int((T0 + duration * i / 10_000) * 1000)
        model_events += [{"type": "grant", "key": f"data/model/m{i}/.lock", "holder": "w0-0", "nonce": f"m{i}",
                          "started_ms": at, "invoke_ms": at, "granted_ms": at, "expires_ms": at + 3000},
                         {"type": "release", "key": f"data/model/m{i}/.lock", "holder": "w0-0", "nonce": f"m{i}",
                          "invoke_ms": at + 10, "ok": True}]
    everything = sorted(events + model_events, key=lambda e: e.get("granted_ms") or e.get("invoke_ms"))
    live = Live(keep_s=60.0)
    full = [{**r, **{c: r.get(c, 0.0) for c in live_mod.REPORT_STEPS}} for r in rows]
    ends = sorted(full, key=lambda r: r["ts_end"])
    row_at = [r["ts_end"] for r in ends]
    event_at = [(e.get("granted_ms") or e["invoke_ms"]) / 1000 for e in everything]
    most_rows = most_events = most_keys = r_i = e_i = 0
    t = T0
    while t < T0 + duration:  # a batch every 3 s, as a worker reports
        t += 3.0
        r_j, e_j = bisect.bisect_left(row_at, t), bisect.bisect_left(event_at, t)
        live.add(ends[r_i:r_j])
        live.add_events(everything[e_i:e_j])
        r_i, e_i = r_j, e_j
        most_rows = max(most_rows, len(live.recent))
        most_events = max(most_events, len(live.lock_events))
        most_keys = max(most_keys, len(live.lock_folded), len(live.lock_holders))
    rate = len(rows) / duration
    assert most_rows <= 1.5 * rate * 60.0 + 50, (most_rows, rate)  # a minute of rows, not the run's
    assert most_events <= 2 * (len(everything) / duration) * live_mod.FOLD_SPAN_S  # minutes of events
    # the busiest keys' folded figures, and the keys of the events kept (at most FOLD_SPAN_S of them)
    assert most_keys <= live_mod.MAX_LOCK_KEYS + 1.1 * 10_000 / duration * live_mod.FOLD_SPAN_S < 10_000
    shared = "dynamodb://synthetic-table"
    lock = next(r for r in live.test(T0 + duration, T0).resources if r.kind == "lock" and r.name == shared)
    assert lock.utilization == pytest.approx(truth["busy"], abs=0.02)
    assert lock.evidence["held"] == pytest.approx(truth["held"], abs=0.03) and lock.evidence["holders_in_run"] == 6
    assert live.test(T0 + duration, T0).iterations == len(rows)  # the whole test's sums kept every row


def test_the_tabs_poisson_band_is_the_reports_within_byars_approximation():
    """The tab (inside the Locust master) keeps Byar's numpy approximation, scipy stays off the live path; the
    report's interval is scipy's exact one. They agree within 0.02 events and 1 %: Byar's lower end at one event
    (0.013) is the farthest from the exact (0.025)."""
    k = np.array([0, 1, 2, 5, 17, 120, 4000], dtype=float)
    for a, b in zip(poisson_band(k), report_poisson(k), strict=True):
        assert np.allclose(a, b, rtol=0.01, atol=0.02)
        assert not np.allclose(a[1:3], b[1:3], rtol=1e-4)  # two methods, not one
