"""The suite's compare mode on generated samples: its false-alarm rate between runs of the same code, over many
seeds, and that it finds a phase that really slowed down (``harness.report.compare.suite``)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from harness.report.compare.suite import _counts, compare, rank_of_ends, ratio_interval, verdict


def _brute_counts(n: int, m: int) -> list[int]:
    """Mann-Whitney U over every placement of n x's among n + m ranks (x > y pairs)."""
    out = [0] * (n * m + 1)
    for xs in itertools.combinations(range(n + m), n):
        ys = [r for r in range(n + m) if r not in xs]
        out[sum(1 for x in xs for y in ys if x > y)] += 1
    return out


@pytest.mark.parametrize(("n", "m"), [(1, 1), (2, 3), (4, 4), (5, 5), (3, 6)])
def test_the_null_distribution_is_counted_exactly(n, m):
    assert list(_counts(n, m)) == _brute_counts(n, m)
    assert sum(_counts(n, m)) == math.comb(n + m, n)


def test_the_interval_needs_four_trials_a_side_and_is_conservative():
    assert rank_of_ends(2, 2) is None and rank_of_ends(3, 3) is None and rank_of_ends(3, 4) is None
    assert rank_of_ends(4, 4) == 1  # coverage 1 - 2/70 = 97.1 %
    assert rank_of_ends(5, 5) == 3  # 1 - 8/252 = 96.8 %
    for n, m in [(4, 4), (5, 5), (5, 7), (10, 10)]:
        k = rank_of_ends(n, m)
        c = _counts(n, m)
        assert 2 * sum(c[:k]) / sum(c) <= 0.05 < 2 * sum(c[:k + 1]) / sum(c)


def test_too_few_trials_never_flag_however_large_the_change():
    v = verdict([10.0, 10.1], [100.0, 101.0])
    assert v["verdict"] == "too few trials" and v["interval"] is None and not v["regression"]
    assert v["ratio"] == pytest.approx(10, rel=0.02)


def _phase(rng: random.Random, median: float, sigma: float, n: int, slow: float = 1.0,
           spikes: float = 0.05) -> list[float]:
    """n trials of a phase: lognormal around ``median`` with log-sd ``sigma``; a trial in 20 (``spikes``) a 2-4x
    spike (the machine busy for that trial)."""
    out = []
    for _ in range(n):
        x = median * slow * math.exp(rng.gauss(0, sigma))
        if rng.random() < spikes:
            x *= rng.uniform(2, 4)
        out.append(x)
    return out


PHASES = [(2.0, 0.3), (12.0, 0.1), (50.0, 0.05), (300.0, 0.2), (0.05, 0.5), (1500.0, 0.02)]


@pytest.mark.parametrize(("n", "m"), [(5, 5), (4, 4), (6, 6), (10, 10)])
def test_two_runs_of_the_same_code_flag_at_most_one_phase_in_20(n, m):
    flagged = compared = regressions = 0
    for seed in range(400):
        rng = random.Random(seed)
        for median, sigma in PHASES:
            v = verdict(_phase(rng, median, sigma, n), _phase(rng, median, sigma, m), min_ms=0.0)
            compared += 1
            flagged += v["verdict"] in ("slower", "faster")
            regressions += v["regression"]
    rate = flagged / compared
    assert compared == 2400
    assert rate <= 0.05, f"{flagged} of {compared} comparisons flagged ({rate:.1%})"
    assert rate > 0.005  # the interval is an interval, not a wall: it does flag sometimes
    assert regressions / compared <= 0.02


@pytest.mark.parametrize(("spikes", "found_at_least", "gated_at_least"), [(0.0, 0.99, 0.95), (0.05, 0.70, 0.65)])
def test_an_injected_slowdown_is_found_and_gates(spikes, found_at_least, gated_at_least):
    """One phase 50 % slower (a latency added to its requests), 5 trials a side: flagged and a regression in
    nearly every seed; with a spiky trial now and then (one outlier in the old run hides 5 of the 25 pairs) the
    rank interval gives up some power rather than its false-alarm rate."""
    found = gated = 0
    seeds = 300
    for seed in range(seeds):
        rng = random.Random(1000 + seed)
        v = verdict(_phase(rng, 40.0, 0.08, 5, spikes=spikes), _phase(rng, 40.0, 0.08, 5, slow=1.5, spikes=spikes))
        found += v["verdict"] == "slower"
        gated += v["regression"]
    assert found / seeds >= found_at_least and gated / seeds >= gated_at_least, (found, gated)


def test_a_small_change_is_flagged_but_does_not_fail_the_gate():
    """5 % slower with 1 % noise: credibly slower (flagged), but not credibly past the 10 % threshold."""
    rng = random.Random(7)
    old, new = _phase(rng, 100.0, 0.01, 5), _phase(rng, 100.0, 0.01, 5, slow=1.05)
    v = verdict([x for x in old if x < 150], [x for x in new if x < 150] or new)
    assert v["verdict"] == "slower" and not v["regression"]
    assert 1.0 < v["interval"][0] < 1.1


def test_a_sub_millisecond_phase_is_not_flagged_below_min_ms():
    old, new = [0.010, 0.011, 0.012, 0.010, 0.011], [0.050, 0.052, 0.051, 0.050, 0.053]
    assert verdict(old, new)["verdict"] == "same"  # 5x, but 0.04 ms
    assert verdict(old, new, min_ms=0.0)["verdict"] == "slower"


def test_the_interval_brackets_the_ratio():
    est, lo, hi = ratio_interval([10, 11, 12, 10.5, 11.5], [20, 22, 24, 21, 23])
    assert lo <= est <= hi and est == pytest.approx(2.0, rel=0.05)


def _doc(samples: dict[tuple[str, str, str], list[float]], backend: str = "s3") -> dict:
    return {"suite": "x", "backend": backend, "results": [
        {"number": 1, "scenario": s, "layout": lay, "phase": p, "samples_ms": xs, "requests": 3}
        for (s, lay, p), xs in samples.items()]}


def test_compare_matches_phases_by_scenario_layout_and_phase():
    old = _doc({("A", "sharded", "total"): [10, 11, 10.5, 10.2, 10.8],
                ("A", "sharded", "pushChanged.upload"): [5, 5.2, 5.1, 4.9, 5.0],
                ("B", "monolith", "total"): [3, 3, 3, 3, 3]})
    new = _doc({("A", "sharded", "total"): [20, 21, 20.5, 20.2, 20.8],
                ("A", "sharded", "pushChanged.upload"): [5, 5.2, 5.1, 4.9, 5.0],
                ("A", "monolith", "total"): [1, 1, 1, 1, 1]})
    c = compare(old, new)
    assert [(x["scenario"], x["layout"], x["phase"], x["verdict"]) for x in c["comparisons"]] == [
        ("A", "sharded", "total", "slower"), ("A", "sharded", "pushChanged.upload", "same")]
    assert c["summary"] == {"compared": 2, "slower": 1, "faster": 0, "same": 1, "too few trials": 0,
                            "regressions": 1, "median_total_ratio": pytest.approx(1.95, abs=0.02)}
    assert [x["phase"] for x in c["regressions"]] == ["total"]
    assert c["not_in_this_run"] == [{"scenario": "B", "layout": "monolith"}]
