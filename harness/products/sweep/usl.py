"""The Universal Scalability Law fitted to a sweep: X(N) = λN / (1 + σ(N-1) + κN(N-1)).

σ (contention) is the share of an iteration that is serialized (one holder of a lock
at a time): it alone gives Amdahl's ceiling λ/σ. κ (coherency) is the cost each pair of
workers adds (every worker reading what every other wrote): it makes the curve turn
down, past its peak N* = sqrt((1-σ)/κ). λ is one worker's rate.

Pure functions: λ is linear once σ and κ are fixed, so it is profiled out in closed
form; (σ, κ) start from the best point of a coarse grid (κ on a log scale, and 0)
and are refined by scipy's bounded least squares (``scipy.optimize.least_squares``,
trust-region reflective; σ in [0, SIGMA_MAX], κ in [0, KAPPA_MAX]), which replaced
a grid search zoomed in four times. The fit is
weighted least squares, each size weighted by the inverse variance of its mean
rate (from its segments). Intervals: a bootstrap that resamples each size's
segments (their spread scaled up for a small sample, so a few segments do not
understate it) and refits, 2.5th-97.5th percentiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.report.stats import Z95, t_quantile

SIGMA_MAX = 4.0  # a retrograde fleet fits σ past 1 (two workers do less than one: worse than serial)
KAPPA_MIN, KAPPA_MAX = 1e-7, 10.0  # a fleet that falls from its second worker fits κ near 1
GRID = 31
BOOTSTRAP = 200
REACH = 2.0  # a fitted peak within this many times the largest size measured is said as a peak
MIN_REL_SE = 0.01  # a size's mean rate is never weighted as if known better than 1 %


@dataclass(frozen=True)
class Size:
    """One fleet size's measurements: its segments' rates (iterations per second), pooled over trials."""

    workers: int
    rates: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.rates)) if self.rates else float("nan")


def usl(n: np.ndarray | float, lam: float, sigma: float, kappa: float) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def _weights(n: np.ndarray, means: np.ndarray, sizes: list[Size]) -> np.ndarray:
    se = []
    for s, m in zip(sizes, means, strict=True):
        k = len(s.rates)
        sd = float(np.std(s.rates, ddof=1)) if k > 1 else 0.0
        se.append(max(sd / math.sqrt(k), MIN_REL_SE * abs(m), 1e-9))
    return 1 / np.square(se)


def _profile(n: np.ndarray, x: np.ndarray, w: np.ndarray, sig: np.ndarray, kap: np.ndarray) -> tuple:
    """For each (σ, κ) on a grid: λ in closed form and the weighted sum of squares."""
    d = 1 + sig[..., None] * (n - 1) + kap[..., None] * n * (n - 1)
    g = n / d
    lam = (w * x * g).sum(-1) / (w * g * g).sum(-1)
    sse = (w * (x - lam[..., None] * g) ** 2).sum(-1)
    return lam, sse


def fit_points(n: np.ndarray, x: np.ndarray, w: np.ndarray, fit_kappa: bool = True) -> tuple[float, float, float]:
    """(λ, σ, κ) minimising the weighted squares, σ in [0, SIGMA_MAX], κ in {0} ∪ [KAPPA_MIN, KAPPA_MAX] (0
    without ``fit_kappa``): the coarse grid's best point, refined by scipy's bounded least squares."""
    from scipy.optimize import least_squares

    s_axis = np.linspace(0.0, SIGMA_MAX, GRID)
    k_axis = np.concatenate([[0.0], 10 ** np.linspace(math.log10(KAPPA_MIN), math.log10(KAPPA_MAX), GRID)]) \
        if fit_kappa else np.array([0.0])
    sig, kap = np.meshgrid(s_axis, k_axis, indexing="ij")
    _, sse = _profile(n, x, w, sig, kap)
    i = np.unravel_index(int(np.nanargmin(sse)), sse.shape)
    sw = np.sqrt(w)

    def residuals(p: np.ndarray) -> np.ndarray:
        lam, _ = _profile(n, x, w, np.array(p[0]), np.array(p[1] if fit_kappa else 0.0))
        g = n / (1 + p[0] * (n - 1) + (p[1] if fit_kappa else 0.0) * n * (n - 1))
        return sw * (x - float(lam) * g)

    start = [float(sig[i]), float(kap[i])] if fit_kappa else [float(sig[i])]
    hi = [SIGMA_MAX, KAPPA_MAX] if fit_kappa else [SIGMA_MAX]
    res = least_squares(residuals, start, bounds=([0.0] * len(start), hi), method="trf", x_scale="jac")
    best = res.x if 2 * res.cost <= float(sse[i]) else np.array(start)
    sigma, kappa = float(best[0]), float(best[1]) if fit_kappa else 0.0
    if fit_kappa and kappa < KAPPA_MIN:  # at the bound: κ is 0 (the grid's own resolution), σ refitted alone
        return fit_points(n, x, w, fit_kappa=False)
    lam, _ = _profile(n, x, w, np.array(sigma), np.array(kappa))
    return float(lam), sigma, kappa


def peak(sigma: float, kappa: float) -> float | None:
    """N* = sqrt((1-σ)/κ): where more workers start lowering the rate (None: no peak, κ = 0)."""
    if kappa <= 0:
        return None
    return math.sqrt(max(1 - sigma, 0.0) / kappa) if sigma < 1 else 1.0


def _pctl(v: np.ndarray) -> list[float | None]:
    """A 95 % percentile interval; an end that is infinite (no peak in that share of resamples) is None."""
    v = np.where(np.isfinite(v), v, np.finfo(float).max)
    lo, hi = np.percentile(v, [2.5, 97.5], method="nearest")
    lo, hi = (float("inf") if x >= np.finfo(float).max else x for x in (lo, hi))
    return [float(lo) if math.isfinite(lo) else None, float(hi) if math.isfinite(hi) else None]


def _small_sample(k: int) -> float:
    """How much a resample of ``k`` segments understates the spread of their mean: sqrt(k / (k-1)) for the
    divisor, and t(k-1) / z for a spread estimated from ``k`` values (few segments: wider intervals)."""
    return math.sqrt(k / (k - 1)) * t_quantile(k - 1) / Z95


def fit(sizes: list[Size], bootstrap: int = BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """The fit and its intervals (``sweep.json``'s ``fit``); with fewer than three sizes κ is taken as 0."""
    sizes = sorted([s for s in sizes if s.rates], key=lambda s: s.workers)
    if len(sizes) < 2:
        return {"sigma": None, "kappa": None, "lambda": None, "peak_workers": None, "peak_rate": None,
                "amdahl_ceiling": None, "kappa_zero": None, "intervals": {}, "sizes_fitted": len(sizes),
                "note": "a fit needs at least two fleet sizes with successful iterations"}
    n = np.array([s.workers for s in sizes], dtype=float)
    x = np.array([s.mean for s in sizes])
    w = _weights(n, x, sizes)
    fit_kappa = len(sizes) >= 3
    lam, sig, kap = fit_points(n, x, w, fit_kappa)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(bootstrap):
        xb = np.empty_like(x)
        for i, s in enumerate(sizes):
            r = np.asarray(s.rates)
            k = len(r)
            if k < 2:
                xb[i] = r[0]
                continue
            pick = r[rng.integers(0, k, k)]
            xb[i] = r.mean() + (pick.mean() - r.mean()) * _small_sample(k)
        boots.append(fit_points(n, xb, w, fit_kappa))
    b = np.array(boots)
    bl, bs, bk = b[:, 0], b[:, 1], b[:, 2]
    peaks = np.array([peak(s, k) or np.inf for s, k in zip(bs, bk, strict=True)])
    peak_rates = np.array([usl(p, lam_, s, k) if math.isfinite(p) else lam_ / s if s > 0 else np.inf
                           for p, lam_, s, k in zip(peaks, bl, bs, bk, strict=True)])
    n_star = peak(sig, kap)
    kappa_iv = _pctl(bk)
    kappa_zero = (not fit_kappa) or float(np.mean(bk <= 0)) >= 0.025
    amdahl = lam / sig if sig > 0 else None
    amdahl_iv = _pctl(np.where(bs > 0, bl / np.where(bs > 0, bs, 1), np.inf))
    return {
        "lambda": lam, "sigma": sig, "kappa": kap,
        "peak_workers": n_star, "peak_rate": float(usl(n_star, lam, sig, kap)) if n_star else None,
        "amdahl_ceiling": amdahl, "kappa_zero": bool(kappa_zero), "kappa_fitted": fit_kappa,
        "intervals": {"lambda": _pctl(bl), "sigma": _pctl(bs), "kappa": kappa_iv, "peak_workers": _pctl(peaks),
                      "peak_rate": _pctl(peak_rates), "amdahl_ceiling": amdahl_iv},
        "sizes_fitted": len(sizes), "bootstrap": bootstrap, "max_workers": int(n.max()),
        "note": None if fit_kappa else "two fleet sizes fit σ and λ only: κ is taken as 0 (give three or more)",
    }


def curve(f: dict[str, Any], n_max: float, points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """The fitted curve from 1 to ``n_max`` workers, for the sweep's figure."""
    n = np.linspace(1, max(n_max, 1.0), points)
    if f.get("sigma") is None:
        return n, np.full_like(n, np.nan)
    return n, usl(n, f["lambda"], f["sigma"], f["kappa"])


def _g(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _range(iv: list[float | None] | None, unit: str = "") -> str:
    if not iv:
        return ""
    lo, hi = iv
    return f" [{_g(lo)}-{'unbounded' if hi is None else _g(hi)}{unit}]"


def _workers_range(iv: list[float | None] | None) -> str:
    if not iv or iv[0] is None:
        return "n/a"
    lo = max(1, math.floor(iv[0]))
    if iv[1] is None:
        return f"{lo} or more"
    hi = max(lo, math.ceil(iv[1]))
    return f"{lo}" if hi == lo else f"{lo}-{hi}"


def words(f: dict[str, Any]) -> list[str]:
    """What σ, κ and the peak mean for this fleet, in sentences a user acts on."""
    if f.get("sigma") is None:
        return [f.get("note") or "no fit"]
    iv = f["intervals"]
    s, k = f["sigma"], f["kappa"]
    if s >= 1:
        out = [f"σ {s:.2f}{_range(iv['sigma'])}: worse than serial: contention serializes all of an iteration and "
               "every worker added lowers the rate (its waits and retries on what one worker at a time can do, "
               "such as a shared lock, cost more than its work adds)."]
    else:
        out = [f"σ {s:.2f}{_range(iv['sigma'])}: contention serializes {s * 100:.0f} % of an iteration (the part "
               "one worker at a time can do, such as holding a shared lock)."]
    # a peak past twice the largest size measured is an extrapolation: said as levelling off, not as a peak
    has_peak = bool(f.get("peak_workers")) and k > 0 and f["peak_workers"] <= REACH * f.get("max_workers", 0)
    if f["kappa_zero"] and not has_peak:
        head = (f"κ {k:.2g}{_range(iv['kappa'])} is indistinguishable from 0: no coherency cost is seen, so the rate "
                "levels off rather than falls")
        if f.get("amdahl_ceiling") and s < 1:
            head += (f"; Amdahl's ceiling λ/σ = {_g(f['amdahl_ceiling'])}{_range(iv['amdahl_ceiling'])} iterations/s, "
                     "which no fleet size passes")
        out.append(head + ".")
    elif f["kappa_zero"]:
        amdahl = (f", at Amdahl's ceiling λ/σ = {_g(f['amdahl_ceiling'])}{_range(iv['amdahl_ceiling'])} "
                  "iterations/s" if f.get("amdahl_ceiling") and s < 1 else "")
        out.append(f"κ {k:.2g}{_range(iv['kappa'])}: a coherency cost these runs cannot tell from 0: the fitted "
                   f"curve turns down past its peak, but a fleet whose rate only levels off{amdahl} fits them too "
                   "(more segments, longer runs or --trials narrow it).")
    else:
        out.append(f"κ {k:.2g}{_range(iv['kappa'])}: each pair of workers adds a coherency cost (what every worker "
                   "must read of the others' work), so past a peak more workers lower the rate.")
    if has_peak:
        fitted = "The fitted fleet peaks" if f["kappa_zero"] else "The fleet peaks"
        out.append(f"{fitted} at {_workers_range(iv['peak_workers'])} workers (N* {_g(f['peak_workers'])}), at "
                   f"{_g(f['peak_rate'])}{_range(iv['peak_rate'])} iterations/s; more workers past N* lower the rate.")
    out.append(f"One worker alone: λ {_g(f['lambda'])}{_range(iv['lambda'])} iterations/s.")
    if f.get("note"):
        out.append(f["note"])
    return out
