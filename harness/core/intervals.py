"""The intervals every verdict rests on: Poisson rates, proportions, quantiles, the Student-t quantile.

Neutral ground (numpy only, no other harness layer): the report's statistics (``harness/report/stats.py`` re-exports
these) and the live gates inside a Locust process (``harness/gates``) judge with the same functions, so a
threshold reads the same live and afterwards.

Byar's approximation to the exact (Garwood) Poisson interval is within 0.02 events and 1 % of it from 0 events
up, the Student-t quantile comes from a Cornish-Fisher expansion (exact enough from 2 degrees of freedom). These
stay numpy on purpose: they run inside a Locust process, where importing scipy would cost the live path about
0.3 s (scipy.special) to 1.4 s (scipy.stats) on a quiet machine. The report's own statistics
(``harness/report/stats.py``) are scipy's exact ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Z95 = 1.959963984540054  # two-sided 95 %


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


def rate_interval(count: float, seconds: float, dispersion: float = 1.0, z: float = Z95,
                  poisson: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[float, float]:
    """Interval for events per second from ``count`` events in ``seconds`` (quasi-Poisson when dispersion > 1).
    ``poisson``: the count's interval (Byar's here, light enough for the live path; the report passes scipy's
    exact one, ``harness.report.stats.poisson_interval``)."""
    if seconds <= 0:
        return math.nan, math.nan
    phi = max(1.0, dispersion)
    lo, hi = (poisson or poisson_interval)(count / phi, z)
    return float(lo) * phi / seconds, float(hi) * phi / seconds


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


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Interval for a proportion (Wilson score)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


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
