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

from harness.record.schema import STEP_LABELS
from harness.report.load import COUNT_COLUMNS, STEP_COLUMNS
from harness.report.run.observed import ROW_LABELS
from harness.report.series import Span, seconds_since
from harness.report.stats import Change, mean_change, rank_trend

COUNT_LABELS = {"pull_items_read": "items read per pull", "index_entries_written": "index entries written per commit",
                "catalog_rows": "catalog rows", "files_pushed": "files pushed per sync",
                "lock_attempts": "lock attempts per iteration", "read_units": "read units per iteration",
                "write_units": "write units per iteration"}
STEP_DRIVERS = {"pull_ms": "pull_items_read", "commit_ms": "index_entries_written", "export_ms": "catalog_rows",
                "push_ms": "files_pushed", "prune_ms": "catalog_rows", "lock_wait_ms": "lock_attempts",
                "commit_lock_ms": "lock_attempts"}
REQUEST_PREFIX = {c: ("lock" if c == "lock_wait_ms" else c.removesuffix("_ms")) for c in STEP_COLUMNS}
# The counts that explain a step when its own driver does not: the requests it made (the design asked for more)
REQUEST_DRIVERS = {c: ([f"{p}_queries"] if p == "pull" else []) + [f"{p}_requests"] for c, p in REQUEST_PREFIX.items()}
COUNT_LABELS.update({f"{p}_requests": f"requests per {STEP_LABELS[c]}" for c, p in REQUEST_PREFIX.items()})
COUNT_LABELS["pull_queries"] = "Queries per pull"
COUNT_LABELS.update(ROW_LABELS)  # the observer's levels at each row's end: drivers where the rows carry no counts
COUNT_NOTES = {"pull_queries": "an unscoped pull makes one Query per registered partition on DynamoDB, reads one "
                               "index object per shard on S3"}
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
    """Successful iterations early and late in the run, and all of them in between (for the trend).

    ``t_ok`` is each row's end (seconds); a row whose end is NaN (a failure, when ``ok`` is all the rows)
    is in no stretch.
    """

    def __init__(self, ok: pd.DataFrame, t_ok: np.ndarray, early: tuple[float, float], late: tuple[float, float]):
        self.early = between(ok, t_ok, *early)
        self.late = between(ok, t_ok, *late)
        inside = np.flatnonzero((t_ok >= early[0]) & (t_ok <= late[1]))
        if len(inside) > CORR_SAMPLE:  # sampled before slicing: a million-row run is not copied whole
            inside = np.sort(np.random.default_rng(0).choice(inside, CORR_SAMPLE, replace=False))
        self.all, self.t = ok.iloc[inside], t_ok[inside]

    def change(self, col: str, material: float, min_abs: float = 0.0) -> dict[str, Any]:
        """Late against early of one column; null values (a column the rows did not record) are left out."""
        e, la, y = (self.early[col].to_numpy(dtype=float), self.late[col].to_numpy(dtype=float),
                    self.all[col].to_numpy(dtype=float))
        keep = np.isfinite(y)
        c = mean_change(e[np.isfinite(e)], la[np.isfinite(la)], material=material, min_abs=min_abs)
        return change_dict(c, rank_trend(self.t[keep], y[keep]))

    def has(self, col: str) -> bool:
        """The column was recorded (not null) in this stretch's rows."""
        return col in self.all.columns and bool(self.all[col].notna().any())


def count_changes(stretch: Stretch) -> dict[str, dict[str, Any]]:
    return {col: {"label": COUNT_LABELS[col], **stretch.change(col, COUNT_GROWTH)} for col in COUNT_COLUMNS}


def _follows(rows: pd.DataFrame, drv: str, col: str) -> tuple[float, int, bool]:
    x, y = rows[drv].to_numpy(dtype=float), rows[col].to_numpy(dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    rho, n, follows, _ = rank_trend(x[keep], y[keep])
    return rho, n, bool(follows and rho >= RHO_MIN)


def _driven(stretch: Stretch, col: str, drv: str, entry: dict[str, Any]) -> dict[str, Any]:
    """Did ``drv`` grow, and does the step's time follow it iteration by iteration."""
    d = stretch.change(drv, COUNT_GROWTH)
    rho, n, follows = _follows(stretch.all, drv, col)
    # The step's time follows its driver iteration by iteration and the driver grew credibly: the
    # step grew through it, even when its own noise hides the rise over a short run.
    if d["grew"] and follows and entry["first"] is not None:
        mat = mean_change(stretch.early[col].to_numpy(), stretch.late[col].to_numpy(),
                          material=STEP_GROWTH, min_abs=STEP_MIN_MS)
        entry["grew"] = bool(entry["grew"] or (mat is not None and mat.material_up))
    return {"driver": drv, "driver_label": COUNT_LABELS[drv], "driver_change": d, "rho": rho, "rho_n": n,
            "explained": bool(entry["grew"] and d["grew"] and follows)}


def step_causes(stretch: Stretch, observed: dict[str, str] | None = None) -> dict[str, Any]:
    """Per step: did its time grow, did its driver (or, failing that, its request count) grow with it; and the
    step that grew most, with its time split into requests x time per request and the time outside them.

    ``observed``: step -> a column of the observer's levels (``harness.report.run.observed.OBSERVED_DRIVERS``), the
    driver of a step whose own count the rows do not carry (the command driver's rows)."""
    rows = stretch.all
    steps: dict[str, dict[str, Any]] = {}
    for col in STEP_COLUMNS:
        if not rows[col].any():
            continue
        drv = STEP_DRIVERS.get(col)
        seen = (observed or {}).get(col)
        if seen and stretch.has(seen) and not (drv and stretch.has(drv)):
            drv = seen
        entry: dict[str, Any] = {"label": STEP_LABELS[col], **stretch.change(col, STEP_GROWTH, STEP_MIN_MS),
                                 "driver": drv}
        if drv is not None and rows[drv].any():
            entry.update(_driven(stretch, col, drv, entry))
        else:
            entry.update(driver_label=COUNT_LABELS.get(drv or ""), driver_change=None, rho=None, rho_n=0,
                         explained=False)
        entry["primary_driver"] = drv
        if not entry["explained"]:  # the design asked for more requests: a count nobody else records
            for alt in REQUEST_DRIVERS.get(col, []):
                if not stretch.has(alt):
                    continue
                tried = _driven(stretch, col, alt, entry)
                if tried["explained"]:
                    entry.update(tried, note=COUNT_NOTES.get(alt))
                    break
        entry["requests"] = decompose(stretch, col)
        steps[col] = entry
    grown = {k: v for k, v in steps.items() if v["grew"]}
    work = {k: v for k, v in grown.items() if k != "lock_wait_ms"}
    pool = work or grown
    top = max(pool, key=lambda k: pool[k]["last"] - pool[k]["first"]) if pool else None
    return {"steps": steps, "grew_most": top,
            "explained_by": steps[top]["driver"] if top and steps[top]["explained"] else None}


def decompose(stretch: Stretch, col: str) -> dict[str, Any] | None:
    """A step's time as requests x time per request, plus the time outside its requests, early against late.

    None when the rows do not carry the step's request columns (a run recorded before they existed).
    ``grew_by`` names the factors that grew credibly and materially, largest contribution first: ``count``
    (more requests: the design), ``time per request`` (slower requests: the backend), ``outside requests``
    (client CPU, waits). Time inside requests is summed over concurrent calls, so it can exceed the step's
    wall time; the time outside is then 0.
    """
    p = REQUEST_PREFIX[col]
    n_col, ms_col = f"{p}_requests", f"{p}_request_ms"
    if not (stretch.has(n_col) and stretch.has(ms_col)):
        return None

    def part(df: pd.DataFrame) -> dict[str, Any]:
        n, ms, step = (df[n_col].to_numpy(dtype=float), df[ms_col].to_numpy(dtype=float),
                       df[col].to_numpy(dtype=float))
        keep = np.isfinite(n) & np.isfinite(ms)
        n, ms, step = n[keep], ms[keep], step[keep]
        per = np.divide(ms, n, out=np.full_like(ms, np.nan), where=n > 0)
        return {"n": n, "per": per[np.isfinite(per)], "out": np.clip(step - ms, 0, None)}

    e, la = part(stretch.early), part(stretch.late)
    count = mean_change(e["n"], la["n"], material=COUNT_GROWTH)
    per = mean_change(e["per"], la["per"], material=STEP_GROWTH, min_abs=0.05)
    out = mean_change(e["out"], la["out"], material=STEP_GROWTH, min_abs=STEP_MIN_MS)
    if count is None:
        return None
    n1, n2 = count.early, count.late
    t1 = per.early if per is not None else 0.0
    t2 = per.late if per is not None else t1
    o1, o2 = (out.early, out.late) if out is not None else (0.0, 0.0)
    contrib = {"count": (n2 - n1) * t1, "time per request": n2 * (t2 - t1), "outside requests": o2 - o1}
    grew = {"count": count.grew, "time per request": bool(per is not None and per.grew),
            "outside requests": bool(out is not None and out.grew)}
    grew_by = sorted((k for k, v in grew.items() if v), key=lambda k: -contrib[k])
    return {"requests": change_dict(count), "ms_per_request": change_dict(per), "outside_ms": change_dict(out),
            "contribution_ms": contrib, "grew_by": grew_by, "count_column": n_col}


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
