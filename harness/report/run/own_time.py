"""The datastore's own time per iteration beside the fleet's rate (command and swamp drivers).

Under the command driver an iteration is mostly a process's start and exit (swamp: deno and its module graph,
1.2-2.5 s, 72-86 % of an iteration), so the fleet's rate barely moves while the datastore's own time (the
steps' spans) doubles: a report that leads with the rate alone calls a run flat whose datastore grew. This is
the first screen's line that says both, from the successful iterations of the start and end segments (the
same stretches the rate's verdict compares), with the geometric means' ratio and its 95 % interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.report.load import STEP_COLUMNS
from harness.report.stats import mean_change

HIDES = 0.5  # the rate "hides" the growth when it moved less than half of what the datastore's time did


def own_time(rows: pd.DataFrame, early: pd.DataFrame, late: pd.DataFrame, fleet: dict[str, Any]) -> dict | None:
    """``{"early_ms", "late_ms", "growth", "interval", "grew", "rate_ratio", "outside_share", "iteration_ms",
    "hidden", "sentence"}`` for a run whose rows come from commands (``command_ms`` filled); None otherwise.
    ``early`` and ``late`` are the successful rows of the start and end segments."""
    if "command_ms" not in rows.columns or not rows["command_ms"].notna().any():
        return None
    ok = rows[rows["ok"].astype(bool) & rows["command_ms"].notna()]
    own_all = _own(ok)
    if not own_all.notna().any():
        return None  # no step's span in any successful iteration: the spans' note says so
    total = ok["total_ms"].to_numpy(dtype=float)
    outside = float(np.nanmedian(np.clip(1.0 - own_all.to_numpy(dtype=float) / total, 0.0, 1.0)))
    lv = fleet["levels"]
    r0, r1 = float(lv[0]["rate"]), float(lv[-1]["rate"])
    out: dict[str, Any] = {"early_ms": None, "late_ms": None, "growth": None, "interval": None, "grew": False,
                           "rate_start": r0, "rate_end": r1, "rate_ratio": r1 / r0 if r0 > 0 else None,
                           "outside_share": outside, "iteration_ms": float(np.median(total)), "hidden": False}
    a, b = _own(early).dropna().to_numpy(dtype=float), _own(late).dropna().to_numpy(dtype=float)
    c = mean_change(a, b, log=True) if len(a) and len(b) else None
    if c is not None and c.ratio is not None:
        out.update(early_ms=c.early, late_ms=c.late, growth=c.ratio, interval=[c.lo, c.hi], grew=c.grew)
        # hidden: the datastore's time grew while the rate fell by less than half of that growth's share
        rr = out["rate_ratio"]
        out["hidden"] = bool(c.grew and rr is not None and 1 / max(rr, 1e-9) - 1 < HIDES * (c.ratio - 1))
    out["sentence"] = _sentence(out, float(np.nanmedian(own_all.to_numpy(dtype=float))))
    return out


def _own(rows: pd.DataFrame) -> pd.Series:
    """Each iteration's datastore time: its steps' spans added (null where no step's span came)."""
    cols = [c for c in STEP_COLUMNS if c in rows.columns]
    return rows[cols].sum(axis=1, min_count=1) if cols else pd.Series(np.nan, index=rows.index)


def _sentence(o: dict[str, Any], median_ms: float) -> str:
    outside = (f"the commands' own start and exit are {o['outside_share'] * 100:.0f} % of an iteration "
               f"({o['iteration_ms']:,.0f} ms at the median)")
    rate = f"{o['rate_start']:.3g} -> {o['rate_end']:.3g} it/s"
    if o["rate_ratio"] is not None:
        rate += f" (x{o['rate_ratio']:.2f})"
    if o["growth"] is None:
        return (f"The datastore's own time per iteration (its steps' spans): a median {median_ms:,.0f} ms (too few "
                f"successful iterations at the start and end to compare) beside the fleet's rate {rate}; {outside}.")
    lo, hi = o["interval"]
    moved = (f"x{o['growth']:.2f} [{lo:.2f}-{hi:.2f}], grew" if o["grew"]
             else f"x{o['growth']:.2f} [{lo:.2f}-{hi:.2f}], no credible change")
    head = (f"The datastore's own time per iteration (its steps' spans): {o['early_ms']:,.0f} -> "
            f"{o['late_ms']:,.0f} ms ({moved}) while the fleet's rate went {rate}")
    if o["hidden"]:
        return f"{head}: {outside}, so the rate hides the datastore's growth."
    return f"{head}; {outside}."
