"""A scenario's pass/fail checks, computed from the recorded rows (so CI can gate on a run)."""

from __future__ import annotations

import pandas as pd

from harness.load.scenario import Checks


def evaluate(rows: pd.DataFrame, checks: Checks) -> list[str]:
    """Return one line per failed check; empty means the run passed."""
    if rows.empty:
        return ["no iteration was recorded"]
    failed = []
    ratio = float((~rows["ok"]).mean())
    if ratio > checks.max_failure_ratio:
        failed.append(f"failure ratio {ratio:.1%} is above the allowed {checks.max_failure_ratio:.1%}")
    if checks.min_rate_last_window > 0:
        end = rows["ts_end"].max()
        start = max(rows["ts_start"].min(), end - pd.Timedelta(seconds=checks.window_s))
        span = max((end - start).total_seconds(), 1e-9)
        ok = rows[(rows["ts_end"] > start) & rows["ok"]]
        rate = len(ok) / span
        if rate < checks.min_rate_last_window:
            failed.append(f"fleet rate {rate:.3f} it/s in the last {span:.0f}s is below the required "
                          f"{checks.min_rate_last_window:g} it/s")
    return failed
