"""What a run's spans measured: the columns no span filled, and (command driver) how the spans came.

Pure functions of the rows and the spans table's counts (``harness/report/load.py`` reads them): a column that is
null in every row was not measured (a datastore whose spans say nothing of it, or a step the loop never
ran), and the report names it rather than draw it as zero; under the command driver, the iterations whose
spans never came, the bodies the receiver refused, the spans that came late or for no iteration.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.report.load import COUNT_COLUMNS, REQUEST_COLUMNS, STEP_COLUMNS
from harness.report.run.causes import COUNT_LABELS, STEP_LABELS

MEASURED = [*STEP_COLUMNS, *COUNT_COLUMNS, "requests", *REQUEST_COLUMNS]


def label(col: str) -> str:
    return STEP_LABELS.get(col) or COUNT_LABELS.get(col) or col.replace("_", " ")


def span_findings(rows: pd.DataFrame, table: dict[str, int] | None = None) -> dict[str, Any]:
    """``{"unmeasured": [columns], "command": {...} | None, "sentence": str}``."""
    unmeasured = [c for c in MEASURED if c in rows.columns and rows[c].isna().all()]
    out: dict[str, Any] = {"unmeasured": unmeasured, "command": None, "sentence": "", "no_requests": ""}
    parts = []
    if "spans" in rows.columns and rows["spans"].notna().any():
        cmd = rows[rows["spans"].notna()]
        steps = cmd[[c for c in STEP_COLUMNS if c in cmd.columns]].sum(axis=1, min_count=1).fillna(0.0)
        outside = (cmd["total_ms"] - steps).clip(lower=0.0).to_numpy(dtype=float)
        t = table or {}
        c = {"iterations": int(len(cmd)), "without_spans": int((cmd["spans"] == 0).sum()),
             "spans": int(t.get("spans", int(cmd["spans"].sum()))), "late": int(t.get("late", 0)),
             "unjoined": int(t.get("unjoined", 0)),
             "rejected_bodies": int(cmd["spans_rejected"].fillna(0).sum()) if "spans_rejected" in cmd else 0,
             "outside_steps_ms_median": float(np.median(outside)) if len(outside) else None,
             "command_ms_median": float(cmd["command_ms"].median()) if "command_ms" in cmd else None,
             "after_exit_ms_median": _median(cmd, "after_exit_ms"),
             **_without_requests(cmd), **_lock_settings(cmd)}
        out["command"] = c
        parts += _command_parts(c)
    if out["command"] and out["command"]["ok_without_requests"]:
        c = out["command"]
        n, of = c["ok_without_requests"], c["ok_iterations"]
        why = (": no request span came in the whole run, so either no iteration touched the datastore or its "
               "extension does not trace its requests (webframp's DynamoDB extension before a929b7a does not): its "
               "times are whole commands" if n == of else ": most of this run never touched the datastore, so its "
               "times are the commands' own, not the datastore's" if n * 2 > of else "")
        out["no_requests"] = (f"{n:,} of {of:,} successful iterations made no datastore request (their spans have "
                              f"none){why}")
        parts.append(out["no_requests"])
    if unmeasured:
        parts.append("not measured (no span filled them): " + ", ".join(label(x) for x in unmeasured))
    out["sentence"] = ("; ".join(parts) + ".")[:1].upper() + ("; ".join(parts) + ".")[1:] if parts else ""
    return out


def _median(rows: pd.DataFrame, col: str) -> float | None:
    if col not in rows.columns or not rows[col].notna().any():
        return None
    return float(rows[col].median())


def _without_requests(cmd: pd.DataFrame) -> dict[str, int]:
    """Successful iterations whose spans carry no datastore request (a first run that syncs nothing)."""
    ok = cmd[cmd["ok"].astype(bool)] if "ok" in cmd.columns else cmd
    req = ok["requests"] if "requests" in ok.columns else pd.Series(dtype=float)
    return {"ok_iterations": int(len(ok)), "ok_without_requests": int((req.fillna(0) == 0).sum()) if len(req) else 0}


def _lock_settings(cmd: pd.DataFrame) -> dict[str, float | None]:
    """The datastore's own lock TTL and wait, as its spans said (the largest seen)."""
    out: dict[str, float | None] = {}
    for col in ("lock_ttl_ms", "lock_timeout_ms"):
        out[col] = float(cmd[col].max()) if col in cmd.columns and cmd[col].notna().any() else None
    return out


def _command_parts(c: dict[str, Any]) -> list[str]:
    """The command driver's clauses of the spans' note: how the spans came, the driver's own wait, the
    datastore's own lock, the time outside every step."""
    parts = []
    parts.append(f"{c['spans']:,} spans came for {c['iterations']:,} iterations of the command driver")
    if c["without_spans"]:
        parts.append(f"{c['without_spans']:,} iteration{'s' if c['without_spans'] != 1 else ''} got none "
                     "(their step times are null)")
    if c["rejected_bodies"]:
        parts.append(f"{c['rejected_bodies']:,} OTLP bod{'ies' if c['rejected_bodies'] != 1 else 'y'} could not "
                     "be read (400)")
    if c["late"]:
        parts.append(f"{c['late']:,} came after their row (in the spans table, not the row)")
    if c["unjoined"]:
        parts.append(f"{c['unjoined']:,} belonged to no iteration")
    if c["after_exit_ms_median"] is not None:
        parts.append(f"the driver's own wait for spans after each exit a median {c['after_exit_ms_median']:,.2f} "
                     "ms (counted apart from the commands)")
    if c["lock_ttl_ms"] is not None:
        parts.append(f"the datastore's own lock (its spans): TTL {c['lock_ttl_ms'] / 1000:g} s, wait "
                     f"{(c['lock_timeout_ms'] or 0) / 1000:g} s (the scenario's [lock] does not reach it)")
    if c["outside_steps_ms_median"] is not None:
        parts.append(f"a median {c['outside_steps_ms_median']:,.0f} ms of each iteration was outside every "
                     "step's span (process start, imports, exit)")
    return parts
