"""Intervals the report's verdicts rest on: Poisson rates, mean ratios, rank correlation.

numpy only (no scipy): Byar's approximation to the exact (Garwood) Poisson
interval is within about 1 % of it from 0 events up, the Student-t quantile
comes from a Cornish-Fisher expansion (exact enough from 2 degrees of freedom),
and Welch's test compares means with unequal variances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # two-sided 95 %
MATERIAL = 0.15  # a change smaller than this share is not worth a verdict, however certain


def poisson_interval(k: float | np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided interval for a Poisson mean from an observed count ``k`` (Byar's approximation).

    ``k`` may be fractional (a count divided by an over-dispersion factor).
    """
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = k * np.clip(1 - 1 / (9 * k) - z / (3 * np.sqrt(k)), 0, None) ** 3
    lo = np.where(k > 0, lo, 0.0)
    k1 = k + 1
    hi = k1 * (1 - 1 / (9 * k1) + z / (3 * np.sqrt(k1))) ** 3
    return lo, hi


def rate_interval(count: float, seconds: float, dispersion: float = 1.0, z: float = Z95) -> tuple[float, float]:
    """Interval for events per second from ``count`` events in ``seconds`` (quasi-Poisson when dispersion > 1)."""
    if seconds <= 0:
        return math.nan, math.nan
    phi = max(1.0, dispersion)
    lo, hi = poisson_interval(count / phi, z)
    return float(lo) * phi / seconds, float(hi) * phi / seconds


def successes_to_tell(ratio: float, z: float = Z95, most: int = 100_000) -> int | None:
    """Successes a segment needs for a fall to ``ratio`` of its rate to be credible (the intervals apart).

    With ``k`` successes at the start and ``ratio * k`` in a segment as long, the verdict calls the fall
    only when the lower segment's interval lies wholly below the start's: x0.5 needs 50, x0.7 needs 152.
    None when no count up to ``most`` would do (a ratio at or above 1).
    """
    if not 0 <= ratio < 1:
        return None
    for k in range(1, most + 1):
        if float(poisson_interval(k * ratio, z)[1]) < float(poisson_interval(k, z)[0]):
            return k
    return None


def t_quantile(df: float, p: float = 0.975) -> float:
    """Student-t quantile (Cornish-Fisher expansion; the two smallest integer df from the table)."""
    if not math.isfinite(df) or df > 1e6:
        return _z(p)
    df = max(1.0, df)
    if p == 0.975 and df < 2.5:
        return float(np.interp(df, [1.0, 2.0, 2.5], [12.706, 4.303, 3.495]))
    z = _z(p)
    z2 = z * z
    return (z + (z2 + 1) * z / (4 * df) + ((5 * z2 + 16) * z2 + 3) * z / (96 * df ** 2)
            + (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / (384 * df ** 3)
            + ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / (92160 * df ** 4))


def _z(p: float) -> float:
    """Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9)."""
    a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00]
    b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01]
    c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00]
    d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -_z(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


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


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Interval for a proportion (Wilson score)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Rank correlation (ties averaged); 0 when either side is constant."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 3:
        return 0.0
    rx, ry = _ranks(x), _ranks(y)
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return 0.0
    return float(((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy))


def _ranks(v: np.ndarray) -> np.ndarray:
    order = np.argsort(v, kind="mergesort")
    sv = v[order]
    ranks = np.empty(len(v), dtype=float)
    # average ranks over runs of ties
    edges = np.flatnonzero(np.diff(sv)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(v)]])
    avg = (starts + ends - 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def quantile_interval(values: np.ndarray, p: float, z: float = Z95) -> tuple[float, float]:
    """A distribution-free interval on the ``p`` quantile: the order statistics at ranks n p -+ z sqrt(n p (1-p)).

    It assumes independent values; the waits of a queue are correlated (one slow sync delays the next few),
    so read it as a lower bound on the uncertainty.
    """
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n == 0:
        return math.nan, math.nan
    half = z * math.sqrt(n * p * (1 - p))
    lo, hi = int(math.floor(n * p - half)), int(math.ceil(n * p + half))
    return float(v[max(0, min(n - 1, lo))]), float(v[max(0, min(n - 1, hi))])
