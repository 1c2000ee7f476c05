"""A run's first T seconds as a run of its own: the same fleet under the same machine conditions, shorter.

A long run's first two minutes are a two-minute run of the same fleet on the same machine at the same moment:
forecasting the long run from its own prefix takes the machine's share of the cores out of the comparison (a
separate short run may get a different share: x1.36 at equal count on the kept ``namespaced`` runs), so what
is left of the miss is the forecast's own. The cut is pure: the loaded records, nothing run again.

What the prefix keeps: the iterations that ended by T (one still running at T had not been recorded then),
each side table's rows stamped by T (the machine's CPU, the users, the probes, the keys' units, the lock events,
the observer's levels), and run.json's end moved to T, so the report sees a run T seconds long.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from harness.report.load import Run
from harness.report.series import run_span

TIMESTAMPED = ("probes", "generator", "users", "keys", "processes")  # side tables with a ``ts`` column
LOCK_TIMES = ("started_ms", "invoke_ms", "granted_ms", "end_ms")  # a lock event's first stamped time (epoch ms)


def _stamped_by(df: pd.DataFrame | None, column: str, cut: pd.Timestamp) -> pd.DataFrame | None:
    if df is None or column not in df.columns:
        return df
    return df.loc[df[column] <= cut].reset_index(drop=True)


def _locks_by(df: pd.DataFrame | None, cut_ms: float) -> pd.DataFrame | None:
    cols = [c for c in LOCK_TIMES if df is not None and c in df.columns]
    if df is None or not cols:
        return df
    first = df[cols].bfill(axis=1).iloc[:, 0].to_numpy(dtype=float)  # the first of the times the event has
    return df.loc[np.isfinite(first) & (first <= cut_ms)].reset_index(drop=True)


def prefix(run: Run, seconds: float) -> Run:
    """``run`` as it stood ``seconds`` after its load began (run.json's start, or its first iteration's). A cut
    at or past the run's end is the run itself, rows unchanged and run.json's end where it was."""
    span = run_span(run.info, run.rows)
    if seconds <= 0:
        raise ValueError(f"a prefix of {seconds} s: give a length above 0")
    cut = span.t0 + pd.Timedelta(seconds=float(seconds))
    if cut >= span.t1:
        return run
    rows = run.rows.loc[run.rows["ts_end"] <= cut].reset_index(drop=True)
    info = copy.deepcopy(run.info)
    info["ended_at"] = cut.isoformat()
    if isinstance(info.get("duration_s"), int | float):
        info["duration_s"] = float(seconds)
    side = {name: _stamped_by(getattr(run, name), "ts", cut) for name in TIMESTAMPED}
    observed = run.observed
    if observed is not None and "time" in observed.columns:
        observed = observed.loc[observed["time"] <= cut.timestamp()].reset_index(drop=True)
    return dataclasses.replace(run, info=info, rows=rows, locks=_locks_by(run.locks, cut.timestamp() * 1000.0),
                               observed=observed, **side)
