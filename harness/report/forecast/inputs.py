"""A run's findings and successful rows as the forecast's inputs (``harness/report/forecast/forecast.py``).

Kept apart from the forecast so the forecast stays a pure function of numbers, testable without a run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.record.schema import STEP_COLUMNS
from harness.report.forecast.band import dispersion
from harness.report.forecast.capacity import capacity_of
from harness.report.forecast.forecast import LOCK_STEPS, Inputs, Term, scope_of
from harness.report.run.causes import COUNT_LABELS, STEP_GROWTH, STEP_LABELS, STEP_MIN_MS
from harness.report.stats import mean_change


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
OUTSIDE = "outside_ms"  # an iteration's time outside its recorded steps (total_ms less their sum)
OUTSIDE_LABEL = "time outside the steps"
FLEET_LABEL = "fleet's iterations"  # the count of a step that grew with no recorded count to explain it


def outside_steps(ok: pd.DataFrame) -> pd.Series | None:
    """Each iteration's time outside its recorded steps: work the iteration does between timed requests (building
    an index in memory, ...), which grows with the same counts; None when the rows carry no total."""
    if "total_ms" not in ok.columns:
        return None
    steps = [c for c in STEP_COLUMNS.values() if c in ok.columns]
    return (ok["total_ms"] - ok[steps].fillna(0.0).sum(axis=1)).clip(lower=0.0)


def outside_term(f: dict[str, Any], out: pd.Series, t_ok: np.ndarray, count: str | None,
                 scope: str) -> Term | None:
    """The time outside the steps as one more term, against the count of the step that grew most, when it grew
    as a step must (late against early, by a fifth and a millisecond, credibly)."""
    (e0, e1), (l0, l1) = f["compared"]["early_s"], f["compared"]["late_s"]
    y = out.to_numpy(dtype=float)
    c = mean_change(y[(t_ok >= e0) & (t_ok <= e1)], y[(t_ok >= l0) & (t_ok <= l1)], material=STEP_GROWTH,
                    min_abs=STEP_MIN_MS)
    if c is None or not (c.material_up and c.credibly_up):
        return None
    return Term(OUTSIDE, OUTSIDE_LABEL, count, COUNT_LABELS.get(count, count) if count else FLEET_LABEL, scope)


def other_terms(f: dict[str, Any], top: str | None, scope: str) -> list[Term]:
    """Every step that grew beside the one that grew most, each against the count that explains it (none: the
    fleet's iterations), in the findings' order."""
    out = []
    for label, st in (f.get("steps") or {}).items():
        col = step_column(label)
        if col is None or col == top or col in QUEUEING or not st.get("grew"):
            continue
        drv = st.get("driver") if st.get("explained") else None
        out.append(Term(col, label, drv, COUNT_LABELS.get(drv, drv) if drv else FLEET_LABEL, scope))
    return out


def inputs_of(f: dict[str, Any], ok: pd.DataFrame, t_ok: np.ndarray, users: pd.Series,
              info: dict[str, Any], keys: pd.DataFrame | None = None) -> Inputs:
    """``ok``: the findings' successful rows (with the observer's levels joined when they drive a step);
    ``t_ok``: each row's end in seconds (NaN for a failure); ``users``: each row's user; ``keys``: keys.csv
    with ``t`` in seconds on the same clock (the capacity bound's units), when recorded."""
    fl = f["fleet"]
    lv = fl["levels"]
    end = lv[-1]
    step = step_column(f.get("grew_most"))
    count = f.get("explained_by")
    why = "no step grew" if step is None else None  # one that grew with no count: against the fleet's iterations
    keep = np.isfinite(t_ok) & (t_ok >= float(fl["warmup_s"]))
    scope = scope_of(info)
    others = other_terms(f, step, scope) if step is not None else []
    out = outside_steps(ok) if step is not None else None
    extra = outside_term(f, out, t_ok, count, scope) if out is not None else None
    others += [extra] if extra else []
    cols = list(dict.fromkeys(c for c in (step, count, *(x for t in others for x in (t.step, t.count)))
                              if c and c != OUTSIDE))
    frame = ok.loc[keep, cols].copy() if cols else pd.DataFrame(index=ok.index[keep])
    if extra:
        frame[OUTSIDE] = out.to_numpy()[keep]
    frame["t"] = t_ok[keep]
    frame["user"] = users.to_numpy()[keep]
    hold, lock = lock_hold(f, step)
    a_succ, a_sec = last_third(t_ok[keep], float(fl["warmup_s"]), float(f["duration_s"]))
    return Inputs(ok=frame, run_s=float(f["duration_s"]), warmup_s=float(fl["warmup_s"]),
                  workers=max(float(end["users"]), 1.0), successes=int(f["successes"]),
                  start_rate=float(fl["start_rate"]), end_rate=float(end["rate"]),
                  end_successes=int(end["successes"]), end_seconds=float(end["t1"] - end["t0"]),
                  step=step, step_label=f.get("grew_most"), count=count,
                  count_label=COUNT_LABELS.get(count, count) if count else FLEET_LABEL, scope=scope,
                  lock_hold_ms=hold, lock_name=lock, why_none=why, others=others, anchor_successes=a_succ,
                  anchor_seconds=a_sec,
                  dispersion=dispersion(t_ok[keep], float(fl["warmup_s"]), float(f["duration_s"]), a_sec),
                  capacity=capacity_of(info, keys, t_ok[keep], float(f["duration_s"]), float(fl["warmup_s"]),
                                       int(f["successes"]) - int(keep.sum())))


ANCHOR_SHARE = 1 / 3  # the anchor's window: the last third of the load after the warm-up


def last_third(t: np.ndarray, warmup_s: float, run_s: float) -> tuple[int | None, float | None]:
    """The successful iterations that ended in the last third of the load after the warm-up, and its seconds:
    the forecast's anchor. A third of the run's iterations, not the end segment's (a sixth, or one 20-second
    segment of a 2-minute run, which the machine's noise swings by a third); the forecast anchors it at the
    window's middle iteration, so a rate that fell across the window is not read as its end. None: no window."""
    sec = (run_s - warmup_s) * ANCHOR_SHARE
    if sec <= 0:
        return None, None
    k = int(((t >= run_s - sec) & (t <= run_s)).sum())
    return (k, sec) if k > 0 else (None, None)
