"""The rate forecast from what grows: the step that grew, its count, the count's growth, the fleet's rate later.

The report already says which steps grew and which work count explains each (``findings.steps``). Here, for
EVERY step that grew (a term each: the one that grew most first), two fits carry it forward
(``harness/report/forecast/fit.py``, each linear or a power law as the data choose):

- the step's time against its own count, over the run's successful iterations;
- the count against iterations, in the scope the scenario's keys give it: per worker (a namespace each:
  a worker's own commits grow its own index) or the whole fleet's (one shared namespace).

A step that grew with no recorded count to explain it (a stand-in slowing as its table fills), the one that
grew most included, is carried against the fleet's own iterations (the work the whole fleet has put into the
store). A term other than the first is held flat only when its own fits say flat: its count bounded, or its
step's slope interval not above 0.

The fleet's rate at a later point then follows from the time one cycle takes at the anchor, ``D``, plus what
the steps will add by then, ``delta`` (the terms' sum from the anchor's iteration): ``rate = rate_anchor * D /
(D + delta)``. The anchor is the rate over the run's last third, standing for the cycle at that window's middle
iteration (``Anchor``): a third of the run's iterations, not one end segment's few. A closed fleet's cycle is
the workers' own (``D = workers / rate_anchor``: their iteration and the time between iterations, as measured); a
fleet bound by one lock is paced by the lock's hold instead (``D`` = its mean hold, as the bound rule reasons:
the lock passes one holder at a time), and only the steps done under it add to that hold.
Time and iterations are tied by integrating ``dt = dN / rate(N)`` from the run's end.

The step times cannot see a fleet that the modelled capacity holds back (a partition whose writes grow with
the catalog it exports): the rate at N is the lower of that composed rate and the capacity bound,
``min over buckets of limit / units_per_iteration(N)`` (``harness/report/forecast/capacity.py``), in the point
and in every draw (each draw also refits the buckets on a resample of their windows), and the integration uses it.

The interval is a bootstrap over successful iterations: both fits redone on each resample, the anchor's rate
drawn from its own gamma posterior, so it carries both fits' uncertainty and the rate's. On a shared machine
the run's own variability is more than Poisson's (``harness/report/forecast/band.py``): the anchor's draws
take the successes' dispersion over blocks of half the anchor (quasi-Poisson, the dispersion itself uncertain),
and each resample flips the step fits' residuals block by block (a wild cluster bootstrap, its spread widened
by Student's t for the few blocks), so a slow stretch of the machine moves a whole block's iterations together.

A run whose count stops growing (pruning keeps a catalog bounded) forecasts its anchor's rate, flat, and says why;
a forecast that extrapolates a count past 20 times its measured range says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.report.forecast import fit as fits
from harness.report.forecast.band import Dispersion, blocks_of, few_blocks, rate_draws, resampled, wild
from harness.report.forecast.capacity import Bound, Capacity
from harness.report.forecast.horizon import HALVING_WITHIN_S, Horizon, say_seconds
from harness.report.stats import rank_trend

DRAWS = 200
FIT_ROWS = 20_000  # successful iterations the fits read at most (a seeded sample of a larger run)
EXTRAPOLATION_LIMIT = 20.0  # past this multiple of a count's measured range, the forecast says so
GRID = 400  # points of the integration from the run's end to the horizon
CURVE_POINTS = 40  # the figure's forecast curve
LOCK_STEPS = ("pull_ms", "method_ms", "push_ms", "commit_ms", "export_ms", "prune_ms")  # done under the lock
Z_BAND = (2.5, 97.5)


FLEET_ITERATIONS = "fleet_iterations"  # a term's count when no recorded count explains its step


@dataclass
class Term:
    """One step that grew and the count it is carried against (``count`` None: the fleet's iterations)."""

    step: str
    step_label: str
    count: str | None
    count_label: str
    scope: str = "per-worker"

    @property
    def under_lock(self) -> bool:
        return self.step in LOCK_STEPS


@dataclass(frozen=True)
class Anchor:
    """The measured rate a forecast starts from: over a window (a closed fleet's ``successes / seconds``),
    standing for the cycle at the window's middle iteration ``n`` (the mean time per iteration over the window
    is the cycle at its middle iteration while the cycle grows about linearly across it)."""

    rate: float
    successes: int
    seconds: float
    n: float
    t0: float
    t1: float
    what: str

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "successes": self.successes, "seconds": self.seconds, "iterations": self.n,
                "t0": self.t0, "t1": self.t1, "window": self.what}


@dataclass
class Inputs:
    """What the forecast reads from a run: its successful iterations and the findings' few numbers.

    ``ok``: successful rows with ``t`` (seconds since the load's start), ``user``, the step and count columns.
    """

    ok: pd.DataFrame
    run_s: float
    warmup_s: float
    workers: float
    successes: int  # successful iterations over the whole run
    start_rate: float
    end_rate: float
    end_successes: int  # in the end segment
    end_seconds: float
    step: str | None
    step_label: str | None
    count: str | None
    count_label: str | None
    scope: str = "per-worker"  # or "shared"
    lock_hold_ms: float | None = None  # a lock-bound fleet: the lock's mean hold
    lock_name: str | None = None
    why_none: str | None = None  # no step grew with a count
    extra: dict[str, Any] = field(default_factory=dict)
    others: list[Term] = field(default_factory=list)  # the other steps that grew, beside ``step``
    # the anchor: the rate the forecast starts from, over the run's last third (None: the end segment)
    anchor_successes: int | None = None
    anchor_seconds: float | None = None
    dispersion: Dispersion = field(default_factory=Dispersion)  # the successes' over Poisson's (band.py)
    capacity: Capacity | None = None  # the modelled capacity's buckets and their units per iteration (capacity.py)

    def anchor(self) -> Anchor:
        """The rate the composition starts from and the fleet's iteration it stands for."""
        if self.anchor_successes is None or not self.anchor_seconds:
            return Anchor(self.end_rate, self.end_successes, self.end_seconds, float(self.successes),
                          self.run_s - self.end_seconds, self.run_s, "the end segment")
        k, sec = self.anchor_successes, self.anchor_seconds
        return Anchor(k / sec, k, sec, self.successes - k / 2.0, self.run_s - sec, self.run_s,
                      "the run's last third")

    def terms(self) -> list[Term]:
        """The step that grew most first, then the others."""
        top = Term(self.step or "", self.step_label or "", self.count, self.count_label or "", self.scope)
        return [top, *self.others]


def scope_of(info: dict[str, Any]) -> str:
    """``shared`` when the scenario's models share one namespace (one index grows with the fleet), else per
    worker (each namespace grows with its own worker's iterations)."""
    ds = ((info.get("scenario") or {}).get("datastore") or {})
    return "shared" if ds.get("namespaces") == "shared" else "per-worker"


def scope_index(ok: pd.DataFrame, scope: str) -> np.ndarray:
    """Each successful iteration's index in its scope (1-based): its worker's n-th, or the fleet's n-th."""
    order = np.argsort(ok["t"].to_numpy(), kind="stable")
    idx = np.empty(len(ok))
    if scope == "shared":
        idx[order] = np.arange(1, len(ok) + 1)
        return idx
    users = ok["user"].to_numpy()[order]
    ranks = pd.Series(users).groupby(users).cumcount().to_numpy() + 1
    idx[order] = ranks
    return idx


def bounded(i: np.ndarray, c: np.ndarray) -> bool:
    """The count stopped growing: over the last quarter of the iterations it does not rise with them."""
    keep = np.isfinite(c)
    i, c = i[keep], c[keep]
    if len(i) < fits.MIN_POINTS:
        return True
    late = i >= np.quantile(i, 0.75)
    _, _, rising, _ = rank_trend(i[late], c[late])
    return not rising


class TermFit:
    """One term's two fits with their bootstrap draws (index 0 the point)."""

    def __init__(self, term: Term, ok: pd.DataFrame, i_scope: np.ndarray, i_fleet: np.ndarray, workers: float):
        self.term = term
        shared = term.count is None or term.scope == "shared"
        self.i = i_fleet if shared else i_scope
        self.c = self.i.astype(float) if term.count is None else ok[term.count].to_numpy(dtype=float)
        self.y = ok[term.step].to_numpy(dtype=float)
        self.finite = np.isfinite(self.c) & np.isfinite(self.y)
        self.per_scope = 1.0 if shared else workers
        self.step_fit = fits.choose(self.c, self.y)
        # the count's growth may saturate (a knee); the fleet's own iterations against themselves are a line
        groups = None if shared else ok["user"].to_numpy()  # a worker's count grows in its own namespace
        self.count_fit = (fits.choose(self.i, self.c, fits.SHAPES[:1]) if term.count is None
                          else fits.choose_count(self.i, self.c, groups))
        self.ok = self.step_fit is not None and self.count_fit is not None
        self.draws: list[tuple[float, ...]] = []
        if self.ok:
            self.draws.append((*self.step_fit.params, *self.count_fit.params))
            self.f, self.r = wild(self.step_fit, self.c, self.y)

    def redraw(self, pick: np.ndarray, flips: np.ndarray | None = None) -> tuple[float, ...] | None:
        """Both fits redone on the resampled rows (those with both values); ``flips``: each row's block sign,
        the step's residuals flipped by block (``band.resampled``) before its refit."""
        pick = pick[self.finite[pick]]
        y = self.y if flips is None else resampled(self.step_fit, self.f, self.r, flips)
        s = fits.refit(self.c[pick], y[pick], self.step_fit)
        g = fits.refit(self.i[pick], self.c[pick], self.count_fit)
        if s is None or g is None or not all(np.isfinite([*s[:2], *g[:2]])):
            return None
        return (*s, *g)

    def seal(self, widen: float = 1.0) -> None:
        """The draws as arrays; ``widen``: the step fit's draws moved that much further from its point (the
        few blocks' small-sample correction, ``band.few_blocks``)."""
        cols = [np.array(v) for v in zip(*self.draws, strict=True)]
        if widen != 1.0:  # the step fit's a and b; a power law's a in logs (log a and b move together)
            log = self.step_fit.shape == "power"
            for j in range(2):
                v = np.log(np.clip(cols[j], 1e-300, None)) if log and j == 0 else cols[j]
                v = v[0] + widen * (v - v[0])
                cols[j] = np.exp(v) if log and j == 0 else v
        self.sp, self.cp = tuple(cols[:4]), tuple(cols[4:])
        self.sa = self.sp[0]

    def count_at(self, n: np.ndarray | float) -> np.ndarray:
        """The count (per draw) once the fleet has made ``n`` successful iterations."""
        i = np.asarray(n, dtype=float) / self.per_scope
        return fits.evaluate(self.count_fit.shape, tuple(p[:, None] for p in self.cp), np.atleast_1d(i)[None, :])

    def step_at(self, n: np.ndarray | float) -> np.ndarray:
        return fits.evaluate(self.step_fit.shape, tuple(p[:, None] for p in self.sp), self.count_at(n))

    def says_flat(self) -> bool:
        """The step's own fit gives it no credible rise with its count (slope interval not above 0)."""
        lo = fits.slope_interval(self.c, self.y, self.step_fit)["slope_interval"][0]
        return not lo > 0

    def describe(self, its: float, n0: float) -> dict[str, Any]:
        t = self.term
        return {"step": t.step, "step_label": t.step_label, "count": t.count, "count_label": t.count_label,
                "scope": "shared" if self.per_scope == 1.0 else "per-worker",
                "step_fit": self.step_fit.as_dict()["formula"], "count_fit": self.count_fit.as_dict()["formula"],
                "step_ms_now": float(self.step_at(n0)[0, 0]),
                "step_ms_at_horizon": _band(self.step_at(its)[:, 0]),
                "count_at_horizon": _band(self.count_at(its)[:, 0])}


class Model:
    """The terms' fits and the cycle, as arrays of parameters: index 0 the point, the rest bootstrap draws.

    The draws resample the successful iterations once for all terms (the steps of one iteration stay together)."""

    def __init__(self, x: Inputs, draws: int, seed: int, terms: list[Term] | None = None):
        ok = x.ok
        i_scope, i_fleet = scope_index(ok, x.scope), scope_index(ok, "shared")
        if len(ok) > FIT_ROWS:  # a million-row run: the fits and their bootstrap on a seeded sample
            pick = np.sort(np.random.default_rng(seed).choice(len(ok), FIT_ROWS, replace=False))
            ok, i_scope, i_fleet = ok.iloc[pick], i_scope[pick], i_fleet[pick]
        cap = x.capacity
        self.bound = Bound(cap) if cap is not None and cap.buckets else None  # the capacity bound's fits
        if self.bound is not None and not self.bound.ok:
            self.bound = None
        cap_rng = np.random.default_rng([seed, 59])  # its own: the step fits' draws stay as they were
        self.terms = [TermFit(t, ok, i_scope, i_fleet, x.workers) for t in (terms or x.terms()[:1])]
        self.ok = all(t.ok for t in self.terms)
        if not self.ok:
            return
        top = self.terms[0]
        self.step_fit, self.count_fit, self.i, self.c, self.y = top.step_fit, top.count_fit, top.i, top.c, top.y
        self.per_scope = top.per_scope
        rng = np.random.default_rng(seed)
        n = len(ok)
        block = blocks_of(ok["t"].to_numpy(), x.run_s, x.dispersion.block_s)
        for _ in range(draws):
            pick = rng.integers(0, n, n)
            flips = None if block is None else rng.choice((-1.0, 1.0), int(block.max()) + 1)[block]
            got = [t.redraw(pick, flips) for t in self.terms]
            if any(g is None for g in got):
                continue
            for t, g in zip(self.terms, got, strict=True):
                t.draws.append(g)
            if self.bound is not None:  # each kept draw pairs with one of the bound's, so the band carries it too
                self.bound.redraw(cap_rng)
        widen = 1.0 if block is None else few_blocks(int(block.max()) + 1)
        for t in self.terms:
            t.seal(widen)
        if self.bound is not None:
            self.bound.seal()
        k = len(top.sa)
        self.sa = top.sa
        self.anchor = an = x.anchor()
        # the anchor's rate per draw, quasi-Poisson (the point keeps the measure)
        rate = rate_draws(an.rate, an.successes, an.seconds, x.dispersion, k, rng)
        self.rate_end = rate
        # a window's rate varies about its expectation as the anchor's did (quasi-Poisson, the run's dispersion):
        # the bound's draws take the same factor, or its band would carry only its fit's (nearly noiseless) units
        self.level = rate / rate[0] if rate[0] > 0 else np.ones(k)
        if x.lock_hold_ms:  # the lock paces the fleet: only what is done under it adds to the cycle
            self.cycle_ms = np.full(k, float(x.lock_hold_ms))
            self.adding = [t for t in self.terms if t.term.under_lock]
        else:
            self.cycle_ms = x.workers * 1000.0 / np.clip(rate, 1e-9, None)
            self.adding = self.terms
        self.n0 = float(x.successes)
        self.now = [t.step_at(an.n) for t in self.adding]  # the steps where the anchor's rate was measured
        self.step_now = top.step_at(self.n0)

    def count_at(self, n: np.ndarray | float) -> np.ndarray:
        """The first term's count (per draw) once the fleet has made ``n`` successful iterations."""
        return self.terms[0].count_at(n)

    def step_at(self, n: np.ndarray | float) -> np.ndarray:
        return self.terms[0].step_at(n)

    def composed_at(self, n: np.ndarray) -> np.ndarray:
        """The rate the step times give (draws x points), before the capacity bound."""
        delta = sum((t.step_at(n) - now for t, now in zip(self.adding, self.now, strict=True)),
                    np.zeros((len(self.rate_end), len(np.atleast_1d(n)))))
        d = self.cycle_ms[:, None]
        return self.rate_end[:, None] * d / np.clip(d + delta, 1e-9, None)

    def rate_at(self, n: np.ndarray) -> np.ndarray:
        """The fleet's rate (draws x points): the composed rate, or the capacity bound where it is lower."""
        r = self.composed_at(n)
        return r if self.bound is None else np.minimum(r, self.bound.rate(n) * self.level[:, None])

    def path(self, n_max: float, t0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(iterations grid, time at each per draw, rate at each per draw) from the run's end to ``n_max``."""
        n = np.linspace(self.n0, max(n_max, self.n0 + 1), GRID + 1)
        r = self.rate_at(n)
        mid = 0.5 * (1 / r[:, 1:] + 1 / r[:, :-1])
        t = t0 + np.concatenate([np.zeros((r.shape[0], 1)), np.cumsum(mid * np.diff(n)[None, :], axis=1)], axis=1)
        return n, t, r


def carried(x: Inputs, seed: int) -> tuple[list[Term], list[dict[str, str]]]:
    """The terms the forecast carries: the first always (its bound checked by the caller), each other one
    unless its count is bounded, its fits fail, or its fit says flat; and why each left-out one is held flat."""
    keep, held = x.terms()[:1], []
    for t in x.others:
        tf = TermFit(t, x.ok, scope_index(x.ok, x.scope), scope_index(x.ok, "shared"), x.workers)
        why = None
        if not tf.ok:
            why = "too few distinct values to fit"
        elif t.count is not None and bounded(tf.i, tf.c):
            why = f"the {t.count_label} stays bounded"
        elif tf.says_flat():
            why = f"its time does not credibly rise with the {t.count_label}"
        if why:
            held.append({"step": t.step, "step_label": t.step_label, "why": why})
        else:
            keep.append(t)
    return keep, held


def _band(v: np.ndarray) -> dict[str, float]:
    """Point (draw 0) and the draws' 95 % band."""
    lo, hi = np.nanpercentile(v[1:], Z_BAND) if len(v) > 2 else (v[0], v[0])
    return {"point": float(v[0]), "lo": float(min(lo, v[0])), "hi": float(max(hi, v[0]))}


def _at_time(n: np.ndarray, t: np.ndarray, r: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Per draw: the fleet's iterations and rate at time ``h`` (the last point when the grid ends before)."""
    its, rates = np.empty(len(t)), np.empty(len(t))
    for k in range(len(t)):
        its[k] = np.interp(h, t[k], n)
        rates[k] = np.interp(h, t[k], r[k])
    return its, rates


def _n_reach(m: Model, x: Inputs, horizon_s: float) -> float:
    """Iterations enough to pass ``horizon_s`` in every draw (the rate can only fall that far: generous)."""
    fast = float(np.nanmax(m.rate_end)) * 1.5
    return m.n0 + fast * max(horizon_s - x.run_s, 1.0) + 10


def halving(m: Model, x: Inputs) -> dict[str, Any]:
    """When the point forecast falls to half the run's start rate, within a day of load; else not within."""
    target = x.start_rate / 2
    if x.end_rate <= target:
        return {"already": True, "at_s": None, "iterations": None, "within_s": HALVING_WITHIN_S}
    n, t, r = m.path(_n_reach(m, x, HALVING_WITHIN_S), x.run_s)
    below = np.flatnonzero((r[0] <= target) & (t[0] <= HALVING_WITHIN_S))
    if not len(below):
        return {"already": False, "at_s": None, "iterations": None, "within_s": HALVING_WITHIN_S}
    j = int(below[0])
    return {"already": False, "at_s": float(t[0][j]), "iterations": float(n[j]), "within_s": HALVING_WITHIN_S}


def flat(x: Inputs, horizon: Horizon, reason: str, draws: int = DRAWS, seed: int = 0) -> dict[str, Any]:
    """The anchor's rate, carried forward: the count stays bounded (or nothing grew with a count); its band the
    anchor's own draws (quasi-Poisson, as the work forecast's)."""
    an = x.anchor()
    b = _band(rate_draws(an.rate, an.successes, an.seconds, x.dispersion, draws + 1, np.random.default_rng(seed)))
    lo, hi = b["lo"], b["hi"]
    h_s, h_n = resolve_flat(x, horizon)
    return {"basis": "flat", "reason": reason, "horizon": horizon.label(), "horizon_s": h_s,
            "horizon_iterations": h_n, "rate": {"point": an.rate, "lo": lo, "hi": hi}, "anchor": an.as_dict(),
            "dispersion": x.dispersion.as_dict(),
            "step": x.step, "step_label": x.step_label, "count": x.count, "count_label": x.count_label,
            "scope": x.scope, "bound": "lock" if x.lock_hold_ms else "fleet", "fits": None,
            "extrapolated": False, "extrapolation": None, "halves": None,
            "curve": {"t": [x.run_s, h_s], "point": [an.rate] * 2, "lo": [lo] * 2, "hi": [hi] * 2},
            "capacity": {"reason": "a flat forecast: the capacity bound is composed only with a forecast of what "
                         "grows", "model": x.capacity.model if x.capacity else None, "bucket": None,
                         "binds": False, "binds_from_iteration": None, "binds_from_s": None, "already": False}}


def resolve_flat(x: Inputs, horizon: Horizon) -> tuple[float, float]:
    """A horizon's time and iterations at a constant rate (the anchor's)."""
    rate = x.anchor().rate
    if horizon.kind == "iterations":
        extra = max(horizon.value - x.successes, 0.0)
        return x.run_s + extra / max(rate, 1e-9), horizon.value
    h = horizon.value * x.run_s if horizon.kind == "multiple" else horizon.value
    return h, x.successes + rate * max(h - x.run_s, 0.0)


def forecast(x: Inputs, horizon: Horizon, draws: int = DRAWS, seed: int = 0) -> dict[str, Any] | None:
    """The fleet's rate at ``horizon``, with its band; None when the run has too little to go on."""
    if x.end_rate <= 0 or x.successes < fits.MIN_POINTS:
        return None
    if x.why_none and x.step is not None:  # a step grew with nothing to carry its growth forward
        return {"basis": None, "reason": x.why_none, "horizon": horizon.label(), "horizon_s": None,
                "horizon_iterations": None, "rate": None, "step": x.step, "step_label": x.step_label,
                "count": None, "count_label": None, "scope": x.scope, "fits": None, "extrapolated": False}
    if x.why_none:
        return flat(x, horizon, x.why_none, draws, seed)
    m_i = scope_index(x.ok, x.scope)
    if x.count is not None and bounded(m_i, x.ok[x.count].to_numpy(dtype=float)):
        return flat(x, horizon, f"the {x.count_label} stays bounded (it stops rising with iterations over the "
                                "run's last quarter): the step that grew is not forecast to grow further", draws, seed)
    terms, held = carried(x, seed)
    m = Model(x, draws, seed, terms)
    if not m.ok:
        return flat(x, horizon, f"too few distinct values of the {x.count_label} to fit its growth", draws, seed)
    if horizon.kind == "iterations":
        n_h = max(horizon.value, m.n0)
        n, t, r = m.path(n_h, x.run_s)
        h_s_draws, rates = t[:, -1], r[:, -1]
        its = np.full(len(t), n_h)
    else:
        h_s = horizon.value * x.run_s if horizon.kind == "multiple" else horizon.value
        n, t, r = m.path(_n_reach(m, x, h_s), x.run_s)
        its, rates = _at_time(n, t, r, max(h_s, x.run_s))
        h_s_draws = np.full(len(t), max(h_s, x.run_s))
    count_h = m.count_at(float(its[0]))[:, 0]
    ext = max(max(beyond(float(t.count_at(float(its[0]))[0, 0]), t.step_fit),
                  beyond(float(its[0]) / t.per_scope, t.count_fit)) for t in m.terms)
    curve = _curve(m, x, float(h_s_draws[0]))
    cap = capacity_said(m, x, float(its[0]))
    if cap["binds"]:  # the bound's own fit read past its range counts too, once it binds
        ext = max(ext, cap["extrapolation"])
    return {"basis": "work", "reason": None, "horizon": horizon.label(), "horizon_s": float(h_s_draws[0]),
            "horizon_iterations": float(its[0]), "horizon_s_band": _band(h_s_draws),
            "rate": _band(rates), "step": x.step, "step_label": x.step_label, "count": x.count,
            "count_label": x.count_label, "scope": x.scope, "bound": "lock" if x.lock_hold_ms else "fleet",
            "lock": x.lock_name, "cycle_ms": float(m.cycle_ms[0]), "anchor": m.anchor.as_dict(),
            "dispersion": x.dispersion.as_dict(),
            "count_at_horizon": _band(count_h), "step_ms_now": float(m.step_now[0, 0]),
            "step_ms_at_horizon": _band(m.step_at(float(its[0]))[:, 0]),
            "fits": {"step": {**m.step_fit.as_dict(), **fits.slope_interval(m.c, m.y, m.step_fit),
                              "x": x.count, "y": x.step},
                     "count": {**m.count_fit.as_dict(), **fits.slope_interval(m.i, m.c, m.count_fit),
                               "x": f"iterations per {'worker' if m.per_scope != 1.0 else 'fleet'}",
                               "y": x.count or FLEET_ITERATIONS},
                     "draws": int(len(m.sa) - 1)},
            "terms": [t.describe(float(its[0]), m.n0) for t in m.terms], "held_flat": held,
            "extrapolation": ext, "extrapolated": bool(ext > EXTRAPOLATION_LIMIT),
            "halves": halving(m, x), "start_rate": x.start_rate, "curve": curve, "capacity": cap}


def capacity_said(m: Model, x: Inputs, n_h: float) -> dict[str, Any]:
    """The binding bucket at the horizon (the fullest there), its units per iteration at the anchor and at the
    horizon, and from which iteration its bound is below the composed rate (the point's; None: not by the
    horizon); with no bucket, why."""
    cap = x.capacity
    out: dict[str, Any] = {"reason": None, "model": cap.model if cap else None, "bucket": None,
                           "fit": None, "units_per_iteration_now": None, "units_per_iteration_at_horizon": None,
                           "bound_at_horizon": None, "binds": False, "binds_from_iteration": None,
                           "binds_from_s": None, "already": False, "extrapolation": None}
    b = m.bound
    if b is None:
        out["reason"] = (cap.why if cap is not None and cap.why else
                         "no modelled capacity recorded with the run" if cap is None else
                         "no bucket's units per iteration could be fitted")
        return out
    per = b.per_bucket(n_h)[:, :, 0]  # buckets x draws
    j = int(np.argmin(per[:, 0]))
    n, t, _ = m.path(n_h, x.run_s)
    below = np.flatnonzero(b.rate(n)[0] < m.composed_at(n)[0])
    out.update(bucket=b.buckets[j].as_dict(), fit=b.fits[j].as_dict()["formula"],
               units_per_iteration_now=float(b.units_at(m.n0)[j, 0, 0]),
               units_per_iteration_at_horizon=_band(b.units_at(n_h)[j, :, 0]), bound_at_horizon=_band(per[j] * m.level),
               words=b.buckets[j].words(), binds=bool(len(below)), extrapolation=beyond(n_h, b.fits[j]))
    if len(below):
        out.update(binds_from_iteration=float(n[below[0]]), binds_from_s=float(t[0][below[0]]),
                   already=bool(below[0] == 0))
    return out


def beyond(x: float, f: fits.Fit) -> float:
    """How far past its measured range a fit is read: (x - lowest measured) over the measured range (1 = its
    highest measured value; a pre-aged store's count starts high, its range is what the run added)."""
    return (x - f.x_lo) / max(f.x_hi - f.x_lo, 1e-9)


def _curve(m: Model, x: Inputs, h_s: float) -> dict[str, list[float]]:
    """The forecast's point and band over time, from the run's end to the horizon (for the figure)."""
    n, t, r = m.path(_n_reach(m, x, h_s), x.run_s)
    ts = np.linspace(x.run_s, max(h_s, x.run_s + 1), CURVE_POINTS)
    per = np.array([np.interp(ts, t[k], r[k]) for k in range(len(t))])
    lo, hi = np.nanpercentile(per[1:], Z_BAND, axis=0) if len(per) > 2 else (per[0], per[0])
    return {"t": ts.tolist(), "point": per[0].tolist(), "lo": np.minimum(lo, per[0]).tolist(),
            "hi": np.maximum(hi, per[0]).tolist()}


def sentence(fc: dict[str, Any] | None, short: bool = False) -> str | None:
    """``At this growth: 0.61 it/s [0.48-0.79] at 15 min; the rate halves at about iteration 1,900 (11 min)``,
    then what it rests on; the flat case says why; an extrapolation says so. ``short``: the first screen's line
    (what it rests on, and why a flat one is flat, left to the forecast's section)."""
    if not fc:
        return None
    if fc["rate"] is None:
        return f"No forecast: {fc['reason']}."
    r = fc["rate"]
    at = say_seconds(fc["horizon_s"])
    rate = f"{r['point']:.3g} it/s [{r['lo']:.3g}-{r['hi']:.3g}] at {at}"
    if fc["basis"] == "flat":
        over = "over the run's last third" if (fc.get("anchor") or {}).get("window") == "the run's last third" else \
            "at the end"
        return f"Flat: {rate}, as {over}" + ("." if short else f" ({fc['reason']}).")
    s = f"At this growth: {rate}"
    hv = fc.get("halves") or {}
    if hv.get("already"):
        s += "; the rate is already below half its start"
    elif hv.get("at_s") is not None:
        s += f"; the rate halves at about iteration {hv['iterations']:,.0f} ({say_seconds(hv['at_s'])})"
    elif hv:
        s += f"; the rate does not halve within {say_seconds(hv['within_s'])}"
    if not short:
        s += f" (the {fc['step_label']} step against the {fc['count_label']}"
        s += "".join(f", {t['step_label']} against the {t['count_label']}" for t in (fc.get("terms") or [])[1:])
        s += f", lock-bound: the lock's {fc['cycle_ms']:.3g} ms hold)" if fc["bound"] == "lock" else ")"
    s += capacity_words(fc.get("capacity"))
    if fc["extrapolated"]:
        s += f"; extrapolated {fc['extrapolation']:.0f}x past the measured range"
    return s + "."


def capacity_words(cap: dict[str, Any] | None) -> str:
    """``; from about iteration 2,400 (3 min) the fleet is bound by partition 3 of the table's writes (3 keys:
    ...) at its 1,000 units/s``, when the bound binds by the horizon; else nothing."""
    if not cap or not cap.get("binds"):
        return ""
    b = cap["bucket"]
    if cap.get("already"):
        return (f"; the fleet is already bound at the run's end (iteration {cap['binds_from_iteration']:,.0f}) by "
                f"{cap['words']} at its {b['limit']:,.0f} units/s")
    return (f"; from about iteration {cap['binds_from_iteration']:,.0f} ({say_seconds(cap['binds_from_s'])}) the "
            f"fleet is bound by {cap['words']} at its {b['limit']:,.0f} units/s")
