"""The anchor's rate as the run's own variability says it is known: quasi-Poisson, not Poisson.

A closed fleet's successes in a window are not Poisson counts on a shared machine: its share of the cores
wanders over tens of seconds, and every worker slows together. The kept real runs' counts vary 2 to 8 times
as much as Poisson's over 20-second blocks (``disposable``, ``pruning``), and the more the longer the block
(the wandering is slow). The anchor is a third of the load's iterations: its rate is uncertain by what such
blocks do, so the dispersion is measured on blocks of half the anchor's length (six over the load after the
warm-up) from second differences (``c[i+1] - 2 c[i] + c[i-1]``, variance 6 times a block's: a falling rate's
trend, even the steep early fall of a growing index, leaves it; first differences read that fall as noise, a
dispersion of 2.2 on a simulated fleet with none), and never below 1 (a regular closed fleet's counts vary
less than Poisson's: its Poisson band stays).

Six blocks give four second differences: the dispersion itself is uncertain, and a band that took it as exact would
be too narrow as often as it is too wide. Each bootstrap draw takes its own dispersion from the estimate's
scaled inverse chi-square (``df`` the differences), then the anchor's rate from a gamma with that dispersion
(mean the measured rate, variance ``phi`` times Poisson's): a Student-like band, wide when the run says little.

The same blocks carry the fits' uncertainty: a slow block slows every step of every iteration in it, so a
step's residuals about its fit are correlated within a block, and the bootstrap flips each block's residuals
together (a wild cluster bootstrap, ``resampled``) on top of its resample of iterations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.report.forecast import fit as fits

BLOCKS_PER_ANCHOR = 2  # blocks of half the anchor's length: the anchor is a third of the load, so six blocks
MIN_DIFFERENCES = 3  # fewer second differences: the dispersion is not measured (1, Poisson)


@dataclass(frozen=True)
class Dispersion:
    """Variance over Poisson's of the successes in a block (at least 1), its degrees of freedom (0: not
    measured), and the block's seconds."""

    phi: float = 1.0
    df: int = 0
    block_s: float = 0.0
    measured: float = 1.0  # the estimate before the floor (the draws' centre: a regular fleet's is below 1)

    def as_dict(self) -> dict[str, float]:
        return {"phi": self.phi, "df": self.df, "block_s": self.block_s, "measured": self.measured}


def dispersion(t: np.ndarray, warmup_s: float, run_s: float, anchor_s: float | None) -> Dispersion:
    """The successes' dispersion over blocks of half the anchor's length from the warm-up's end (``t``: each
    success's end, seconds since the load's start): the mean square of second differences over 6, over the
    mean count."""
    if not anchor_s or anchor_s <= 0:
        return Dispersion()
    block = anchor_s / BLOCKS_PER_ANCHOR
    m = int((run_s - warmup_s) / block + 1e-9)
    if m - 2 < MIN_DIFFERENCES:
        return Dispersion()
    edges = run_s - block * np.arange(m, -1, -1)  # whole blocks ending at the run's end (the anchor's two last)
    counts = np.histogram(np.asarray(t, dtype=float), bins=edges)[0].astype(float)
    mean = float(counts.mean())
    if mean <= 0:
        return Dispersion()
    var = float((np.diff(counts, 2) ** 2).sum()) / (6 * (m - 2))
    return Dispersion(max(1.0, var / mean), m - 2, float(block), var / mean)


def rate_draws(rate: float, successes: int, seconds: float, disp: Dispersion, k: int,
               rng: np.random.Generator) -> np.ndarray:
    """``k`` draws of the anchor's rate (the first the measured rate itself): a gamma with mean the measured
    rate and ``phi`` times Poisson's variance, each draw's ``phi`` from the estimate's scaled inverse
    chi-square (at least 1); Poisson's gamma posterior when the dispersion was not measured."""
    out = np.full(k, rate)
    if k <= 1:
        return out
    n = max(successes, 1)
    if disp.df > 0:
        phi = np.maximum(disp.measured * disp.df / rng.chisquare(disp.df, k - 1), 1.0)
    else:
        phi = np.ones(k - 1)
    out[1:] = rng.gamma(n / phi, phi) / max(seconds, 1e-9)
    return out


def blocks_of(t: np.ndarray, run_s: float, block_s: float) -> np.ndarray | None:
    """Each row's block (0 the last, counted back from the run's end, as ``dispersion`` lays them); None when
    the dispersion laid none (the fits' residuals then taken as independent)."""
    if block_s <= 0:
        return None
    return np.floor((run_s - np.asarray(t, dtype=float)) / block_s).clip(min=0).astype(int)


def wild(fit: fits.Fit, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A step fit's values and residuals on the scale it was fitted (a power law's in logs; 0 where a row
    cannot enter it): ``resampled`` turns them into a wild draw."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    f = fit(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(y) - np.log(f) if fit.shape == "power" else y - f
    return f, np.where(np.isfinite(r), r, 0.0)


def resampled(fit: fits.Fit, f: np.ndarray, r: np.ndarray, flips: np.ndarray) -> np.ndarray:
    """The wild cluster bootstrap's y: the fit plus each row's residual with its block's sign (``flips``, +1 or
    -1 per row). A machine that runs slow for a block slows every iteration in it, so the residuals of one block
    move together and a resample of single iterations would take them as independent: a power law's exponent
    then looks known to +-0.02 when runs of the same fleet put it anywhere in 0.73-1.14 (simulated, 15 %
    slowdowns per 20 s). Flipping whole blocks keeps that: the rows' values, the design, stay as measured."""
    return f * np.exp(flips * r) if fit.shape == "power" else f + flips * r


def few_blocks(g: int) -> float:
    """How much further from the point a wild cluster bootstrap's draws go with ``g`` blocks: Student's
    ``t(g - 1)`` quantile over the normal's (a cluster-robust interval's usual small-sample rule: with six
    blocks, 2.57 / 1.96 = 1.31). The bootstrap's own spread with so few blocks is the normal's, too narrow."""
    from harness.report.stats import t_quantile

    return t_quantile(max(g - 1, 1)) / t_quantile(math.inf) if g > 1 else 1.0
