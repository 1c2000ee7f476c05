"""The early stop's judge (harness.gates.live): what it reads from rows as they arrive, and when it stops."""

from __future__ import annotations

import numpy as np

from harness.config import scenario as scenarios
from harness.gates import expr
from harness.gates.live import MIN_OBSERVATIONS, LiveGate, live_gate

T0 = 1_800_000_000.0


def row(end_s: float, ok: bool = True, lock_wait_ms: float = 10.0, kind: str | None = None) -> dict:
    return {"ts_start": T0 + end_s - 0.1, "ts_end": T0 + end_s, "ok": ok, "error_kind": kind,
            "lock_wait_ms": lock_wait_ms, "total_ms": lock_wait_ms + 50, "wait_ms": None}


def gate(text: str, **kw) -> LiveGate:
    return LiveGate([expr.parse(text, abort=True)], T0, **kw)


def test_a_credible_breach_is_reported_with_when_and_its_line():
    g = gate("p95(lock_wait_ms) < 100ms")
    g.add([row(i * 0.1, lock_wait_ms=500 + i) for i in range(1, 60)])
    hit = g.judge(T0 + 6.0)
    assert hit is not None and hit["check"] == "p95(lock_wait_ms) < 100ms" and hit["at_s"] == 6.0
    assert hit["line"].startswith("p95 lock wait ") and "is above 100 ms" in hit["line"]


def test_nothing_is_judged_before_enough_rows():
    g = gate("p95(lock_wait_ms) < 100ms")
    g.add([row(i * 0.1, lock_wait_ms=900) for i in range(1, MIN_OBSERVATIONS)])
    assert g.judge(T0 + 5.0) is None
    g.add([row(3.0, lock_wait_ms=900)])
    assert g.judge(T0 + 5.0) is not None


def test_a_test_that_holds_or_straddles_its_limit_runs_on():
    held = gate("p95(lock_wait_ms) < 100ms")
    held.add([row(i * 0.1, lock_wait_ms=20) for i in range(1, 200)])
    assert held.judge(T0 + 30) is None
    rng = np.random.default_rng(1)
    near = gate("p95(lock_wait_ms) < 100ms")  # a p95 right at the limit: the 99 % interval straddles it
    near.add([row(i * 0.1, lock_wait_ms=float(x)) for i, x in enumerate(rng.uniform(0, 100 / 0.95, 200), 1)])
    assert near.judge(T0 + 30) is None


def test_a_rate_is_judged_only_once_its_window_follows_the_ramp():
    g = gate("rate(last 10s) > 5/s", ready_s=20.0)  # every user started 20 s in; nothing succeeded yet
    g.add([row(1.0 + i * 0.01, ok=False, kind="throttled") for i in range(50)])
    assert g.judge(T0 + 25.0) is None  # the window (15-25 s) starts inside the ramp
    hit = g.judge(T0 + 31.0)
    assert hit is not None and "fleet rate in the last 10 s 0/s" in hit["line"]


def test_failed_iterations_count_for_a_failure_ratio():
    g = gate("failure_ratio(lock_timeout) < 5%")
    g.add([row(i * 0.1, ok=i % 2 == 0, kind=None if i % 2 == 0 else "lock_timeout") for i in range(1, 101)])
    hit = g.judge(T0 + 11)
    assert hit is not None and "lock_timeout failure ratio 50 %" in hit["line"]


def test_the_master_lag_ends_the_span_early():
    g = gate("rate > 1/s", lag_s=3.5)
    g.add([row(i * 0.1) for i in range(1, 100)])
    assert g.observed(T0 + 20.0).seconds == 16.5


class FakeLive:
    def lock_busy_shares(self, a: float, b: float) -> dict:
        return {"LOCK#x": (np.full(10, 0.97), 6), "LOCK#mine": (np.full(10, 1.0), 1)}


def test_lock_utilization_live_reads_the_tab_timelines():
    g = gate("utilization(lock) < 80%")
    g.add([row(i * 0.1) for i in range(1, 50)])
    hit = g.judge(T0 + 20, FakeLive())
    assert hit is not None and hit["line"].startswith("lock LOCK#x utilization 97 %")


def test_only_abort_thresholds_make_a_gate():
    sc = scenarios.parse({"checks": {"thresholds": ["p95(commit_ms) < 1s"]}})
    assert live_gate(sc.checks, T0, 0, 0) is None
    sc = scenarios.parse({"checks": {"thresholds": ["p95(commit_ms) < 1s", {"check": "rate > 1/s", "abort": True}]}})
    g = live_gate(sc.checks, T0, 0, 0)
    assert g is not None and [t.text for t in g.thresholds] == ["rate > 1/s"]
