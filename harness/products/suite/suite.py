"""A suite run's numbers: per scenario, layout and phase, every trial's milliseconds and what the phase did.

Reads only the run directory (``suite-run.json``, ``suite-trials.jsonl``), so
the results can be rebuilt from the files alone, and writes ``suite.json``:
``{"suite", "backend", "results": [{"scenario", "layout", "phase", "trials",
"samples_ms", "min_ms", "median_ms", "mean_ms", "max_ms", "requests",
"bytes"}]}`` plus what a reader needs beside it (the shape, the trial count,
the stand-in, the scenarios that do not apply to a layout and why, errors).
``requests`` and ``bytes`` (sent + received) are per trial, the median over
the trials; ``total`` is the whole operation (its requests and bytes the sum
of its phases'; ``lock.held`` overlaps the phases inside the lock and is not
summed).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

RUN_JSON, TRIALS_JSONL, SUITE_JSON = "suite-run.json", "suite-trials.jsonl", "suite.json"
TOTAL = "total"
NOT_ADDITIVE = ("lock.held", TOTAL)


def read_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    d = Path(run_dir)
    info = json.loads((d / RUN_JSON).read_text())
    trials = []
    path = d / TRIALS_JSONL
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                trials.append(json.loads(line))
    return info, trials


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs)) if xs else 0.0


def _stats(samples: list[float]) -> dict[str, float]:
    return {"min_ms": round(min(samples), 3), "median_ms": round(_median(samples), 3),
            "mean_ms": round(statistics.fmean(samples), 3), "max_ms": round(max(samples), 3)}


def _per_trial(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """One trial's counts over the phases given (summed)."""
    req: Counter[str] = Counter()
    out = {"bytes_sent": 0, "bytes_received": 0, "read_units": 0.0, "write_units": 0.0, "items_read": 0}
    for p in phases:
        req.update(p.get("requests", {}))
        for k in out:
            out[k] += p.get(k, 0)
    return {"requests": req, **out}


def results(info: dict[str, Any], trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The result rows: per (scenario, layout), the total first, then each phase in the order it ran."""
    filters = {int(s["number"]): tuple(s.get("phases") or ()) for s in info.get("scenarios", [])}
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for t in trials:
        groups.setdefault((int(t["number"]), t["layout"]), []).append(t)
    layout_order = {x: i for i, x in enumerate(info.get("layouts", []))}
    rows = []
    for (number, layout), ts in sorted(groups.items(), key=lambda kv: (kv[0][0], layout_order.get(kv[0][1], 99))):
        ts = sorted(ts, key=lambda t: t["trial"])
        for name in _phase_names(ts, filters.get(number) or ()):
            samples, counts, details = _samples(ts, name)
            if samples:
                rows.append(_row(number, ts[0]["scenario"], layout, name, samples, counts, details))
    return rows


def _phase_names(ts: list[dict[str, Any]], keep: tuple[str, ...]) -> list[str]:
    """The total, then each phase in the order the trials first ran it (only those in ``keep`` when given)."""
    order: list[str] = []
    for t in ts:
        order += [p["phase"] for p in t["phases"] if p["phase"] not in order]
    return [TOTAL] + [n for n in order if not keep or n in keep]


def _samples(ts: list[dict[str, Any]], name: str) -> tuple[list[float], list[dict[str, Any]], list[str]]:
    """Per trial that ran the phase: its milliseconds and counts (summed over its runs of the phase; the total's
    counts over the additive phases), and the details the phase said."""
    samples, counts, details = [], [], []
    for t in ts:
        if name == TOTAL:
            samples.append(float(t["total_ms"]))
            counts.append(_per_trial([p for p in t["phases"] if p["phase"] not in NOT_ADDITIVE]))
            continue
        got = [p for p in t["phases"] if p["phase"] == name]
        if got:
            samples.append(sum(float(p["ms"]) for p in got))
            counts.append(_per_trial(got))
            details += [p.get("detail", "") for p in got if p.get("detail")]
    return samples, counts, details


def _row(number: int, scenario: str, layout: str, name: str, samples: list[float], counts: list[dict[str, Any]],
         details: list[str]) -> dict[str, Any]:
    """One result row: the samples' statistics and each count's median over the trials."""
    ops = sorted({op for c in counts for op in c["requests"]})
    return {"number": number, "scenario": scenario, "layout": layout, "phase": name,
            "trials": len(samples), "samples_ms": [round(x, 3) for x in samples], **_stats(samples),
            "requests": _median([sum(c["requests"].values()) for c in counts]),
            "bytes": _median([c["bytes_sent"] + c["bytes_received"] for c in counts]),
            "requests_by_op": {op: _median([c["requests"].get(op, 0) for c in counts]) for op in ops},
            "bytes_sent": _median([c["bytes_sent"] for c in counts]),
            "bytes_received": _median([c["bytes_received"] for c in counts]),
            "read_units": round(_median([c["read_units"] for c in counts]), 3),
            "write_units": round(_median([c["write_units"] for c in counts]), 3),
            "items_read": _median([c["items_read"] for c in counts]),
            "detail": Counter(details).most_common(1)[0][0] if details else ""}


def summary(run_dir: str | Path) -> dict[str, Any]:
    """``suite.json``'s document for a run directory."""
    info, trials = read_run(run_dir)
    return {"suite": info.get("suite"), "backend": info.get("backend"), "layouts": info.get("layouts", []),
            "quick": info.get("quick", False), "trials": info.get("trials"), "shape": info.get("shape"),
            "stand_in": info.get("stand_in"), "latency": info.get("latency"), "started_at": info.get("started_at"),
            "ended_at": info.get("ended_at"), "versions": info.get("versions"),
            "results": results(info, trials),
            "not_applicable": [{k: o[k] for k in ("number", "scenario", "layout", "not_applicable")}
                               for o in info.get("outcomes", []) if o.get("not_applicable")],
            "errors": [{k: o[k] for k in ("number", "scenario", "layout", "error", "trials")}
                       for o in info.get("outcomes", []) if o.get("error")],
            "scenarios": info.get("scenarios", [])}


def write_summary(run_dir: str | Path) -> dict[str, Any]:
    doc = summary(run_dir)
    (Path(run_dir) / SUITE_JSON).write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def read_summary(path: str | Path) -> dict[str, Any]:
    """A ``suite.json`` (or the run directory holding one), checked enough to compare against."""
    p = Path(path)
    if p.is_dir():
        p = p / SUITE_JSON
    doc = json.loads(p.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ValueError("it has no \"results\" list")
    for r in doc["results"]:
        if not isinstance(r, dict) or not {"scenario", "layout", "phase", "samples_ms"} <= set(r):
            raise ValueError("a result lacks scenario, layout, phase or samples_ms")
    return doc
