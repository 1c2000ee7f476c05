"""One curve through measured points, linear or a power law, chosen by the data; numbers only (no plots).

Two shapes cover what grows in a sync layer: a step whose time rises by a fixed amount per entry it reads
(``y = a + b x``, linear) and one whose cost rises faster or slower than its count (``y = a x^p``, a power
law, fitted as a line in log-log). The two are compared by AIC on the same (original) scale: the log model's
likelihood is corrected by the Jacobian of the log (``sum(log y)``), so the choice is the one a statistician
would make, not the one with the prettier R². The fit is ordinary least squares (in closed form: the
bootstrap refits it hundreds of times; statsmodels would do the same fit at 3 s of import per report).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

SHAPES = ("linear", "power")
MIN_POINTS = 8


@dataclass(frozen=True)
class Fit:
    """``y = a + b x`` (linear) or ``y = a x^b`` (power); x's measured range; AIC on y's own scale."""

    shape: str
    a: float
    b: float
    x_lo: float
    x_hi: float
    n: int
    aic: float
    r2: float
    sigma: float  # residual standard deviation (y's units for linear, log units for power)

    def __call__(self, x: np.ndarray | float) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if self.shape == "linear":
            return self.a + self.b * x
        return self.a * np.power(np.clip(x, 1e-9, None), self.b)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["formula"] = (f"y = {self.a:.4g} + {self.b:.4g} x" if self.shape == "linear"
                        else f"y = {self.a:.4g} x^{self.b:.3g}")
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


def fit_one(x: np.ndarray, y: np.ndarray, shape: str) -> Fit | None:
    """One shape through the points; None when there are too few points, or x does not vary."""
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
    """The shape the data favour (lowest AIC on y's scale); None when no shape can be fitted."""
    fits = [f for f in (fit_one(x, y, s) for s in shapes) if f is not None]
    return min(fits, key=lambda f: f.aic) if fits else None


def refit(x: np.ndarray, y: np.ndarray, shape: str) -> tuple[float, float] | None:
    """The same shape through resampled points, only its two parameters (the bootstrap's inner loop)."""
    if shape == "linear":
        if np.ptp(x) <= 0:
            return None
        a, b, _ = _ols(x, y)
        return a, b
    keep = (x > 0) & (y > 0)
    if keep.sum() < 3 or np.ptp(x[keep]) <= 0:
        return None
    la, b, _ = _ols(np.log(x[keep]), np.log(y[keep]))
    return math.exp(la), b


def evaluate(shape: str, a: np.ndarray | float, b: np.ndarray | float, x: np.ndarray | float) -> np.ndarray:
    """A shape's value at x for arrays of parameters (one per bootstrap draw)."""
    x = np.asarray(x, dtype=float)
    if shape == "linear":
        return np.asarray(a) + np.asarray(b) * x
    return np.asarray(a) * np.power(np.clip(x, 1e-9, None), np.asarray(b))


def slope_interval(x: np.ndarray, y: np.ndarray, fit: Fit) -> dict[str, Any]:
    """The chosen fit's slope (the exponent of a power law) with its 95 % interval, on the scale it was fitted."""
    from harness.report.stats import t_quantile

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if fit.shape == "power":
        keep &= (x > 0) & (y > 0)
        x, y = np.log(x[keep]), np.log(y[keep])
    else:
        x, y = x[keep], y[keep]
    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum())
    a, b, rss = _ols(x, y)
    se = math.sqrt(rss / max(n - 2, 1) / sxx) if sxx > 0 else math.inf
    t = t_quantile(max(n - 2, 1))
    return {"slope_interval": [b - t * se, b + t * se]}
