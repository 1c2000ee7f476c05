"""Threshold expressions (``p95(commit_ms) < 200ms``): the grammar, parsed before anything starts.

A threshold says what must hold, the way k6's thresholds and Gatling's assertions do::

    MEASURE OP LIMIT          OP: <  <=  >  >=

    pNN(COLUMN[, ROWS])       a percentile (p50, p95, p99, p99.9) of a step column, work count or wait_ms
    mean(COLUMN[, ROWS])      its mean; max(...) and min(...) its extremes
    rate                      successful iterations a second over the load's span (the fleet's rate)
    rate(last 30s)            ... over the span's last 30 s
    rate(COLUMN[, last 30s])  a work count's (or units') total a second
    failure_ratio             failed iterations over all iterations
    failure_ratio(KIND)       ... of one error kind (throttled, lock_timeout, conflict, fenced, timeout, other)
    utilization(lock)         the busiest shared lock key's busy share (held, or free with a waiter)

``ROWS`` is ``ok`` (successful iterations, the report's step times; the default), ``all`` or ``failed``;
``wait_ms`` defaults to ``all`` (every arrival, as ``max_p99_wait``). A limit carries its unit: ``200ms``,
``1.5s`` (a bare number is ms) for ``*_ms`` columns; ``2/s``, ``120/min`` (bare: per second) for rates;
``1%`` or ``0.01`` for ratios; a bare number for counts. A malformed one is a ``HarnessError`` naming where it
came from, so ``harness run`` refuses it in one line (exit 2) before it starts anything.

Pure: no other layer's imports (the scenario's parser, the command line, the report and the Locust process
all parse with it). Which columns and error kinds exist is the record's to say (``harness.gates.columns``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.core.errors import HarnessError

OPS = ("<", "<=", ">", ">=")
ROW_SETS = ("ok", "all", "failed")
UNDECIDED = ("pass", "fail")
STATS = ("quantile", "mean", "max", "min", "rate", "failure_ratio", "utilization")
GRAMMAR = ("pNN(COLUMN), mean(COLUMN), max(COLUMN), min(COLUMN), rate, rate(last 30s), rate(COLUMN), "
           "failure_ratio, failure_ratio(KIND) or utilization(lock), then <, <=, > or >= and a limit")

_EXPR = re.compile(r"^\s*(?P<fn>[A-Za-z_][A-Za-z0-9_.]*)\s*(?:\((?P<args>[^()]*)\))?\s*"
                   r"(?P<op><=|>=|<|>|==|=|!=)\s*(?P<limit>.*?)\s*$")
_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)$")
_NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
_TIME = re.compile(rf"^{_NUMBER}\s*(ms|s|m|min|h)?$")
_TIME_UNITS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "min": 60_000.0, "h": 3_600_000.0}
_RATE = re.compile(rf"^{_NUMBER}\s*(?:(?:it(?:erations)?)?\s*/\s*(s|sec|m|min|h))?$")
_RATE_UNITS = {"s": 1.0, "sec": 1.0, "m": 1 / 60, "min": 1 / 60, "h": 1 / 3600}
_RATIO = re.compile(rf"^{_NUMBER}\s*(%)?$")
_COUNT = re.compile(rf"^{_NUMBER}$")
_LAST = re.compile(r"^last\s+(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$")


@dataclass(frozen=True)
class ThresholdSpec:
    """A threshold as a scenario or the command line gives it: its text and whether a breach stops the test."""

    check: str
    abort: bool = False


@dataclass(frozen=True)
class Threshold:
    """One parsed threshold; ``limit`` in the measure's base unit (ms, per second, a fraction, a count)."""

    text: str  # as written: its name in the checks, the report and the JUnit file
    stat: str  # one of STATS
    op: str
    limit: float
    column: str | None = None  # the column of a percentile, mean, extreme or rate(COLUMN)
    q: float | None = None  # a percentile's quantile (0.95)
    rows: str = "ok"  # which iterations a column statistic reads (ROW_SETS)
    kind: str | None = None  # failure_ratio(KIND)
    last_s: float | None = None  # rate(last 30s)
    unit: str = ""  # the limit's unit as written ("ms", "s", "%", "/s", "/min", ""), to say it back
    abort: bool = False

    @property
    def quantity(self) -> str:
        """What kind of number it is: ``time`` (ms), ``count``, ``rate`` (per second) or ``ratio``."""
        if self.stat in ("failure_ratio", "utilization"):
            return "ratio"
        if self.stat == "rate":
            return "rate"
        return "time" if is_time_column(self.column or "") else "count"

    @property
    def upper(self) -> bool:
        """The limit is a ceiling (``<``, ``<=``): a breach lies above it."""
        return self.op in ("<", "<=")


def is_time_column(column: str) -> bool:
    return column.endswith("_ms")


def parse(text: str, where: str = "--check", abort: bool = False) -> Threshold:
    """One expression, or a one-line ``HarnessError`` saying what is wrong with it and what is expected."""
    def fail(what: str) -> HarnessError:
        return HarnessError(f"{where} {text!r}: {what}")

    if not isinstance(text, str) or not text.strip():
        raise HarnessError(f"{where}: a threshold is an expression such as \"p95(commit_ms) < 200ms\" "
                           f"(got {text!r})")
    m = _EXPR.match(text)
    if not m:
        raise fail(f"not a threshold: expected MEASURE OP LIMIT, MEASURE one of {GRAMMAR}")
    fn, op, limit = m.group("fn").lower(), m.group("op"), m.group("limit")
    args = [a.strip() for a in m.group("args").split(",")] if m.group("args") is not None else []
    if op not in OPS:
        raise fail(f"{op!r} is no comparison a threshold can hold to: use <, <=, > or >=")
    if not limit:
        raise fail(f"no limit after {op!r} (e.g. {op} 200ms)")
    pct = _PERCENTILE.match(fn)
    if pct or fn in ("mean", "avg", "max", "min"):
        return _column_stat(text, fn, pct, args, op, limit, abort, fail)
    if fn == "rate":
        return _rate(text, args, op, limit, abort, fail)
    if fn == "failure_ratio":
        if len(args) > 1 or (args and not args[0]):
            raise fail("failure_ratio takes at most one error kind, e.g. failure_ratio(throttled)")
        value, unit = _ratio(limit, fail)
        return Threshold(text.strip(), "failure_ratio", op, value, kind=args[0] if args else None, unit=unit,
                         abort=abort)
    if fn in ("utilization", "utilisation", "lock_utilization", "lock_utilisation"):
        if (fn.startswith("lock") and args) or (not fn.startswith("lock") and args != ["lock"]):
            raise fail("utilization names its resource: utilization(lock), the busiest shared lock key")
        value, unit = _ratio(limit, fail)
        return Threshold(text.strip(), "utilization", op, value, column="lock", unit=unit, abort=abort)
    raise fail(f"unknown measure {fn!r}: use {GRAMMAR}")


def _column_stat(text: str, fn: str, pct: re.Match | None, args: list[str], op: str, limit: str, abort: bool,
                 fail) -> Threshold:
    if not args or not args[0] or len(args) > 2:
        raise fail(f"{fn} reads one column, e.g. {fn}(commit_ms) or {fn}(commit_ms, all)")
    column = args[0]
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", column):
        raise fail(f"{column!r} is not a column name (see docs/run-directory.md)")
    rows = args[1] if len(args) == 2 else ("all" if column == "wait_ms" else "ok")
    if rows not in ROW_SETS:
        raise fail(f"which iterations: {rows!r} is none of {', '.join(ROW_SETS)}")
    q = None
    if pct:
        q = float(pct.group(1)) / 100
        if not 0 < q < 1:
            raise fail(f"a percentile is between p0 and p100 (exclusive), got {fn}")
    value, unit = _time(limit, fail) if is_time_column(column) else _count(limit, fail)
    stat = "quantile" if pct else {"avg": "mean"}.get(fn, fn)
    return Threshold(text.strip(), stat, op, value, column=column, q=q, rows=rows, unit=unit, abort=abort)


def _rate(text: str, args: list[str], op: str, limit: str, abort: bool, fail) -> Threshold:
    column, last_s = None, None
    for a in args:
        m = _LAST.match(a.lower())
        if m:
            if last_s is not None:
                raise fail("rate takes one window: rate(last 30s)")
            last_s = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2) or "s"]
            if last_s <= 0:
                raise fail("the window of rate(last ...) must be positive")
        elif re.fullmatch(r"[a-z_][a-z0-9_]*", a) and column is None:
            column = a
        else:
            raise fail(f"rate's arguments are a column and/or a window (rate(last 30s), rate(files_pushed)), "
                       f"got {a!r}")
    if column is not None and is_time_column(column):
        raise fail(f"rate({column}) would add up milliseconds: rate reads a count (rate(files_pushed)) or "
                   f"nothing (the fleet's rate)")
    m = _RATE.match(limit.lower())
    if not m:
        raise fail(f"a rate's limit is a number a second or a minute, e.g. 2/s or 120/min, got {limit!r}")
    per = m.group(2) or "s"
    unit = "/min" if per in ("m", "min") else "/h" if per == "h" else "/s"
    return Threshold(text.strip(), "rate", op, float(m.group(1)) * _RATE_UNITS[per], column=column,
                     last_s=last_s, unit=unit, abort=abort)


def _time(limit: str, fail) -> tuple[float, str]:
    m = _TIME.match(limit.lower())
    if not m:
        raise fail(f"a time's limit is milliseconds or seconds, e.g. 200ms or 1.5s, got {limit!r}")
    unit = m.group(2) or "ms"
    unit = "m" if unit == "min" else unit
    return float(m.group(1)) * _TIME_UNITS[unit], unit


def _count(limit: str, fail) -> tuple[float, str]:
    if not _COUNT.match(limit):
        raise fail(f"a count's limit is a plain number, e.g. 500, got {limit!r}")
    return float(limit), ""


def _ratio(limit: str, fail) -> tuple[float, str]:
    m = _RATIO.match(limit)
    if not m:
        raise fail(f"a ratio's limit is a percentage or a fraction, e.g. 1% or 0.01, got {limit!r}")
    value = float(m.group(1)) / (100 if m.group(2) else 1)
    if value > 1:
        raise fail(f"a ratio is at most 100 % (1), got {limit!r}")
    return value, "%" if m.group(2) else ""


def parse_all(specs: tuple[ThresholdSpec, ...] | list[ThresholdSpec], where: str = "[checks] thresholds"
              ) -> list[Threshold]:
    """Every spec parsed, in order; the first malformed one is the error."""
    return [parse(s.check, where, s.abort) for s in specs]


def in_unit(th: Threshold, value: float) -> float:
    """A base-unit value (ms, per second, fraction) in the unit the threshold's limit was written in."""
    q = th.quantity
    if q == "time":
        return value / _TIME_UNITS[th.unit or "ms"]
    if q == "rate":
        return value / {"/s": 1.0, "/min": 1 / 60, "/h": 1 / 3600}[th.unit or "/s"]
    return value * 100 if q == "ratio" else value


def _suffix(th: Threshold) -> str:
    q = th.quantity
    return {"time": f" {th.unit or 'ms'}", "rate": th.unit or "/s", "ratio": " %"}.get(q, "")


def show_limit(th: Threshold, value: float) -> str:
    """A value in the unit the threshold's limit was written in: ``231 ms``, ``1.5 s``, ``2.5 %``, ``3/s``."""
    return f"{_num(in_unit(th, value))}{_suffix(th)}"


def show_interval(th: Threshold, lo: float | None, hi: float | None) -> str:
    """``[214-250]`` in the limit's unit (``...`` for an end the data leave open)."""
    def one(x: float | None) -> str:
        return "..." if x is None else _num(in_unit(th, x))
    return f"[{one(lo)}-{one(hi)}]"


def _num(x: float) -> str:
    """Three significant figures, no exponent for everyday sizes (231, 0.0425, 1.23e+04 only past 1e6)."""
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e6 or ax < 1e-4:
        return f"{x:.3g}"
    if ax >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"
