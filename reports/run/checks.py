"""A scenario's pass/fail checks, computed with the report's own numbers (so CI can gate on a run).

The run's span is the load's (run.json ``started_at``..``ended_at``), so a
fleet that hangs before the end reads a rate of 0 in the last window, and the
report's stall test fails the rate check as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.run.verdict import find_stall, rate_between
from reports.series import run_span
from reports.stats import quantile_interval, rate_interval, wilson_interval

COLUMNS = ["ts_start", "ts_end", "user", "ok", "error_kind", "total_ms", "wait_ms"]  # what the checks read


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    value: float | None
    limit: float
    line: str  # what was measured against what was required, one line

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "value": self.value, "limit": self.limit, "line": self.line}


def _get(checks: Any, name: str, default: float) -> float:
    value = checks.get(name, default) if isinstance(checks, dict) else getattr(checks, name, default)
    return float(default if value is None else value)


def results(rows: pd.DataFrame, checks: Any, info: dict | None = None) -> list[CheckResult]:
    """Every configured check with its measured value; ``checks`` is a scenario's Checks or its dict."""
    if rows.empty:
        return [CheckResult("rows", False, 0, 1, "no iteration was recorded")]
    out = []
    max_ratio = _get(checks, "max_failure_ratio", 1.0)
    failed, n = int((~rows["ok"]).sum()), len(rows)
    ratio = failed / n
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
    from reports.run.dead_endpoint import dead_endpoint  # the built-in check (it imports CheckResult from here)

    dead = dead_endpoint(rows, checks, info)
    return out + ([dead] if dead is not None else [])


def _p99_wait(rows: pd.DataFrame, limit_s: float) -> CheckResult:
    """The wait's 99th percentile (every arrival, failed ones too) against ``max_p99_wait``, with its interval."""
    from reports.run.wait import waits

    w = waits(rows)
    p99 = float(w.quantile(0.99)) / 1000
    lo, hi = quantile_interval(w.to_numpy() / 1000, 0.99)
    above = p99 > limit_s
    return CheckResult("max_p99_wait", not above, p99, limit_s,
                       f"max_p99_wait: the wait's p99 {p99:.3g}s ({len(w)} arrivals; 95 % interval {lo:.3g}-"
                       f"{hi:.3g}s) is {'above' if above else 'within'} the allowed {limit_s:g}s")


def evaluate(rows: pd.DataFrame, checks: Any, info: dict | None = None) -> list[str]:
    """Return one line per failed check; empty means the run passed."""
    return [r.line for r in results(rows, checks, info) if not r.passed]
