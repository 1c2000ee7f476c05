"""The fleet verdict on synthetic runs with Poisson noise, over many seeds: each case fails when a verdict is wrong.

Every case is generated with 40 seeds; a flat run may be called degraded or
falling at most twice (1 in 20), a run with a known shape must get it in at
least 38 of 40.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from harness.report.run import verdict
from harness.report.run.findings import findings
from harness.report.series import pick_window, run_span
from tests.support.synthetic import make_rows, run_info

SEEDS = 40


def _verdicts(seeds: int = SEEDS, **case) -> list[dict]:
    out = []
    for seed in range(seeds):
        rows = make_rows(seed=seed, **case)
        span = run_span(run_info(workers=case["workers"], duration_s=case["duration_s"]), rows)
        out.append(verdict.fleet_verdict(rows, span, pick_window(span.seconds, int(rows["ok"].sum()))))
    return out


def _flat(r):
    return lambda t: np.full_like(t, r)


FLAT_CASES = {
    "4 workers x 1.25 it/s for 120 s": dict(workers=4, duration_s=120.0, rate=_flat(1.25)),
    "10 workers x 0.02 it/s for 1 h": dict(workers=10, duration_s=3600.0, rate=_flat(0.02)),
    "4 workers x 0.2 it/s for 40 s (few iterations)": dict(workers=4, duration_s=40.0, rate=_flat(0.2)),
}


@pytest.mark.parametrize("case", FLAT_CASES.values(), ids=FLAT_CASES.keys())
def test_flat_runs_are_not_called_degraded_or_falling(case):
    vs = _verdicts(**case)
    wrong = sum(v["degraded"] or v["shape"] == "still falling" for v in vs)
    assert wrong <= SEEDS // 20, Counter(v["shape"] for v in vs)
    assert Counter(v["shape"] for v in vs)["flat"] >= SEEDS - 2


def test_a_fall_to_a_floor_that_holds_is_degraded_and_flat():
    # 6 workers, 2 -> 0.3 it/s within a minute, then flat for four
    vs = _verdicts(workers=6, duration_s=300.0, rate=lambda t: np.where(t < 60, 2 - 1.7 * t / 60, 0.3))
    assert sum(v["degraded"] for v in vs) >= SEEDS - 2
    assert Counter(v["shape"] for v in vs)["flat"] >= SEEDS - 2
    floors = [v["floor_rate"] for v in vs]
    assert np.median(floors) == pytest.approx(6 * 0.3, rel=0.2)
    assert all(v["floor_at_s"][0] >= 40 for v in vs)  # the floor is after the fall, not in it


def test_a_run_falling_to_its_end_is_still_falling():
    # the legacy GSI: 0.10 -> 0.01 per worker, falling to the very end
    vs = _verdicts(workers=20, duration_s=3600.0, rate=lambda t: 0.10 * (1 - 0.9 * t / 3600))
    assert Counter(v["shape"] for v in vs)["still falling"] >= SEEDS - 2
    assert all(v["degraded"] for v in vs)
    assert all(v["end_rate"] == v["floor_rate"] for v in vs)


def test_a_v_shaped_run_is_recovering():
    vs = _verdicts(workers=6, duration_s=300.0, rate=lambda t: np.interp(t, [0, 150, 300], [2.0, 0.5, 1.7]))
    assert Counter(v["shape"] for v in vs)["recovering"] >= SEEDS - 2
    for v in vs:
        assert v["degraded"] and v["end_over_floor"] > 1.5
        assert 60 <= (v["floor_at_s"][0] + v["floor_at_s"][1]) / 2 <= 240


def test_a_rising_run_is_rising():
    vs = _verdicts(workers=8, duration_s=120.0, rate=lambda t: 0.5 + 1.0 * t / 120)
    assert Counter(v["shape"] for v in vs)["rising"] >= SEEDS - 2
    assert not any(v["degraded"] for v in vs)


def test_workers_hanging_for_the_last_tenth_read_stalled():
    vs = _verdicts(workers=4, duration_s=120.0, rate=lambda t: np.where(t < 108, 1.25, 0.0))
    assert Counter(v["shape"] for v in vs)["stalled"] >= SEEDS - 2
    for v in vs:
        st = v["stall"]
        assert 10 <= st["gap_s"] <= 14 and st["p"] < 1e-3


def test_a_stall_needs_run_json_end_and_without_it_the_rows_are_the_span():
    rows = make_rows(workers=4, duration_s=120.0, rate=lambda t: np.where(t < 108, 1.25, 0.0), seed=1)
    info = run_info(workers=4, duration_s=120.0)
    with_end = run_span(info, rows)
    assert with_end.end_from == "run.json" and with_end.seconds == pytest.approx(120, abs=0.5)
    no_end = run_span({**info, "ended_at": None}, rows)
    assert no_end.end_from == "rows" and no_end.seconds < 109
    assert "ended_at" in no_end.note() and "taken from its iterations" in no_end.note()
    f = findings(rows, {**info, "ended_at": None})
    assert f["fleet"]["shape"] != "stalled" and no_end.note() in f["sentences"]


def test_the_floor_is_not_biased_low_by_noise():
    # the old floor (minimum of a rolling mean) read ~x1.3 below a flat rate; a segment level does not
    vs = _verdicts(workers=4, duration_s=120.0, rate=_flat(1.25))
    ratios = [v["start_rate"] / v["floor_rate"] for v in vs]
    assert np.median(ratios) < 1.2
    assert not any(v["degraded"] for v in vs[:5])


def test_windows_hold_enough_successes_for_an_interval():
    rows = make_rows(workers=10, duration_s=3600.0, rate=_flat(0.02), seed=3)
    w = pick_window(3600.0, int(rows["ok"].sum()))
    assert 3600 / 150 <= w <= 3600 / 12
    assert int(rows["ok"].sum()) * w / 3600 >= 5  # ~10 expected successes per window, at least 5


def test_dispersion_widens_intervals_for_bursty_counts():
    rng = np.random.default_rng(0)
    t = np.repeat(np.arange(0, 600, 10.0), rng.poisson(20, 60)) + 0.5  # every iteration of a window at once
    edges = np.linspace(0, 600, 7)
    assert verdict.dispersion(t, edges, 1.0) > 3
    smooth = np.sort(rng.uniform(0, 600, 1200))
    assert verdict.dispersion(smooth, edges, 10.0) < 1.5


def test_run_span_takes_the_load_not_the_rows():
    rows = make_rows(workers=2, duration_s=60.0, rate=_flat(1.0))
    info = run_info(workers=2, duration_s=60.0)
    info["started_at"] = pd.Timestamp(rows["ts_start"].min() - pd.Timedelta(seconds=5)).isoformat()
    span = run_span(info, rows)
    assert span.start_from == "run.json" and span.t0 < rows["ts_start"].min()
    assert span.note() is None


def _short_run_findings(successes: list[int], segment_s: float = 2.5, warmup_s: float = 1.0) -> dict:
    levels = [{"t0": warmup_s + i * segment_s, "t1": warmup_s + (i + 1) * segment_s, "successes": n,
               "rate": n / segment_s, "lo": n / segment_s * 0.6, "hi": n / segment_s * 1.5} for i, n in
              enumerate(successes)]
    floor = min(range(len(levels)), key=lambda i: (levels[i]["rate"], -i))
    fleet = {"levels": levels, "floor_index": floor, "shape": "flat", "degraded": False, "segment_s": segment_s,
             "warmup_s": warmup_s, "degradation_ratio": levels[0]["rate"] / levels[floor]["rate"],
             "end_over_start": levels[-1]["rate"] / levels[0]["rate"], "stall": None}
    return {"fleet": fleet, "span": {"seconds": warmup_s + len(levels) * segment_s}}


def test_a_short_flat_run_says_how_long_a_run_would_tell_its_fall():
    from harness.report.run.words import fleet_sentences
    from harness.report.stats import successes_to_tell

    # the exact Poisson interval (scipy): x0.7 needs 151 (Byar's approximation said 152)
    assert successes_to_tell(0.5) == 50 and successes_to_tell(0.7) == 151 and successes_to_tell(1.0) is None
    # the 15 s run: 7.48 -> 3.85 it/s, ~19 successes in its start segment of 2.5 s
    text = " ".join(fleet_sentences(_short_run_findings([19, 14, 12, 11, 10, 10])))
    need = successes_to_tell(10 / 19)
    assert need == 56 and f"the start segment needs about {need} successes" in text  # 19 were far too few
    assert f"a run of about {6 * need / (19 / 2.5) + 1:.0f} s at this rate" in text and "docs/reports.md" in text


def test_a_run_long_enough_for_its_fall_gets_no_advice():
    from harness.report.run.words import fleet_sentences

    text = " ".join(fleet_sentences(_short_run_findings([400, 390, 380, 385, 395, 390], segment_s=60.0)))
    assert "No segment was credibly below the start" in text or "The rate held" in text
    assert "To tell a fall" not in text


def test_the_rank_correlation_is_scipys_without_importing_scipy_stats():
    """pandas' Spearman against ``scipy.stats.spearmanr`` on 300 draws with heavy ties, and the report's path
    leaves ``scipy.stats`` unimported (a third of a short run's report's CPU)."""
    import subprocess
    import sys

    from scipy.stats import spearmanr

    from harness.report.stats import spearman

    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(3, 300))
        x = rng.integers(0, int(rng.integers(2, 30)), n).astype(float)
        y = x * rng.normal(1, 0.5, n) + rng.integers(0, 4, n)
        if np.ptp(x) and np.ptp(y):
            assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    code = ("import sys, numpy as np; from harness.report.stats import rank_trend; "
            "rank_trend(np.arange(50.0), np.arange(50.0) ** 2 % 7); print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
