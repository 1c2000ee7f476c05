"""The forecast's 95 % band against a known truth over many seeded simulated runs (issue 59: an honest band).

Each run is a 2-minute simulated closed fleet (``tests/support/forecast_calibration.py``: seeded, no wall
clock, no report), forecast at the middle of the 10-minute run's end level; the truth is the same fleet's mean
rate there over 60 long runs of other seeds. "Before" is the Poisson band (the anchor's Poisson posterior, a
bootstrap over single iterations); "after" the band with the run's dispersion (``harness/report/forecast/
band.py``). ``python bench/forecast.py --calibrate`` prints the same table with a third machine.
"""

from __future__ import annotations

import pytest

from tests.support.forecast_calibration import coverage

pytestmark = pytest.mark.bench

RUNS = range(300, 350)
TRUTH = range(3000, 3060)


def _both(case):
    kw = dict(short_s=120.0, long_s=600.0, window=(500.0, 600.0), seeds=RUNS, truth_seeds=TRUTH, draws=100)
    return coverage(case, quasi=False, **kw), coverage(case, quasi=True, **kw)


def test_a_steady_machine_keeps_its_band_nearly_as_narrow():
    """No machine noise (each iteration's own 15 %): both bands hold the truth in every run (a closed fleet's
    counts are more regular than Poisson's); the dispersion's band is at most 1.4 times as wide (9.5 -> 12 %)."""
    before, after = _both(dict(workers=3))
    assert before.share >= 0.94 and after.share >= 0.94, (before, after)
    assert after.width <= 1.4 * before.width, (before, after)


def test_a_wandering_machine_is_in_the_band():
    """Every step slowed or sped together, by 10 % for each 20-second block (the kept real runs' counts vary 2
    to 8 times Poisson's over 20 s): the Poisson band holds the truth in 38 % of runs, the band with the run's
    dispersion in 86 % at 2.4 times the width (10.5 -> 25 % of the point). Not the nominal 95 %: a 2-minute run
    holds six such blocks, and its step fit reads about 2 % low there (its iterations over-represent the fast
    blocks); both are said in docs/benchmarks.md."""
    before, after = _both(dict(workers=3, speed_sd=0.1, speed_block_s=20.0))
    assert before.share <= 0.6, before
    assert after.share >= 0.72 and after.share >= before.share + 0.25, (before, after)
    assert after.width <= 0.35, after  # not uselessly wide: +-17 % about the point
