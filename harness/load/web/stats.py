"""Locust's ``/stats/requests`` JSON, as the harness's web UI shows it (no Locust import: a pure function).

Locust counts each step as a request and sorts its table by name; for a
person reading the UI the steps belong in loop order and the header's rate
and failure % belong to the iteration. Only the UI's JSON changes: Locust's
own console output and CSVs keep every step under its own name.
"""

from __future__ import annotations

LOOP_ORDER = ("lock", "pull", "method", "push", "commit", "export", "delete", "prune", "release")
ITERATION = "iteration"
ITERATION_LABEL = "∑ iteration"  # sorts after the numbered steps in the UI's name-sorted table
TOTAL_LABEL = "Aggregated (every step)"


def ui_name(name: str) -> str:
    """A step's name as the UI lists it: numbered in loop order (the UI's table sorts by name)."""
    if name in LOOP_ORDER:
        return f"{LOOP_ORDER.index(name) + 1} {name}"
    return ITERATION_LABEL if name == ITERATION else name


def stats_for_ui(data: dict, iteration: dict | None, current_percentiles: dict | None) -> dict:
    """Steps in loop order then the iteration, the total last; the header's numbers from the iteration."""
    out = dict(data)
    stats = [dict(s) for s in data.get("stats", [])]
    total = stats[-1:] if stats and stats[-1].get("name") == "Aggregated" else []
    entries = stats[: len(stats) - len(total)]

    def order(s: dict) -> tuple:
        name = s.get("name", "")
        return (LOOP_ORDER.index(name) if name in LOOP_ORDER else len(LOOP_ORDER) + (name == ITERATION), name)

    entries.sort(key=order)
    for s in entries:
        s["name"] = ui_name(s.get("name", ""))
    for s in total:
        s["name"] = TOTAL_LABEL
    out["stats"] = entries + total
    if iteration is not None:
        for key in ("current_rps", "current_fail_per_sec", "total_rps", "total_fail_per_sec"):
            out[key] = iteration[key]
        n = iteration["num_requests"]
        out["fail_ratio"] = iteration["num_failures"] / n if n else 0.0
        if current_percentiles is not None:
            out["current_response_time_percentiles"] = current_percentiles
    return out
