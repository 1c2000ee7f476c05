"""Locust's ``/stats/requests`` JSON, as the harness's web UI shows it (no Locust import: a pure function).

Locust counts each step as a request and sorts its table by name; for a
person reading the UI the steps belong in loop order and the header's rate
and failure % belong to the iteration. Only the UI's JSON changes: Locust's
own console output and CSVs keep every step under its own name.
"""

from __future__ import annotations

LOOP_ORDER = ("lock", "pull", "method", "push", "commit", "export", "delete", "prune", "release")
# Steps that belong to one of the loop's, listed right after it ("4b", "9b"; in the rows their time is the
# parent's or a column of its own): two-phase sync's wait for the global lock before the commit, and the garbage
# a fenced commit left, collected after the release (docs/run-directory.md). Unnumbered, ``collect`` sorted
# between "9 release" and the total, a step the docs did not list (issue 54).
SUB_STEPS = {"commit_lock": ("push", "commit lock"), "collect": ("release", "collect")}
ITERATION = "iteration"
ITERATION_LABEL = "∑ iteration"  # sorts after the numbered steps in the UI's name-sorted table
TOTAL_LABEL = "Aggregated (every step)"


def _position(name: str) -> tuple[int, int]:
    """Where a step sits in the loop: its parent's place, then 0 for the step itself and 1 for a sub-step."""
    if name in SUB_STEPS:
        return LOOP_ORDER.index(SUB_STEPS[name][0]), 1
    return LOOP_ORDER.index(name), 0


def ui_name(name: str) -> str:
    """A step's name as the UI lists it: numbered in loop order (the UI's table sorts by name)."""
    if name in LOOP_ORDER:
        return f"{LOOP_ORDER.index(name) + 1} {name}"
    if name in SUB_STEPS:
        return f"{_position(name)[0] + 1}b {SUB_STEPS[name][1]}"
    return ITERATION_LABEL if name == ITERATION else name


def stats_for_ui(data: dict, iteration: dict | None, current_percentiles: dict | None,
                 header: dict | None = None) -> dict:
    """Steps in loop order then the iteration, the total last; the header's numbers from the iteration, or
    (``header``: ``tab.header``'s) the harness tab's own, so that the header and the tab show one number."""
    out = dict(data)
    stats = [dict(s) for s in data.get("stats", [])]
    total = stats[-1:] if stats and stats[-1].get("name") == "Aggregated" else []
    entries = stats[: len(stats) - len(total)]

    def order(s: dict) -> tuple:
        name = s.get("name", "")
        known = name in LOOP_ORDER or name in SUB_STEPS
        return (_position(name) if known else (len(LOOP_ORDER) + (name == ITERATION), 0), name)

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
    if header is not None:
        out.update(header)
    return out
