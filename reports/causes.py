"""Why the rate moved: each step's time against the count that drives it, the stand-in, the load generator.

Everything here reads successful iterations only (a failed iteration is fast
and does no work; averaging it in would move every mean with the failure
ratio). A step "grew" when the mean of its time late in the run is credibly
above the mean early on (Welch interval on the ratio, whole interval above 1)
by at least 20 % and 1 ms. Its driver "explains" the growth when the driver
grew credibly too and the two rise together iteration by iteration (rank
correlation). Lock wait is queueing for the lock: when a step done under the
lock grew, that step is the cause and lock wait follows it; lock wait is named
only when nothing else grew (then more attempts per acquisition, i.e.
contention, is its driver).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from reports.load import COUNT_COLUMNS, STEP_COLUMNS
from reports.stats import Change, mean_change, rank_trend
from reports.verdict import Span, seconds_since

STEP_LABELS = {"lock_wait_ms": "lock wait", "pull_ms": "pull", "method_ms": "method", "push_ms": "push",
               "commit_ms": "commit", "export_ms": "export", "delete_ms": "delete", "prune_ms": "prune"}
COUNT_LABELS = {"pull_items_read": "items read per pull", "index_entries_written": "index entries written per commit",
                "catalog_rows": "catalog rows", "files_pushed": "files pushed per sync",
                "lock_attempts": "lock attempts per iteration", "read_units": "read units per iteration",
                "write_units": "write units per iteration"}
STEP_DRIVERS = {"pull_ms": "pull_items_read", "commit_ms": "index_entries_written", "export_ms": "catalog_rows",
                "push_ms": "files_pushed", "prune_ms": "catalog_rows", "lock_wait_ms": "lock_attempts"}
STEP_GROWTH = 0.2  # a step must grow by a fifth ...
STEP_MIN_MS = 1.0  # ... and by a millisecond to count
COUNT_GROWTH = 0.2
RHO_MIN = 0.3  # step time and driver must rise together, iteration by iteration (and significantly)
CORR_SAMPLE = 100_000  # rows the rank correlation looks at (a random subset of a bigger run)
PROBE_GROWTH = 0.25
PROBE_MIN = 3  # samples in each third of the load before the probe is compared
SATURATED_CPU = 90.0
SATURATED_SHARE = 0.2  # a fifth of a process's samples at >= 90 % is "a material part of the run"


def between(ok: pd.DataFrame, t: np.ndarray, a: float, b: float) -> pd.DataFrame:
    return ok[(t >= a) & (t <= b)]


def change_dict(c: Change | None, trend: tuple[float, int, bool, bool] | None = None) -> dict[str, Any]:
    """A change as the summary shows it; it ``grew`` when material and either test supports it."""
    if c is None:
        return {"first": None, "last": None, "growth": None, "interval": None, "grew": False, "fell": False,
                "trend": None, "n": [0, 0], "note": "too few successful iterations to compare"}
    note = None
    if c.ratio is None:
        note = "0 at the start" if c.late > 0 else "always 0"
    rho, n, up, down = trend or (0.0, 0, False, False)
    return {"first": c.early, "last": c.late, "growth": c.ratio,
            "interval": None if c.lo is None else [c.lo, c.hi],
            "grew": bool(c.material_up and (c.credibly_up or up)),
            "fell": bool(c.material_down and (c.credibly_down or down)),
            "trend": {"rho": rho, "n": n, "rising": up, "falling": down} if trend else None,
            "n": [c.n_early, c.n_late], "note": note}


class Stretch:
    """Successful iterations early and late in the run, and all of them in between (for the trend)."""

    def __init__(self, ok: pd.DataFrame, t_ok: np.ndarray, early: tuple[float, float], late: tuple[float, float]):
        self.early = between(ok, t_ok, *early)
        self.late = between(ok, t_ok, *late)
        inside = (t_ok >= early[0]) & (t_ok <= late[1])
        self.all, self.t = ok[inside], t_ok[inside]
        if len(self.all) > CORR_SAMPLE:
            pick = np.random.default_rng(0).choice(len(self.all), CORR_SAMPLE, replace=False)
            self.all, self.t = self.all.iloc[pick], self.t[pick]

    def change(self, col: str, material: float, min_abs: float = 0.0) -> dict[str, Any]:
        c = mean_change(self.early[col].to_numpy(), self.late[col].to_numpy(), material=material, min_abs=min_abs)
        return change_dict(c, rank_trend(self.t, self.all[col].to_numpy()))


def count_changes(stretch: Stretch) -> dict[str, dict[str, Any]]:
    return {col: {"label": COUNT_LABELS[col], **stretch.change(col, COUNT_GROWTH)} for col in COUNT_COLUMNS}


def step_causes(stretch: Stretch) -> dict[str, Any]:
    """Per step: did its time grow, did its driver grow with it; and the step that grew most."""
    rows = stretch.all
    steps: dict[str, dict[str, Any]] = {}
    for col in STEP_COLUMNS:
        if not rows[col].any():
            continue
        entry: dict[str, Any] = {"label": STEP_LABELS[col], **stretch.change(col, STEP_GROWTH, STEP_MIN_MS),
                                 "driver": STEP_DRIVERS.get(col)}
        drv = entry["driver"]
        if drv is not None and rows[drv].any():
            d = stretch.change(drv, COUNT_GROWTH)
            rho, n, follows, _ = rank_trend(rows[drv].to_numpy(), rows[col].to_numpy())
            follows = follows and rho >= RHO_MIN
            # The step's time follows its driver iteration by iteration and the driver grew credibly: the
            # step grew through it, even when its own noise hides the rise over a short run.
            if d["grew"] and follows and entry["first"] is not None:
                mat = mean_change(stretch.early[col].to_numpy(), stretch.late[col].to_numpy(),
                                  material=STEP_GROWTH, min_abs=STEP_MIN_MS)
                entry["grew"] = bool(entry["grew"] or (mat is not None and mat.material_up))
            entry.update(driver_label=COUNT_LABELS[drv], driver_change=d, rho=rho, rho_n=n,
                         explained=bool(entry["grew"] and d["grew"] and follows))
        else:
            entry.update(driver_label=COUNT_LABELS.get(drv or ""), driver_change=None, rho=None, rho_n=0,
                         explained=False)
        steps[col] = entry
    grown = {k: v for k, v in steps.items() if v["grew"]}
    work = {k: v for k, v in grown.items() if k != "lock_wait_ms"}
    pool = work or grown
    top = max(pool, key=lambda k: pool[k]["last"] - pool[k]["first"]) if pool else None
    return {"steps": steps, "grew_most": top,
            "explained_by": steps[top]["driver"] if top and steps[top]["explained"] else None}


def probe_trend(probes: pd.DataFrame | None, span: Span) -> dict[str, Any] | None:
    """The constant-cost probe at the start against the end (first and last third of the load's span)."""
    if probes is None or probes.empty:
        return None
    t = seconds_since(probes["ts"], span.t0)
    inside = probes[(t >= 0) & (t <= span.seconds)]
    if inside.empty:
        return None
    op = str(inside["op"].mode().iloc[0])
    p = inside[inside["op"] == op]
    tp = seconds_since(p["ts"], span.t0)
    third = span.seconds / 3
    early, late = p.loc[tp <= third, "ms"].to_numpy(), p.loc[tp >= 2 * third, "ms"].to_numpy()
    c = mean_change(early, late, log=True, material=PROBE_GROWTH) if min(len(early), len(late)) >= PROBE_MIN else None
    out: dict[str, Any] = {"op": op, "samples": int(len(p)), "ops": sorted(inside["op"].unique().tolist()),
                           "first_ms": None, "last_ms": None, "growth": None, "interval": None, "slowed": False}
    if c is not None:
        out.update(first_ms=c.early, last_ms=c.late, growth=c.ratio, interval=[c.lo, c.hi], slowed=c.grew,
                   n=[c.n_early, c.n_late])
    else:
        out["note"] = f"{len(early)} and {len(late)} samples in the first and last third: too few to compare"
    return out


def generator_load(gen: pd.DataFrame | None, span: Span) -> dict[str, Any] | None:
    """The load generator's CPU per Locust process over the load's span; the ones that were the ceiling."""
    if gen is None or gen.empty:
        return None
    t = seconds_since(gen["ts"], span.t0)
    inside = gen[(t >= 0) & (t <= span.seconds)]
    if inside.empty:
        return None
    procs = {}
    for name, g in inside.groupby("process"):
        cpu = g["cpu_percent"].to_numpy(dtype=float)
        share = float((cpu >= SATURATED_CPU).mean())
        procs[str(name)] = {"samples": int(len(cpu)), "median": float(np.median(cpu)), "max": float(cpu.max()),
                            "saturated_share": share, "sends_load": str(name) != "master",
                            "saturated": bool(str(name) != "master" and share >= SATURATED_SHARE and len(cpu) >= 3)}
    ceiling = sorted(k for k, v in procs.items() if v["saturated"])
    return {"processes": procs, "saturated": ceiling, "ceiling": bool(ceiling)}
