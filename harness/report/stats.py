"""Intervals the report's verdicts rest on: Poisson rates, mean ratios, rank correlation (the proportions and
quantiles from ``harness.core.intervals``, which the live gates share).

From scipy, where it does the same job exactly: the exact (Garwood) Poisson interval from the gamma
distribution's inverse (``scipy.special.gammaincinv``; Byar's approximation, which the live path keeps in
``harness.core.intervals``, is within about 1 % of it), the Student-t quantile (``scipy.special.stdtrit``; the
live path's Cornish-Fisher expansion agrees to 3 digits from 2 degrees of freedom). scipy is imported inside
the functions, when a report first needs it: a Locust process never imports this module, and a command that
only lists runs never pays for it. Spearman's rank correlation is pandas' (``DataFrame.corr(method="spearman")``:
ranks with ties averaged, then Pearson's, in Cython), the same as ``scipy.stats.spearmanr`` to 1e-15: importing
``scipy.stats`` cost a third of a short run's report (4.13 -> 2.83 CPU-s, ``bench/report_bench.py --short``).
Welch's test compares means with unequal variances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.core import intervals
from harness.core.intervals import Z95


def poisson_interval(k: float | np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (Garwood) interval for a Poisson mean from an observed count ``k``.

    ``k`` may be fractional (a count divided by an over-dispersion factor): the gamma quantiles take it as is.
    """
    from scipy.special import gammaincinv, ndtr

    k = np.asarray(k, dtype=float)
    a = 1 - float(ndtr(z))  # each tail's share (0.025 at z = 1.96)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, gammaincinv(np.where(k > 0, k, 1.0), a), 0.0)
    hi = gammaincinv(k + 1, 1 - a)
    return lo, hi


def rate_interval(count: float, seconds: float, dispersion: float = 1.0, z: float = Z95) -> tuple[float, float]:
    """Interval for events per second from ``count`` events in ``seconds``: the gates' rule with the exact
    Poisson interval above."""
    return intervals.rate_interval(count, seconds, dispersion, z, poisson=poisson_interval)


def t_quantile(df: float, p: float = 0.975) -> float:
    """Student-t quantile (scipy's ``stdtrit``); the normal's past a million degrees of freedom."""
    from scipy.special import ndtri, stdtrit

    if not math.isfinite(df) or df > 1e6:
        return float(ndtri(p))
    return float(stdtrit(max(1.0, df), p))


MATERIAL = 0.15  # a change smaller than this share is not worth a verdict, however certain


def successes_to_tell(ratio: float, z: float = Z95, most: int = 100_000) -> int | None:
    """Successes a segment needs for a fall to ``ratio`` of its rate to be credible (the intervals apart).

    With ``k`` successes at the start and ``ratio * k`` in a segment as long, the verdict calls the fall
    only when the lower segment's interval lies wholly below the start's: x0.5 needs 50, x0.7 needs 151.
    None when no count up to ``most`` would do (a ratio at or above 1).
    """
    if not 0 <= ratio < 1:
        return None
    for k in range(1, most + 1):
        if float(poisson_interval(k * ratio, z)[1]) < float(poisson_interval(k, z)[0]):
            return k
    return None


@dataclass(frozen=True)
class Change:
    """Late against early: means, their ratio with an interval, and whether the data support a rise."""

    early: float
    late: float
    n_early: int
    n_late: int
    ratio: float | None  # late / early; None when early is 0
    lo: float | None  # interval on the ratio
    hi: float | None
    diff_lo: float  # interval on late - early (log units with ``log``)
    diff_hi: float
    material: float
    min_abs: float

    @property
    def credibly_up(self) -> bool:
        return self.diff_lo > 0

    @property
    def credibly_down(self) -> bool:
        return self.diff_hi < 0

    @property
    def material_up(self) -> bool:
        return self.late - self.early >= self.min_abs and (self.ratio is None and self.late > 0
                                                            or self.ratio is not None
                                                            and self.ratio >= 1 + self.material)

    @property
    def material_down(self) -> bool:
        return (self.early - self.late >= self.min_abs and self.ratio is not None
                and self.ratio <= 1 / (1 + self.material))

    @property
    def grew(self) -> bool:
        """Credibly up (the whole interval above 1), by a material amount."""
        return self.credibly_up and self.material_up

    @property
    def fell(self) -> bool:
        return self.credibly_down and self.material_down


def mean_change(early: np.ndarray, late: np.ndarray, log: bool = False, material: float = 0.2,
                min_abs: float = 0.0, p: float = 0.975) -> Change | None:
    """Welch comparison of two samples' means (or geometric means with ``log``), as a ratio with an interval.

    ``grew`` needs the whole interval above 1 (equivalently the difference
    above 0), the ratio at least 1 + ``material`` and the rise at least
    ``min_abs``; ``fell`` is the mirror. None when either side has fewer than
    two values.
    """
    a = np.asarray(early, dtype=float)
    b = np.asarray(late, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return None
    if log:
        a, b = np.log(np.clip(a, 1e-3, None)), np.log(np.clip(b, 1e-3, None))
    ma, mb = float(a.mean()), float(b.mean())
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else math.inf
    t = t_quantile(df, p)
    d_lo, d_hi = mb - ma - t * se, mb - ma + t * se
    if log:
        return Change(math.exp(ma), math.exp(mb), len(a), len(b), math.exp(mb - ma), math.exp(d_lo),
                      math.exp(d_hi), d_lo, d_hi, material, min_abs)
    if ma > 0:
        ratio = mb / ma
        if mb > 0:  # delta method on the log of the ratio
            s = math.sqrt(va / ma ** 2 + vb / mb ** 2)
            lo, hi = ratio * math.exp(-t * s), ratio * math.exp(t * s)
        else:
            lo, hi = 0.0, ratio + t * math.sqrt(vb) / ma
    else:
        ratio = lo = hi = None
    return Change(ma, mb, len(a), len(b), ratio, lo, hi, d_lo, d_hi, material, min_abs)


def rank_trend(t: np.ndarray, y: np.ndarray, p: float = 0.995) -> tuple[float, int, bool, bool]:
    """Rank correlation of values with time (or any x): (rho, n, credibly rising, credibly falling).

    One-sided at ``1 - p``. Over every value in a stretch rather than two ends
    of it, it sees a trend in a short, noisy run that two small groups cannot.
    """
    n = len(y)
    if n < 6:
        return 0.0, n, False, False
    rho = spearman(t, y)
    if abs(rho) >= 1:
        return rho, n, rho > 0, rho < 0
    stat = rho * math.sqrt((n - 2) / (1 - rho * rho))
    q = t_quantile(n - 2, p)
    return rho, n, stat > q, stat < -q


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Rank correlation (ties averaged, as scipy's ``spearmanr``: pandas' own, see the module); 0 when either
    side is constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    import pandas as pd

    return float(pd.DataFrame({"x": x, "y": y}).corr(method="spearman").iloc[0, 1])
