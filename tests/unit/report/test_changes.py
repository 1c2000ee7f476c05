"""Where the rate changed, and what was recorded then (issue 59 item 2): change points on synthetic runs with
known change times (found within one window), false alarms counted over 60 flat runs, the annotations."""

from __future__ import annotations

import numpy as np
import pytest

from harness.report.changes import changes
from harness.report.run.findings import findings
from tests.support.synthetic import make_rows, run_info


def _findings(seed: int, **case):
    rows = make_rows(seed=seed, **case)
    return findings(rows, run_info(workers=case["workers"], duration_s=case["duration_s"]))


@pytest.mark.parametrize("seed", range(8))
def test_a_fall_with_throttles_is_found_within_one_window_and_named(seed):
    # 4 workers at 2 it/s each; from 150 s, 40 % of iterations fail throttled: the successes fall to 1.2 it/s each
    f = _findings(seed, workers=4, duration_s=300.0, rate=lambda t: np.full_like(t, 2.0),
                  failure=lambda t: np.where(t >= 150, 0.4, 0.0), error_kinds=("throttled",))
    ch = f["changes"]
    assert len(ch["rate"]) >= 1, ch
    first = ch["first"]
    assert abs(first["t_s"] - 150) <= ch["window_s"], (first, ch["window_s"])
    assert first["before"] == pytest.approx(8.0, rel=0.15) and first["after"] == pytest.approx(4.8, rel=0.15)
    assert any(n.startswith(("throttled failures started", "a burst of throttled")) for n in first["near"]), first
    assert "throttled" in ch["sentence"]
    assert ch["sentence"].startswith(f"The rate changed first at {first['t_s']:.0f} s")


@pytest.mark.parametrize("seed", range(5))
def test_a_step_that_jumps_is_found_within_one_window(seed):
    f = _findings(seed, workers=4, duration_s=240.0, rate=lambda t: np.full_like(t, 1.5),
                  steps={"commit_ms": lambda t: np.where(t < 100, 50.0, 150.0), "pull_ms": lambda t: 40 + 0 * t})
    ch = f["changes"]
    commit = ch["steps"]["commit"]
    # one change, or two around the bin that straddles the jump (PELT keeps 2 bins a segment): the larger within
    # one window of the truth, both within two
    big = max(commit, key=lambda c: abs(c["after"] - c["before"]))
    assert abs(big["t_s"] - 100) <= ch["window_s"], commit
    assert 1 <= len(commit) <= 2 and all(abs(c["t_s"] - 100) <= 2 * ch["window_s"] for c in commit), commit
    assert commit[0]["before"] == pytest.approx(50, rel=0.1) and commit[-1]["after"] == pytest.approx(150, rel=0.1)
    assert "pull" not in ch["steps"]  # a flat step has no change


FLAT = {"4 workers x 1.25 it/s for 120 s": dict(workers=4, duration_s=120.0, rate=lambda t: np.full_like(t, 1.25)),
        "10 workers x 0.5 it/s for 600 s": dict(workers=10, duration_s=600.0, rate=lambda t: np.full_like(t, 0.5))}


@pytest.mark.parametrize("case", FLAT.values(), ids=FLAT.keys())
def test_false_alarms_over_60_flat_runs_stay_within_the_stated_rate(case):
    runs = 60
    found = [_findings(seed, **case)["changes"] for seed in range(runs)]
    alarms = sum(bool(ch["rate"]) for ch in found)
    assert alarms <= changes.FALSE_ALARM_RATE * runs, alarms  # at most 3 of 60
    step_alarms = sum(bool(ch["steps"]) for ch in found)  # the steps' times are flat too (noise of +-20 %)
    assert step_alarms <= changes.FALSE_ALARM_RATE * runs, step_alarms


def test_a_short_run_has_too_few_windows_and_says_so():
    f = _findings(0, workers=2, duration_s=10.0, rate=lambda t: np.full_like(t, 1.0))
    assert f["changes"]["penalty"] is None and "too few" in f["changes"]["note"]


def test_the_penalty_is_the_stated_constant_times_log_windows():
    rng = np.random.default_rng(1)
    flat = changes.rate_signal(rng.poisson(20, 60).astype(float), 1.0)
    assert changes.detect(flat) == []
    step = changes.rate_signal(np.concatenate([rng.poisson(20, 30), rng.poisson(10, 30)]).astype(float), 1.0)
    assert changes.detect(step) and abs(changes.detect(step)[0] - 30) <= 1
