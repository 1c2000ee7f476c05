"""A run's findings and successful rows as the forecast's inputs (``harness/report/forecast/forecast.py``).

Kept apart from the forecast so the forecast stays a pure function of numbers, testable without a run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.report.forecast.forecast import LOCK_STEPS, Inputs, Term, scope_of
from harness.report.run.causes import COUNT_LABELS, STEP_LABELS


def step_column(label: str | None) -> str | None:
    return next((c for c, lab in STEP_LABELS.items() if lab == label), None) if label else None


def lock_hold(f: dict[str, Any], step: str | None) -> tuple[float | None, str | None]:
    """The lock's mean hold when a lock binds the fleet and the step that grew is done under it."""
    b = f.get("bottleneck") or {}
    if b.get("kind") != "lock" or step not in LOCK_STEPS:
        return None, None
    hold = (b.get("evidence") or {}).get("mean_hold_ms")
    return (float(hold), b.get("name")) if hold else (None, None)


QUEUEING = ("lock_wait_ms", "commit_lock_ms")  # waiting for a lock follows the steps done under it: not carried


def other_terms(f: dict[str, Any], top: str | None, scope: str) -> list[Term]:
    """Every step that grew beside the one that grew most, each against the count that explains it (none: the
    fleet's iterations), in the findings' order."""
    out = []
    for label, st in (f.get("steps") or {}).items():
        col = step_column(label)
        if col is None or col == top or col in QUEUEING or not st.get("grew"):
            continue
        drv = st.get("driver") if st.get("explained") else None
        out.append(Term(col, label, drv, COUNT_LABELS.get(drv, drv) if drv else "fleet's iterations", scope))
    return out


def inputs_of(f: dict[str, Any], ok: pd.DataFrame, t_ok: np.ndarray, users: pd.Series,
              info: dict[str, Any]) -> Inputs:
    """``ok``: the findings' successful rows (with the observer's levels joined when they drive a step);
    ``t_ok``: each row's end in seconds (NaN for a failure); ``users``: each row's user."""
    fl = f["fleet"]
    lv = fl["levels"]
    end = lv[-1]
    step = step_column(f.get("grew_most"))
    count = f.get("explained_by")
    why = None
    if step is None:
        why = "no step grew"
    elif count is None:
        why = f"the {f['grew_most']} step grew, but no count explains it: its growth is not forecast"
    keep = np.isfinite(t_ok) & (t_ok >= float(fl["warmup_s"]))
    scope = scope_of(info)
    others = other_terms(f, step, scope) if step is not None and count is not None else []
    cols = list(dict.fromkeys(c for c in (step, count, *(x for t in others for x in (t.step, t.count))) if c))
    frame = ok.loc[keep, cols].copy() if cols else pd.DataFrame(index=ok.index[keep])
    frame["t"] = t_ok[keep]
    frame["user"] = users.to_numpy()[keep]
    hold, lock = lock_hold(f, step)
    return Inputs(ok=frame, run_s=float(f["duration_s"]), warmup_s=float(fl["warmup_s"]),
                  workers=max(float(end["users"]), 1.0), successes=int(f["successes"]),
                  start_rate=float(fl["start_rate"]), end_rate=float(end["rate"]),
                  end_successes=int(end["successes"]), end_seconds=float(end["t1"] - end["t0"]),
                  step=step, step_label=f.get("grew_most"), count=count,
                  count_label=COUNT_LABELS.get(count or "", count), scope=scope,
                  lock_hold_ms=hold, lock_name=lock, why_none=why, others=others)
