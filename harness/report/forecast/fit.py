"""One curve through measured points, linear or a power law, chosen by the data; numbers only (no plots).

Two shapes cover what grows in a sync layer: a step whose time rises by a fixed amount per entry it reads
(``y = a + b x``, linear) and one whose cost rises faster or slower than its count (``y = a x^p``, a power
law, fitted as a line in log-log). The two are compared by AIC on the same (original) scale: the log model's
likelihood is corrected by the Jacobian of the log (``sum(log y)``), so the choice is the one a statistician
would make, not the one with the prettier R². The fit is ordinary least squares (in closed form: the
bootstrap refits it hundreds of times; statsmodels would do the same fit at 3 s of import per report).

A count's growth against iterations has a third shape, the knee (``y = a + b x`` up to ``x = k``, then
``b2`` an iteration, ``0 <= b2 < b``): a count whose increment per iteration falls to a floor once the first
pass is over (a worker's commit adds 5 index entries while it still meets models it has not run, 3 once it has
run them all; a pruned catalog's floor is 0). Whether the increment falls is asked of the increments
themselves (``choose_count``): a cumulative count's residuals about any line are a random walk, on which a
least-squares knee finds a falling bend by AIC in a third of straight Poisson counts (66 of 200, 3 workers x
100 iterations); its increments' noise is independent, and one level against two (the second lower) is a
change in mean, chosen by BIC. The knee's line through the levels is then a continuous hinge regression at
that place, and it must also beat the levels' own pick (linear or power) by AIC.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

SHAPES = ("linear", "power")
MIN_POINTS = 8
KNEE_GRID = 40  # candidate knees, spread over the x values between
KNEE_MARGIN = 0.1  # ... the first and last tenth of the points (each side keeps points to fit its slope)
KNEE_NEAR = 2  # a bootstrap draw searches this many grid candidates either side of the point fit's knee
KNEE_FINE = 8  # ... and this many of its own x values between the point's grid neighbours


@dataclass(frozen=True)
class Fit:
    """``y = a + b x`` (linear), ``y = a x^b`` (power), or ``y = a + b x`` to ``x = k`` then ``b2`` per x past it
    (knee); x's measured range; AIC on y's own scale."""

    shape: str
    a: float
    b: float
    x_lo: float
    x_hi: float
    n: int
    aic: float
    r2: float
    sigma: float  # residual standard deviation (y's units for linear, log units for power)
    k: float = math.nan  # the knee's x (knee only)
    b2: float = math.nan  # the slope past the knee (knee only)

    @property
    def params(self) -> tuple[float, float, float, float]:
        """(a, b, k, b2): what ``evaluate`` reads, the same four for every shape."""
        return self.a, self.b, self.k, self.b2

    def __call__(self, x: np.ndarray | float) -> np.ndarray:
        return evaluate(self.shape, self.params, x)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.shape != "knee":
            d.pop("k"), d.pop("b2")
        d["formula"] = (f"y = {self.a:.4g} + {self.b:.4g} x" if self.shape == "linear"
                        else f"y = {self.a:.4g} x^{self.b:.3g}" if self.shape == "power"
                        else f"y = {self.a:.4g} + {self.b:.4g} x to x = {self.k:.4g}, then {self.b2:.4g} per x")
        return d


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Intercept, slope and residual sum of squares of y on x (closed form: the bootstrap's hundreds of refits)."""
    mx, my = float(x.mean()), float(y.mean())
    dx, dy = x - mx, y - my
    sxx = float((dx * dx).sum())  # elementwise, not BLAS: its threads fight over a busy machine's cores
    b = float((dx * dy).sum()) / sxx if sxx > 0 else 0.0
    a = my - b * mx
    r = dy - b * dx
    return a, b, float((r * r).sum())


def _aic(rss: float, n: int, k: int = 3) -> float:
    """Gaussian AIC from a residual sum of squares (k: intercept, slope, variance)."""
    return n * math.log(max(rss, 1e-300) / n) + 2 * k


def knee_candidates(x: np.ndarray) -> np.ndarray:
    """The knees tried: distinct x values between the first and last tenth of the points (so each side has
    points to fit its slope), at most ``KNEE_GRID`` of them."""
    lo, hi = np.quantile(x, [KNEE_MARGIN, 1 - KNEE_MARGIN])
    ux = np.unique(x[(x >= lo) & (x <= hi)])
    return _spread(ux, KNEE_GRID) if len(ux) >= 3 else ux[:0]


def _spread(v: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of the sorted values ``v``, evenly spread over them (both ends kept)."""
    return v[np.unique(np.linspace(0, len(v) - 1, min(most, len(v))).round().astype(int))] if len(v) else v


def _knee(x: np.ndarray, y: np.ndarray, ks: np.ndarray) -> tuple[float, float, float, float, float] | None:
    """The least-squares knee among ``ks``: (a, b, k, b2, rss) with ``0 <= b2 < b`` (its increment falls to a
    floor, not below 0), or None when no candidate saturates. Each candidate is the regression of y on
    ``min(x, k)`` and ``max(x - k, 0)``, solved for all candidates at once (a 3x3 system each)."""
    if not len(ks):
        return None
    m = np.minimum(x[:, None], ks[None, :])
    h = x[:, None] - m  # max(x - k, 0)
    n = float(len(x))
    sm, sh, smm, shh, smh = m.sum(0), h.sum(0), (m * m).sum(0), (h * h).sum(0), (m * h).sum(0)
    sy, smy, shy, syy = float(y.sum()), (m * y[:, None]).sum(0), (h * y[:, None]).sum(0), float((y * y).sum())
    xtx = np.stack([np.stack([np.full_like(sm, n), sm, sh], -1), np.stack([sm, smm, smh], -1),
                    np.stack([sh, smh, shh], -1)], -2)
    xty = np.stack([np.full_like(sm, sy), smy, shy], -1)
    ok = np.abs(np.linalg.det(xtx)) > 1e-9 * np.maximum(smm * shh, 1e-300) * n
    coef = np.full((len(ks), 3), np.nan)
    if ok.any():
        coef[ok] = np.linalg.solve(xtx[ok], xty[ok][..., None])[..., 0]
    rss = syy - (coef * xty).sum(-1)
    # a second slope below 0: the floor is 0 (the count stops), refit on min(x, k) alone
    neg = ~np.isfinite(coef[:, 2]) | (coef[:, 2] < 0)
    vm = smm - sm * sm / n
    b0 = np.where(vm > 0, (smy - sm * sy / n) / np.where(vm > 0, vm, 1.0), 0.0)
    a0 = (sy - b0 * sm) / n
    rss0 = syy - a0 * sy - b0 * smy
    coef[neg] = np.stack([a0, b0, np.zeros_like(b0)], -1)[neg]
    rss[neg] = rss0[neg]
    good = (coef[:, 1] > coef[:, 2]) & np.isfinite(rss)
    if not good.any():
        return None
    j = int(np.flatnonzero(good)[np.argmin(rss[good])])
    a, b, b2 = (float(v) for v in coef[j])
    return a, b, float(ks[j]), b2, max(float(rss[j]), 0.0)


def fit_one(x: np.ndarray, y: np.ndarray, shape: str) -> Fit | None:
    """One shape (linear or power) through the points; None when there are too few points, or x does not vary.
    A knee is a count's only: ``choose_count``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if shape == "power":
        keep &= (x > 0) & (y > 0)
    x, y = x[keep], y[keep]
    n = len(x)
    if n < MIN_POINTS or np.ptp(x) <= 0:
        return None
    tss = float(((y - y.mean()) ** 2).sum())
    if shape == "linear":
        a, b, rss = _ols(x, y)
        return Fit("linear", a, b, float(x.min()), float(x.max()), n, _aic(rss, n),
                   1 - rss / tss if tss > 0 else 0.0, math.sqrt(rss / max(n - 2, 1)))
    lx, ly = np.log(x), np.log(y)
    la, b, rss_log = _ols(lx, ly)
    aic = _aic(rss_log, n) + 2 * float(ly.sum())  # the Jacobian of log y: the AIC on y's own scale
    pred = math.exp(la) * np.power(x, b)
    rss = float(((y - pred) ** 2).sum())
    return Fit("power", math.exp(la), b, float(x.min()), float(x.max()), n, aic,
               1 - rss / tss if tss > 0 else 0.0, math.sqrt(rss_log / max(n - 2, 1)))


def choose(x: np.ndarray, y: np.ndarray, shapes: tuple[str, ...] = SHAPES) -> Fit | None:
    """The shape the data favour (lowest AIC on y's scale); None when no shape can be fitted. On a tie (a
    count with no noise at all) the simpler shape, listed first, stays."""
    fits = [f for f in (fit_one(x, y, s) for s in shapes) if f is not None]
    return min(fits, key=lambda f: f.aic) if fits else None


def increments(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A count's increments per unit of x, each at its midpoint, within each group (a worker's namespace):
    where a cumulative count's noise is independent (its levels' residuals are a random walk)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    g = np.zeros(len(x)) if groups is None else pd.factorize(np.asarray(groups))[0]
    keep = np.isfinite(x) & np.isfinite(y)
    x, y, g = x[keep], y[keep], g[keep]
    order = np.lexsort((x, g))
    x, y, g = x[order], y[order], g[order]
    dx = np.diff(x)
    ok = (np.diff(g) == 0) & (dx > 0)
    return ((x[1:] + x[:-1]) / 2)[ok], (np.diff(y)[ok] / dx[ok])


def knee_of_increments(mid: np.ndarray, d: np.ndarray, ks: np.ndarray) -> float | None:
    """Where a count's increment falls to a lower level (its floor), if the increments say it does: one
    constant increment (linear growth) against a mean before ``k`` and a lower one after, by BIC (the knee's
    place is searched over the candidates, so the stricter penalty keeps a straight count's noise from
    finding one). None: the increment stays one level."""
    n = len(d)
    if n < MIN_POINTS or not len(ks):
        return None
    before = mid[:, None] < ks[None, :]
    n1 = before.sum(0)
    n2 = n - n1
    s1 = (before * d[:, None]).sum(0)
    q1 = (before * (d * d)[:, None]).sum(0)
    s, q = float(d.sum()), float((d * d).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        m1, m2 = s1 / n1, (s - s1) / n2
        rss = (q1 - s1 * s1 / n1) + ((q - q1) - (s - s1) ** 2 / n2)
    good = (n1 >= 3) & (n2 >= 3) & (m2 < m1) & np.isfinite(rss)
    if not good.any():
        return None
    j = int(np.flatnonzero(good)[np.argmin(rss[good])])
    rss0 = q - s * s / n
    bic = lambda r, k: n * math.log(max(r, 1e-300) / n) + k * math.log(n)  # noqa: E731
    return float(ks[j]) if bic(float(rss[j]), 4) < bic(rss0, 2) else None


def choose_count(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> Fit | None:
    """A count's growth against iterations, asked first of its increments (independent noise, unlike its
    levels'): linear when they hold one level; when they credibly trend (Spearman), linear or a power law as
    ``choose`` picks them through the levels; a knee when they fall to a floor (``knee_of_increments``) and the
    knee then fits the levels better (lower AIC) than that pick. The knee's place is the increments'; its line
    through the levels is refitted there."""
    from harness.report.stats import rank_trend

    mid, d = increments(x, y, groups)
    _, _, up, down = rank_trend(mid, d)
    # a power law only when the increments credibly trend: a straight count's random-walk levels can favour one
    base = choose(x, y) if up or down else fit_one(x, y, "linear")
    if base is None:
        return None
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    ks = knee_candidates(x[keep])
    k = knee_of_increments(mid, d, ks)
    if k is None:
        return base
    j = int(np.searchsorted(ks, k))  # the levels' knee searched between the grid's neighbours of the increments'
    lo, hi = ks[max(j - 1, 0)], ks[min(j + 1, len(ks) - 1)]
    got = _knee(x[keep], y[keep], _spread(np.unique(x[keep][(x[keep] >= lo) & (x[keep] <= hi)]), KNEE_GRID))
    if got is None:
        return base
    a, b, kk, b2, rss = got
    n = int(keep.sum())
    tss = float(((y[keep] - y[keep].mean()) ** 2).sum())
    knee = Fit("knee", a, b, float(x[keep].min()), float(x[keep].max()), n, _aic(rss, n, k=5),
               1 - rss / tss if tss > 0 else 0.0, math.sqrt(rss / max(n - 4, 1)), kk, b2)
    return knee if knee.aic < base.aic else base


Params = tuple[float, float, float, float]


def refit(x: np.ndarray, y: np.ndarray, fit: Fit) -> Params | None:
    """The same shape through resampled points, only its parameters (the bootstrap's inner loop); a knee is
    searched again (its place is uncertain too) among the candidates nearest the point fit's: the bootstrap's
    hundreds of refits stay cheap on a large run."""
    if fit.shape == "linear":
        if np.ptp(x) <= 0:
            return None
        a, b, _ = _ols(x, y)
        return a, b, math.nan, math.nan
    if fit.shape == "knee":
        ks = knee_candidates(x)
        j = int(np.searchsorted(ks, fit.k))
        near = ks[max(j - KNEE_NEAR, 0):j + KNEE_NEAR + 1]
        lo, hi = ks[max(j - 1, 0)], ks[min(j, len(ks) - 1)]  # and the resample's own x values around the point's
        fine = _spread(np.unique(x[(x >= lo) & (x <= hi)]), KNEE_FINE)
        got = _knee(x, y, np.unique(np.concatenate([near, fine])))
        return None if got is None else got[:4]
    keep = (x > 0) & (y > 0)
    if keep.sum() < 3 or np.ptp(x[keep]) <= 0:
        return None
    la, b, _ = _ols(np.log(x[keep]), np.log(y[keep]))
    return math.exp(la), b, math.nan, math.nan


def evaluate(shape: str, params: Params | tuple[np.ndarray, ...], x: np.ndarray | float) -> np.ndarray:
    """A shape's value at x, for one set of ``(a, b, k, b2)`` or arrays of them (one per bootstrap draw)."""
    x = np.asarray(x, dtype=float)
    a, b, k, b2 = (np.asarray(p, dtype=float) for p in params)
    if shape == "linear":
        return a + b * x
    if shape == "knee":
        m = np.minimum(x, k)
        return a + b * m + b2 * (x - m)
    return a * np.power(np.clip(x, 1e-9, None), b)


def slope_interval(x: np.ndarray, y: np.ndarray, fit: Fit) -> dict[str, Any]:
    """The chosen fit's slope (the exponent of a power law; a knee's slope past its knee, the one a forecast
    extrapolates, from the points past it) with its 95 % interval, on the scale it was fitted."""
    from harness.report.stats import t_quantile

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if fit.shape == "power":
        keep &= (x > 0) & (y > 0)
        x, y = np.log(x[keep]), np.log(y[keep])
    elif fit.shape == "knee":
        keep &= x >= fit.k
        x, y = x[keep], y[keep]
    else:
        x, y = x[keep], y[keep]
    n = len(x)
    if n < 3:
        return {"slope_interval": [-math.inf, math.inf]}
    sxx = float(((x - x.mean()) ** 2).sum())
    a, b, rss = _ols(x, y)
    se = math.sqrt(rss / max(n - 2, 1) / sxx) if sxx > 0 else math.inf
    t = t_quantile(max(n - 2, 1))
    return {"slope_interval": [b - t * se, b + t * se]}
