"""The harness tab's table: live numbers in words, one row per measure.

Columns: the measure, its value over the last few seconds, its value over the
whole test so far, and how it is measured. Values come from ``live.Summary``
(the report's definitions), the fidelity layer's capacity model and the
stand-in probe's samples.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from harness.aws.fidelity.layer import FidelityConfig
from harness.load.web.live import REPORT_STEPS, Summary
from harness.metrics import bound as bounds
from harness.metrics.bound import Resource
from harness.record.schema import STEP_LABELS

COLUMNS = [{"key": "metric", "title": "Measure"}, {"key": "now", "title": "Last 10 s"},
           {"key": "test", "title": "Whole test"}, {"key": "how", "title": "How it is measured"}]
COUNT_LABELS = {"pull_items_read": ("items read per pull", "mean per successful iteration"),
                "index_entries_written": ("index entries per commit", "mean per successful iteration"),
                "catalog_rows": ("catalog rows", "mean per successful iteration (the namespace's catalog)"),
                "files_pushed": ("files pushed per sync", "mean per successful iteration")}


@dataclass(frozen=True)
class Capacity:
    """The table's modelled capacity (units/s) for the whole fleet; None where the model has no limit."""

    read: float | None
    write: float | None
    basis: str


def modelled_capacity(cfg: FidelityConfig | None) -> Capacity | None:
    """What the fidelity layer lets the whole table take (every process's share together)."""
    if cfg is None or not cfg.enabled or cfg.dynamodb is None:
        return None
    cap = cfg.dynamodb
    if cap.mode == "provisioned":
        basis = "provisioned"
    elif cap.max_write or cap.max_read:
        basis = "on-demand maximum"
    else:
        basis = "on-demand warm throughput"

    def limit(kind: str) -> float:
        table = cap.table_limit(kind)
        return table if table is not None else (cap.read if kind == "read" else cap.write) * cap.scale

    scaled = f", scale {cap.scale:g}" if cap.scale != 1 else ""
    return Capacity(read=limit("read"), write=limit("write"), basis=f"{basis}{scaled}")


def probe_view(path: Path, min_per_third: int = 3) -> dict | None:
    """The stand-in probe so far, the way the report reads it: one operation (the most sampled), the median of
    the first third of its samples against the median of the last third (None before any sample).

    One sample against another would move with every scheduling hiccup, and the probe alternates operations of
    different cost, so neither a single latest sample nor a mix of operations says whether the backend slowed.
    """
    if not path.exists():
        return None
    try:
        with path.open(newline="") as f:
            samples = [(r.get("op", ""), float(r["ms"])) for r in csv.DictReader(f) if r.get("ms")]
    except (OSError, ValueError, KeyError):
        return None
    if not samples:
        return None
    ops = [op for op, _ in samples]
    op = max(set(ops), key=ops.count)
    ms = [m for o, m in samples if o == op]
    third = len(ms) // 3
    if third < min_per_third:
        return {"op": op, "last_ms": statistics.median(ms[-min_per_third:]), "first_ms": None, "samples": len(ms)}
    return {"op": op, "last_ms": statistics.median(ms[-third:]), "first_ms": statistics.median(ms[:third]),
            "samples": len(ms)}


def _rate(x: float) -> str:
    return f"{x:.2f} it/s"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f} ms" if x >= 10 else f"{x:.1f} ms"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _units(used: float, limit: float | None, unit: str) -> str:
    if limit is None:
        return f"{used:,.1f} {unit}/s"
    return f"{used:,.1f} of {limit:,.0f} {unit}/s ({used / limit:.0%})" if limit > 0 else f"{used:,.1f} {unit}/s"


def capacity_resources(s: Summary, capacity: Capacity | None) -> list[Resource]:
    """The table's read and write units against the modelled capacity (a hard limit only when not on-demand's
    warm throughput, which DynamoDB scales past), as the report's ``capacity`` resources."""
    if capacity is None:
        return []
    hard = "warm throughput" not in capacity.basis
    out = []
    for kind, limit in (("read", capacity.read), ("write", capacity.write)):
        if limit:
            used = s.units_per_s[f"{kind}_units"]
            out.append(Resource("capacity", f"table {kind}", used / limit, None,
                                {"units": kind, "used_per_s": used, "limit_per_s": limit, "basis": capacity.basis,
                                 "what": "the table and its GSIs together"}, candidate=hard))
    return out


def _bound_cell(b: Resource | None) -> str:
    """The bound in the words of the sentence beside it (``bounds.sentence``), short.

    A step's utilization is the workers' time inside an iteration, not the step's share of it: "its own time in
    commit, 94 %" beside "inside an iteration 98 % of the time, 41 % of it in commit" read as two claims (issue 54).
    """
    if b is None:
        return f"nothing: no resource above {100 * bounds.BUSY:.0f} % busy"
    pct = f"{100 * b.utilization:.0f} %"
    if b.kind == "step":
        share = b.evidence.get("share")
        return (f"its own iteration time: inside an iteration {pct} of the time"
                + (f", {100 * share:.0f} % of it in {b.name}" if share is not None else ""))
    if b.kind == "lock":
        return f"the lock {b.name}: busy {pct} of the time"
    if b.kind == "capacity":
        unit = "RCU" if b.evidence.get("units") == "read" else "WCU"
        return f"{b.evidence.get('what', b.name)}: {pct} of the modelled {unit}/s"
    if b.kind == "generator":
        return f"the load generator, Locust process {b.name}: {pct} CPU"
    if b.kind == "machine":
        return f"the machine: {b.evidence.get('cores', '?')} cores {pct} busy"
    if b.kind == "stand-in":
        return f"the stand-in {b.name}: {pct}" + (" of a core" if b.evidence.get("basis") == "cpu" else " busy")
    return f"{b.label()}: {pct}"


def header(now: Summary | None, whole: Summary) -> dict[str, float]:
    """The page header's numbers, from the tab's own summaries: its rate is the tab's "Successful iterations / s"
    over the last 10 s (nothing running: 0), its failure ratio the tab's whole-test "Iteration failure %".

    Locust's own current rate (every request, its own window, late by a worker's report) read 0 while the tab
    read 6.29 it/s, and kept its last value after Stop (issue 54): the header now shows the tab's number.
    """
    return {"current_rps": round(now.ok_per_s, 2) if now is not None else 0.0,
            "current_fail_per_sec": round(now.failed_per_s, 2) if now is not None else 0.0,
            "fail_ratio": whole.failure_ratio or 0.0}


def bound_rows(now: Summary, whole: Summary, capacity: Capacity | None) -> list[dict]:
    """What the fleet is bound by (``harness.metrics.bound``, the report's rule), and the busiest lock."""
    res_now = now.resources + capacity_resources(now, capacity)
    res_test = whole.resources + capacity_resources(whole, capacity)
    b_now, b_test = bounds.choose(res_now), bounds.choose(res_test)
    rows = [{"metric": "Bound by", "now": _bound_cell(b_now), "test": _bound_cell(b_test),
             "how": bounds.sentence(b_test, res_test, "so far")}]
    locks = [r for r in res_test if r.kind == "lock" and r.candidate]
    if locks:
        top = max(locks, key=lambda r: r.utilization)
        here = next((r for r in res_now if r.kind == "lock" and r.name == top.name), None)

        def cell(r: Resource | None) -> str:
            return "–" if r is None else f"{100 * r.utilization:.0f} % / {100 * r.evidence.get('held', 0):.0f} %"

        rows.append({"metric": "Lock busy / held", "now": cell(here), "test": cell(top),
                     "how": f"{top.name}: busy = held, or free with a waiter retrying; held = a holder had it"})
    return rows


def table(now: Summary, whole: Summary, *, capacity: Capacity | None, throttles_now: float | None,
          throttles_test: float | None, probe: dict | None) -> list[dict]:
    """The tab's rows (dicts keyed by ``COLUMNS``), in the order a reader needs them.

    The first row also carries the whole test's chart series under ``charts`` (Locust's table shows only
    the ``COLUMNS`` keys; the harness panel's script draws the charts from it).
    """
    rows = bound_rows(now, whole, capacity)
    rows[0]["header"] = header(now, whole)
    if whole.charts is not None:
        rows[0]["charts"] = whole.charts
    rows += [
        {"metric": "Successful iterations / s", "now": _rate(now.ok_per_s), "test": _rate(whole.ok_per_s),
         "how": "iterations that ended without error, per second (the report's fleet rate)"},
        {"metric": "Failed iterations / s", "now": _rate(now.failed_per_s), "test": _rate(whole.failed_per_s),
         "how": "iterations that ended in an error, per second"},
        {"metric": "Iteration failure %", "now": _pct(now.failure_ratio), "test": _pct(whole.failure_ratio),
         "how": f"failed / all iterations ({whole.failed:,} of {whole.iterations:,} so far)"},
        {"metric": "Lock wait p50 / p95", "now": f"{_ms(now.lock_p50)} / {_ms(now.lock_p95)}",
         "test": f"{_ms(whole.lock_p50)} / {_ms(whole.lock_p95)}",
         "how": "time to acquire the datastore lock, successful iterations (failures are counted above)"},
    ]
    # the global lock's wait before the commit is a step of two-phase sync only: listed when it took time
    steps = [c for c in REPORT_STEPS if c != "commit_lock_ms" or whole.step_shares[c]]
    for i, c in enumerate(steps):
        rows.append({"metric": f"Time in {STEP_LABELS[c]}", "now": _pct(now.step_shares[c]),
                     "test": _pct(whole.step_shares[c]),
                     "how": "share of a successful iteration's time: the step's mean ms over the sum of the "
                            "steps' means"
                     if i == 0 else ""})
    wcu = capacity.write if capacity else None
    rcu = capacity.read if capacity else None
    basis = f"modelled capacity ({capacity.basis})" if capacity else "no capacity model (fidelity layer off)"
    rows += [
        {"metric": "Write units", "now": _units(now.units_per_s["write_units"], wcu, "WCU"),
         "test": _units(whole.units_per_s["write_units"], wcu, "WCU"),
         "how": f"consumed (DynamoDB's 1 KB rules) against the table's {basis}"},
        {"metric": "Read units", "now": _units(now.units_per_s["read_units"], rcu, "RCU"),
         "test": _units(whole.units_per_s["read_units"], rcu, "RCU"),
         "how": f"consumed (4 KB rules) against the table's {basis}"},
        {"metric": "Throttles / s",
         "now": "–" if throttles_now is None else f"{throttles_now:.2f}",
         "test": "–" if throttles_test is None else f"{throttles_test:.2f}",
         "how": "throttled responses the capacity model sent (retried or not)" if throttles_test is not None
         else "counted by the fidelity layer's model, which is off here"},
    ]
    for c, (label, how) in COUNT_LABELS.items():
        rows.append({"metric": label[0].upper() + label[1:], "now": _num(now.counts[c]),
                     "test": _num(whole.counts[c]), "how": how})
    rows.append(probe_row(probe))
    return rows


def stopped(rows: list[dict]) -> list[dict]:
    """A stopped test's rows: the whole test's numbers kept, nothing "now" (its rates 0, every other cell "–"),
    the header's rate 0: the last window of a test that ended is no current rate (issue 54)."""
    out = []
    for r in rows:
        r = dict(r)
        r["now"] = "0.00 it/s" if r["now"].endswith(" it/s") else "–"
        out.append(r)
    if out:
        out[0]["now"] = "stopped"
        if "header" in out[0]:
            out[0]["header"] = {**out[0]["header"], "current_rps": 0.0, "current_fail_per_sec": 0.0}
    return out


def probe_row(probe: dict | None) -> dict:
    """The harness tab's probe row (see ``probe_view``)."""
    if not probe:
        return {"metric": "Stand-in probe", "now": "–", "test": "–",
                "how": "a constant-cost read every second (no samples yet, or no probe on this run)"}
    first = probe["first_ms"]
    test = ("too few samples to compare" if first is None
            else f"first third {_ms(first)}, x{probe['last_ms'] / first:.2f}" if first > 0 else "–")
    return {"metric": f"Stand-in probe ({probe['op']})", "now": _ms(probe["last_ms"]), "test": test,
            "how": f"a constant-cost read every second, median of the last third of its {probe['samples']} "
                   "samples against the first third: if it grows, the backend itself got slower"}
