"""A scenario's pass/fail checks, computed with the report's own numbers (so CI can gate on a run).

The run's span is the load's (run.json ``started_at``..``ended_at``), so a
fleet that hangs before the end reads a rate of 0 in the last window, and the
report's stall test fails the rate check as well.

Beside the four named checks (``max_failure_ratio``, ``min_rate_last_window``, ``max_p99_wait``, ``safety``,
the last judged by ``harness run`` against the table; a ``max_failure_ratio`` of 100 %, the default, cannot fail
and is no check), ``[checks] thresholds`` and ``--check`` are
expressions on any column (``harness.gates``), each judged with its interval; a test a threshold stopped
early (run.json ``aborted``) fails with the line that stopped it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.intervals import quantile_interval, wilson_interval
from harness.gates import expr
from harness.gates.columns import needed
from harness.gates.judge import LockShare, Observed, judge
from harness.metrics import numbers
from harness.record.reader import read_rows
from harness.report.run.check_result import CheckResult
from harness.report.run.dead_endpoint import dead_endpoint
from harness.report.run.verdict import find_stall, rate_between
from harness.report.series import run_span, seconds_since
from harness.report.stats import rate_interval

COLUMNS = ["ts_start", "ts_end", "user", "ok", "error_kind", "total_ms", "wait_ms"]  # what the checks read


def _get(checks: Any, name: str, default: float) -> float:
    value = checks.get(name, default) if isinstance(checks, dict) else getattr(checks, name, default)
    return float(default if value is None else value)


def thresholds(checks: Any) -> list[expr.Threshold]:
    """The scenario's (and the command line's) thresholds, parsed; ``checks`` a Checks or its dict."""
    specs = checks.get("thresholds", ()) if isinstance(checks, dict) else getattr(checks, "thresholds", ())
    return [expr.parse(s["check"], abort=bool(s.get("abort"))) if isinstance(s, dict) else
            expr.parse(s.check, abort=s.abort) for s in specs or ()]


def undecided(checks: Any) -> str:
    value = checks.get("undecided") if isinstance(checks, dict) else getattr(checks, "undecided", None)
    return value or "pass"


Locks = list[LockShare] | Callable[[], list[LockShare]] | None
NO_ROWS = "no iteration was recorded"  # an empty run's one failed check, whatever its scenario asked


def results(rows: pd.DataFrame, checks: Any, info: dict | None = None, locks: Locks = None) -> list[CheckResult]:
    """Every configured check with its measured value; ``checks`` is a scenario's Checks or its dict.

    ``locks``: each lock key's busy share (or how to get them), for ``utilization(lock)`` thresholds.
    """
    if rows.empty:
        return [CheckResult("rows", False, 0, 1, NO_ROWS)]
    out = [*_aborted(info or {})]
    max_ratio = _get(checks, "max_failure_ratio", 1.0)
    if max_ratio < 1.0:  # at 100 % (the default) no run can fail it: no check, so never "passed 1/1"
        failed, n = int((~rows["ok"]).sum()), len(rows)
        ratio = numbers.failure_ratio(failed, n) or 0.0  # n > 0: the rows are not empty
        lo, hi = wilson_interval(failed, n)
        verdict = "above the allowed" if ratio > max_ratio else "within the allowed"
        out.append(CheckResult("max_failure_ratio", ratio <= max_ratio, ratio, max_ratio,
                               f"failure ratio {ratio:.1%} ({failed} of {n}; 95 % interval {lo:.1%}-{hi:.1%}) is "
                               f"{verdict} {max_ratio:.1%}"))
    min_rate = _get(checks, "min_rate_last_window", 0.0)
    if min_rate > 0:
        span = run_span(info or {}, rows)
        window = min(_get(checks, "window_s", 30.0), span.seconds)
        count, rate, lo, hi = rate_between(rows, span, span.seconds - window, span.seconds)
        below = rate < min_rate
        out.append(CheckResult(
            "min_rate_last_window", not below, rate, min_rate,
            f"fleet rate {rate:.3f} it/s in the last {window:.0f}s is {'below' if below else 'at or above'} the "
            f"required {min_rate:g} it/s ({count} successful iterations; 95 % interval {lo:.3g}-{hi:.3g})"))
        stalled = find_stall(rows, span)
        if stalled is not None:
            lo0, hi0 = rate_interval(0, stalled["gap_s"])
            out.append(CheckResult(
                "stalled", False, 0.0, min_rate,
                f"no successful iteration in the last {stalled['gap_s']:.0f}s of the run (stalled; 95 % interval "
                f"on the rate there {lo0:.3g}-{hi0:.3g} it/s)"))
    max_wait = _get(checks, "max_p99_wait_s", 0.0)
    if max_wait > 0:
        out.append(_p99_wait(rows, max_wait))
    ths = thresholds(checks)
    if ths:
        obs = observed(rows, info or {})
        if any(t.stat == "utilization" for t in ths):
            obs.locks = locks() if callable(locks) else locks
        rule = undecided(checks)
        for t in ths:
            j = judge(t, obs, rule)
            out.append(CheckResult(j.name, j.passed, j.value, j.limit, j.line, j.side, j.interval, j.abort))

    dead = dead_endpoint(rows, checks, info)
    return out + ([dead] if dead is not None else [])


def _aborted(info: dict) -> list[CheckResult]:
    """A test a threshold stopped early (``harness.gates.live``): it failed, whatever the rows say later."""
    a = info.get("aborted")
    if not isinstance(a, dict):
        return []
    return [CheckResult("aborted", False, a.get("value"), a.get("limit") or 0.0,
                        f"stopped early at {a.get('at_s', 0):.0f} s of the load: {a.get('line')}")]


def observed(rows: pd.DataFrame, info: dict) -> Observed:
    """The rows as the thresholds' judge reads them (``harness.gates.judge``): times from the load's start."""
    from harness.report.run.wait import waits

    span = run_span(info, rows)

    def column(name: str) -> np.ndarray:
        if name == "wait_ms":  # a closed fleet's (or an older row's) wait is its total
            return waits(rows).to_numpy(dtype=float)
        if name not in rows.columns:
            return np.full(len(rows), np.nan)
        return pd.to_numeric(rows[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    return Observed(span.seconds, rows["ok"].to_numpy(dtype=bool), rows["error_kind"].to_numpy(dtype=object),
                    seconds_since(rows["ts_end"], span.t0), column)


def lock_shares(usage: Any) -> list[LockShare]:
    """Each lock key's busy share over the whole span, with its interval (``harness.report.run.utilization.Usage``)."""
    out = []
    for key, tl in sorted(usage.locks.items()):
        r = usage.lock(key, tl, 0.0, usage.span.seconds)
        out.append(LockShare(key, float(r.utilization), r.interval, int(tl.holder_count)))
    return out


def columns(checks: Any) -> list[str]:
    """The row columns a test's checks read: the named checks' and every threshold's."""
    return sorted({*COLUMNS, *needed(thresholds(checks))})


def run_locks(run_dir: Path, info: dict) -> Callable[[], list[LockShare]]:
    """How to get a recorded test's lock shares (its history read only when a threshold asks)."""
    def locks() -> list[LockShare]:
        from harness.report.load import REPORT_COLUMNS, lock_events
        from harness.report.run.utilization import Usage
        from harness.report.series import pick_window

        events = lock_events(run_dir)
        if events is None:
            return []
        full = read_rows(run_dir, REPORT_COLUMNS)
        span = run_span(info, full)
        return lock_shares(Usage(full, info, span, pick_window(span.seconds, int(full["ok"].sum())), locks=events))

    return locks


def _p99_wait(rows: pd.DataFrame, limit_s: float) -> CheckResult:
    """The wait's 99th percentile (every arrival, failed ones too) against ``max_p99_wait``, with its interval."""
    from harness.report.run.wait import waits

    w = waits(rows)
    p99 = float(w.quantile(0.99)) / 1000
    lo, hi = quantile_interval(w.to_numpy() / 1000, 0.99)
    above = p99 > limit_s
    return CheckResult("max_p99_wait", not above, p99, limit_s,
                       f"max_p99_wait: the wait's p99 {p99:.3g}s ({len(w)} arrivals; 95 % interval {lo:.3g}-"
                       f"{hi:.3g}s) is {'above' if above else 'within'} the allowed {limit_s:g}s")


def evaluate(rows: pd.DataFrame, checks: Any, info: dict | None = None, locks: Locks = None) -> list[str]:
    """Return one line per failed check; empty means the run passed."""
    return [r.line for r in results(rows, checks, info, locks) if not r.passed]
