"""The forecast's band carries the run's own variability (``harness/report/forecast/band.py``, issue 59): the
successes' dispersion over blocks, the anchor's quasi-Poisson draws, the fits' wild cluster bootstrap.
The calibration over many simulated runs is in tests/bench/test_forecast_calibration.py."""

from __future__ import annotations

import numpy as np
import pytest

from harness.report.forecast import fit
from harness.report.forecast.band import Dispersion, blocks_of, dispersion, few_blocks, rate_draws, resampled, wild
from tests.support.forecast_calibration import inputs_of_rows
from tests.support.forecast_runs import simulate


def _poisson_times(rate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Event times of a Poisson process whose rate is ``rate[s]`` in second ``s``."""
    return np.concatenate([s + rng.uniform(0, 1, rng.poisson(r)) for s, r in enumerate(rate)])


def test_poisson_counts_measure_about_1_and_a_wandering_machine_more():
    rng = np.random.default_rng(0)
    flat = [dispersion(_poisson_times(np.full(120, 20.0), rng), 10.0, 120.0, 36.0).measured for _ in range(200)]
    assert 0.85 <= float(np.mean(flat)) <= 1.15
    # the same mean rate, slowed or sped by 20 % for each 18-second block: a block's count (about 360) varies
    # by about 72 (the blocks the dispersion lays do not line up with the machine's: it measures about 5)
    wander = []
    for _ in range(200):
        speed = np.repeat(rng.lognormal(0, 0.2, 8), 18)[:120]
        wander.append(dispersion(_poisson_times(20.0 * speed, rng), 10.0, 120.0, 36.0).measured)
    assert float(np.mean(wander)) > 3.5 and float(np.median(wander)) > 2.5


def test_a_falling_rate_is_not_read_as_dispersion():
    """A growing index halves the rate over the run (a closed fleet: its counts are more regular than
    Poisson's): second differences leave that trend out, first differences read it as a dispersion of 2.2."""
    x = inputs_of_rows(simulate(duration_s=120.0, workers=3, seed=100), 120.0, 3)
    d = x.dispersion
    assert d.df == 4 and d.block_s == pytest.approx(110 / 3 / 2) and d.measured < 0.6 and d.phi == 1.0
    t = x.ok["t"].to_numpy()
    counts = np.histogram(t, bins=120.0 - d.block_s * np.arange(6, -1, -1))[0]
    assert counts[0] > 1.8 * counts[-1]  # the rate did fall
    assert (np.diff(counts) ** 2).sum() / 10 / counts.mean() > 2.0  # what first differences would say


def test_too_short_a_run_measures_nothing():
    assert dispersion(np.arange(0, 30, 0.1), 10.0, 30.0, 0.0) == Dispersion()
    assert dispersion(np.arange(0, 30, 0.1), 10.0, 30.0, 20.0).df == 0  # two blocks: no second difference


def test_the_anchors_draws_carry_the_dispersion():
    rng = np.random.default_rng(1)
    poisson = rate_draws(2.0, 200, 100.0, Dispersion(), 20_001, rng)
    assert poisson[0] == 2.0 and np.std(poisson[1:]) == pytest.approx(np.sqrt(200) / 100, rel=0.05)
    quasi = rate_draws(2.0, 200, 100.0, Dispersion(4.0, 1000, 10.0, 4.0), 20_001, rng)
    assert np.mean(quasi[1:]) == pytest.approx(2.0, rel=0.01)
    assert np.std(quasi[1:]) == pytest.approx(2 * np.sqrt(200) / 100, rel=0.06)  # sqrt(4) times Poisson's
    # four differences: the dispersion is itself uncertain, so the tails are heavier than its point's
    few = rate_draws(2.0, 200, 100.0, Dispersion(4.0, 4, 10.0, 4.0), 20_001, rng)
    assert np.percentile(few[1:], 99.5) - 2.0 > 1.2 * (np.percentile(quasi[1:], 99.5) - 2.0)
    # a measured dispersion below 1 keeps Poisson's band at its centre, not a narrower one
    under = rate_draws(2.0, 200, 100.0, Dispersion(1.0, 1000, 10.0, 0.3), 20_001, rng)
    assert np.std(under[1:]) == pytest.approx(np.std(poisson[1:]), rel=0.05)


def test_the_wild_draw_flips_whole_blocks_and_few_blocks_widen():
    rng = np.random.default_rng(2)
    c = np.linspace(100, 2000, 300)
    y = 0.5 * c * rng.lognormal(0, 0.1, 300)
    f = fit.fit_one(c, y, "power")
    v, r = wild(f, c, y)
    assert np.allclose(resampled(f, v, r, np.ones(300)), y)  # no flip: the rows as measured
    block = blocks_of(np.linspace(10, 120, 300), 120.0, 20.0)
    assert block.min() == 0 and block.max() == 5 and block[-1] == 0  # counted back from the run's end
    flips = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])[block]
    got = resampled(f, v, r, flips)
    assert np.allclose(np.log(got / v), flips * r)
    assert blocks_of(np.arange(5.0), 10.0, 0.0) is None
    assert few_blocks(6) == pytest.approx(2.5706 / 1.95996, rel=1e-3) and few_blocks(1) == 1.0
    assert few_blocks(1000) == pytest.approx(1.0, abs=0.01)


def test_a_pre_aged_stores_power_law_is_widened_in_logs():
    """A pre-aged store's count starts at 5,000: a power law's log a and b move together there, so the few
    blocks' widening moves them together (log a, not a): widening a itself put a draw's step time near 0 and
    the band's top at 7e10 it/s."""
    from harness.report.forecast.forecast import forecast
    from harness.report.forecast.horizon import Horizon

    x = inputs_of_rows(simulate(duration_s=120.0, workers=3, seed=3, start_entries=5000.0, per_entry_ms=0.1),
                       120.0, 3)
    fc = forecast(x, Horizon("seconds", 550.0), draws=200, seed=3)
    r = fc["rate"]
    assert fc["fits"]["step"]["shape"] == "power" and x.dispersion.df == 4
    assert r["lo"] < r["point"] < r["hi"] < 1.5 * r["point"], r
