"""The built-in check ``dead_endpoint``: a run whose last window holds only connection failures did not measure.

When the endpoint stops answering (refused, reset, DNS, TLS: the iterations' ``error_kind`` ``connection``), the
workers back off (``harness/load/backoff.py``) and the run goes on recording failures that measure nothing but
the dead endpoint. Unless the scenario says ``[checks] dead_endpoint = false``, a last window (the run's last
``WINDOW_S`` seconds, or ``[checks] window`` when that is shorter) in which every iteration that ended failed to
connect fails the run: one line on stderr, exit 3, as every check. The window is short on purpose: an endpoint
that died a while before the end leaves a shorter stretch than the rate checks' 30 s, and it is the end of the
run that says whether the endpoint was still there.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.report.run.check_result import CheckResult
from harness.report.series import run_span, seconds_since

CONNECTION = "connection"
WINDOW_S = 10.0


def dead_endpoint(rows: pd.DataFrame, checks: Any, info: dict | None = None) -> CheckResult | None:
    """The check's failure, or None: it passed, it is turned off, or there were no rows (a passing check adds
    nothing to the checks a scenario configured)."""
    get = checks.get if isinstance(checks, dict) else lambda k, d: getattr(checks, k, d)
    if rows.empty or not get("dead_endpoint", True):
        return None
    span = run_span(info or {}, rows)
    window = min(WINDOW_S, float(get("window_s", 30.0) or 30.0), span.seconds)
    end = seconds_since(rows["ts_end"], span.t0)
    last = rows[end >= span.seconds - window]
    if last.empty or not ((~last["ok"]) & (last["error_kind"] == CONNECTION)).all():
        return None
    return CheckResult("dead_endpoint", False, float(len(last)), 0.0,
                       f"dead_endpoint: every one of the {len(last)} iterations in the last {window:.0f}s failed to "
                       "connect (refused, reset, DNS or TLS): the endpoint stopped answering (set [checks] "
                       "dead_endpoint = false to allow it)")
