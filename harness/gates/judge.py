"""A threshold judged with its interval: which side of its limit the measure is on, or that it cannot tell.

Pure functions of arrays (``Observed``): the report builds them from a run's rows
(``harness/report/run/checks.py``), the Locust master from the rows it collects while the test runs
(``harness.gates.live``), so a threshold reads the same live and afterwards. The intervals are the
report's (``harness.core.intervals``):

- a percentile: the distribution-free order-statistic interval (``quantile_interval``); an end its
  ranks fall outside the sample is open (a p99 of 50 values has no upper bound);
- a mean: Student's t; a maximum or minimum: the value observed (a fact about the run, no interval);
- a rate: Poisson (``rate_interval``) on the successes (or the count's total) in the span or window;
- a failure ratio: Wilson's score interval; a lock's utilization: its per-window busy shares' mean.

A threshold holds when its whole interval is on the allowed side, fails when the whole interval is on the
other, and otherwise cannot tell: it then counts as the scenario's ``undecided`` says (``pass`` by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.core.intervals import Z95, quantile_interval, rate_interval, t_quantile, wilson_interval
from harness.gates.expr import Threshold, show_interval, show_limit
from harness.metrics import numbers
from harness.record.schema import STEP_LABELS

COLUMN_LABELS = {**STEP_LABELS, "wait_ms": "wait", "total_ms": "iteration"}
ROW_WORDS = {"ok": "successful iterations", "all": "iterations", "failed": "failed iterations"}
QUALIFIERS = {"ok": "successful iterations", "all": "all iterations", "failed": "failed iterations"}


@dataclass(frozen=True)
class LockShare:
    """One lock key's busy share over the span, its interval (None: too few windows) and its holders."""

    key: str
    busy: float
    interval: tuple[float, float] | None
    holders: int


@dataclass
class Observed:
    """What thresholds are judged on: per row, success, error kind and end (seconds since the load's start);
    a column's values by name (NaN where null); the span's length; the locks' busy shares when known."""

    seconds: float
    ok: np.ndarray
    error_kind: np.ndarray
    t_end: np.ndarray
    column: Callable[[str], np.ndarray]
    locks: list[LockShare] | None = None


@dataclass(frozen=True)
class Measured:
    value: float | None
    lo: float | None  # None: the data leave this end open
    hi: float | None
    n: int  # observations behind it
    what: str  # "successful iterations", "iterations", ...
    exact: bool = False  # a fact about the run (max, min): no interval
    label: str = ""


@dataclass(frozen=True)
class Judgement:
    """A threshold's verdict: ``side`` is above, below or at its limit, ``cannot tell`` or ``no data``."""

    name: str
    passed: bool
    value: float | None
    limit: float
    line: str
    side: str
    interval: tuple[float | None, float | None] | None
    breached: bool  # credibly on the wrong side (what stops a test early)
    abort: bool

    def as_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "value": self.value, "limit": self.limit,
                "line": self.line, "side": self.side, "interval": list(self.interval) if self.interval else None,
                "breached": self.breached, "abort": self.abort}


def label(th: Threshold, key: str | None = None) -> str:
    """What the line calls the measure: ``p95 commit``, ``fleet rate in the last 30 s``, ``throttled failure
    ratio``, ``lock LOCK#x utilization``."""
    col = COLUMN_LABELS.get(th.column or "", th.column or "")
    default_rows = "all" if th.column == "wait_ms" else "ok"
    rows = "" if th.rows == default_rows else f" ({QUALIFIERS[th.rows]})"
    if th.stat == "quantile":
        return f"p{(th.q or 0) * 100:g} {col}{rows}"
    if th.stat in ("mean", "max", "min"):
        return f"{th.stat} {col}{rows}"
    if th.stat == "rate":
        what = f"rate of {col}" if th.column else "fleet rate"
        return what + (f" in the last {th.last_s:g} s" if th.last_s else "")
    if th.stat == "failure_ratio":
        return f"{th.kind} failure ratio" if th.kind else "failure ratio"
    return f"lock {key} utilization" if key else "lock utilization"


def _rows(th: Threshold, obs: Observed) -> np.ndarray:
    return {"ok": obs.ok, "failed": ~obs.ok, "all": np.ones(len(obs.ok), dtype=bool)}[th.rows]


def _window(th: Threshold, obs: Observed) -> tuple[float, float]:
    """The stretch a rate counts over: the whole span, or its last ``last_s`` seconds."""
    b = obs.seconds
    return (max(0.0, b - th.last_s), b) if th.last_s else (0.0, b)


def measure(th: Threshold, obs: Observed, z: float = Z95) -> Measured:
    """The threshold's measure on the observed rows, with its interval at ``z``."""
    if th.stat in ("quantile", "mean", "max", "min"):
        return _measure_values(th, obs, z)
    if th.stat == "rate":
        return _measure_rate(th, obs, z)
    if th.stat == "failure_ratio":
        return _measure_failure_ratio(th, obs, z)
    return _measure_lock(th, obs)


def _measure_values(th: Threshold, obs: Observed, z: float) -> Measured:
    """A column's percentile (order-statistic interval), mean (Student's t), maximum or minimum (exact)."""
    values = obs.column(th.column or "")[_rows(th, obs)]
    values = values[np.isfinite(values)]
    what = ROW_WORDS[th.rows] if th.column != "wait_ms" or th.rows != "all" else "arrivals"
    n = len(values)
    if n == 0:
        return Measured(None, None, None, 0, what)
    if th.stat == "quantile":
        q = th.q or 0.5
        lo, hi = quantile_interval(values, q, z)
        half = z * math.sqrt(n * q * (1 - q))
        open_lo, open_hi = math.floor(n * q - half) < 1, math.ceil(n * q + half) > n
        (value,) = numbers.quantiles(values, (q,))
        return Measured(value, None if open_lo else lo, None if open_hi else hi, n, what)
    if th.stat == "mean":
        mean = float(values.mean())
        if n < 2:
            return Measured(mean, None, None, n, what)
        p = 0.975 if z == Z95 else 1 - (1 - _level(z)) / 2
        half = t_quantile(n - 1, p) * float(values.std(ddof=1)) / math.sqrt(n)
        return Measured(mean, mean - half, mean + half, n, what)
    v = float(values.max() if th.stat == "max" else values.min())
    return Measured(v, v, v, n, what, exact=True)


def _measure_rate(th: Threshold, obs: Observed, z: float) -> Measured:
    """Successes (or a column's total) per second of the span or its last ``last_s``, Poisson interval."""
    a, b = _window(th, obs)
    inside = obs.ok & (obs.t_end > a) & (obs.t_end <= b) if a > 0 else obs.ok & (obs.t_end <= b)
    seconds = b - a
    total = float(np.nansum(obs.column(th.column)[inside])) if th.column else float(inside.sum())
    if seconds <= 0:
        return Measured(None, None, None, 0, "seconds")
    lo, hi = rate_interval(total, seconds, z=z)
    return Measured(numbers.per_second(total, seconds), lo, hi, int(inside.sum()), "successful iterations")


def _measure_failure_ratio(th: Threshold, obs: Observed, z: float) -> Measured:
    """Failed iterations (of one kind, or any) over all iterations, Wilson's interval."""
    n = len(obs.ok)
    failed = ~obs.ok if th.kind is None else (~obs.ok & (obs.error_kind == th.kind))
    k = int(failed.sum())
    ratio = numbers.failure_ratio(k, n)
    if ratio is None:
        return Measured(None, None, None, 0, "iterations")
    lo, hi = wilson_interval(k, n, z)
    return Measured(ratio, lo, hi, n, "iterations")


def _measure_lock(th: Threshold, obs: Observed) -> Measured:
    """The busiest shared lock key's busy share (any key's when none is shared), its windows' interval."""
    shared = [x for x in obs.locks or [] if x.holders >= 2] or list(obs.locks or [])
    if not shared:
        return Measured(None, None, None, 0, "lock keys")
    top = max(shared, key=lambda x: x.busy)
    lo, hi = top.interval if top.interval else (None, None)
    return Measured(top.busy, lo, hi, top.holders, "holders", label=label(th, top.key))


def _level(z: float) -> float:
    """The two-sided level of a normal ``z`` (0.95 for 1.96)."""
    return math.erf(z / math.sqrt(2))


def _holds(op: str, x: float, limit: float) -> bool:
    return {"<": x < limit, "<=": x <= limit, ">": x > limit, ">=": x >= limit}[op]


def judge(th: Threshold, obs: Observed, undecided: str = "pass", z: float = Z95) -> Judgement:
    """The threshold on the observed rows: held, failed, or cannot tell (counted as ``undecided`` says)."""
    m = measure(th, obs, z)
    name, limit = m.label or label(th), show_limit(th, th.limit)
    counted = "passed" if undecided == "pass" else "failed"
    if m.value is None:
        line = (f"{th.text}: cannot tell: no {m.what} to measure {name} on; counted as {counted} "
                f"(undecided = \"{undecided}\")")
        return Judgement(th.text, undecided == "pass", None, th.limit, line, "no data", None, False, th.abort)
    where = "above" if m.value > th.limit else "below" if m.value < th.limit else "at"
    if m.exact:
        passed = _holds(th.op, m.value, th.limit)
        line = f"{name} {show_limit(th, m.value)} (observed, {m.n:,} {m.what}) is {where} {limit}"
        return Judgement(th.text, passed, m.value, th.limit, line, where, (m.value, m.value), not passed, th.abort)
    interval = (m.lo, m.hi)
    shown = f"{name} {show_limit(th, m.value)} {show_interval(th, m.lo, m.hi)}"
    # a ceiling holds wholly when its interval's top holds, and is breached wholly when its bottom is (a floor:
    # the other way round)
    all_hold, all_breach = (m.hi, m.lo) if th.upper else (m.lo, m.hi)
    if all_hold is not None and _holds(th.op, all_hold, th.limit):
        line = f"{shown} is {where} {limit} ({m.n:,} {m.what})"
        return Judgement(th.text, True, m.value, th.limit, line, where, interval, False, th.abort)
    if all_breach is not None and not _holds(th.op, all_breach, th.limit):
        line = f"{shown} is {where} {limit} ({m.n:,} {m.what})"
        return Judgement(th.text, False, m.value, th.limit, line, where, interval, True, th.abort)
    line = (f"cannot tell: {shown} straddles {limit} ({m.n:,} {m.what}); counted as {counted} "
            f"(undecided = \"{undecided}\")")
    return Judgement(th.text, undecided == "pass", m.value, th.limit, line, "cannot tell", interval, False, th.abort)
