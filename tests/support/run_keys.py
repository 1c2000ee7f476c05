"""The key structure of run.json and summary.json, so a change that drops or renames a key is caught.

Values differ run to run; the keys are the contract readers (reports, notebooks, CI) depend on.
Maps keyed by data (Locust processes, fault operations) are folded to one placeholder key.
"""

from __future__ import annotations

from typing import Any

# dotted paths whose keys are data, not schema
DYNAMIC = {"processes": "<process>", "scenario.fidelity.config.faults": "<operation>",
           "fidelity.faults": "<operation>"}


def key_paths(doc: Any, prefix: str = "", dynamic: dict[str, str] | None = None, depth: int | None = None) -> set[str]:
    """Every dotted key path of ``doc`` (lists as ``[]``, their first element's keys under it)."""
    dynamic = DYNAMIC if dynamic is None else dynamic
    out: set[str] = set()
    if depth == 0:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            name = dynamic.get(prefix, k) if prefix in dynamic else k
            path = f"{prefix}.{name}" if prefix else name
            out.add(path)
            out |= key_paths(v, path, dynamic, None if depth is None else depth - 1)
    elif isinstance(doc, list) and doc:
        out |= key_paths(doc[0], prefix + "[]", dynamic, depth)
    return out


def run_json_keys(info: dict) -> list[str]:
    """run.json: every key, nested."""
    return sorted(key_paths(info))


def summary_keys(summary: dict) -> list[str]:
    """summary.json: its top level, each run's entry and the findings' first level (deeper keys follow the data)."""
    out = {k for k in summary}
    for run in summary.get("runs", [])[:1]:
        out |= {f"runs[].{k}" for k in run}
        out |= {f"runs[].findings.{k}" for k in run.get("findings", {})}
    return sorted(out)


# Keys added to the run directory's contract since the fixture was made, each by the issue that documents it.
ADDED = {
    "stand_in.s3", "stand_in.s3.name", "stand_in.s3.version",  # S3's own stand-in (SeaweedFS), issue 22
    # what the fleet is bound by (issue 21)
    "runs[].findings.bottleneck", "runs[].findings.bottleneck_moved", "runs[].findings.bottlenecks",
    "runs[].findings.failure_story", "runs[].findings.utilization", "runs[].findings.verdict",
    "notes",  # what the user need not act on (an endpoint without TTL), kept out of stderr (issue 26)
    "runs[].findings.limits",  # the next ceilings: item size and per-key throughput forecasts (issue 24)
    "fidelity.gsi_lag",  # how long after its write an item shows in a GSI (issue 34)
    "runs[].findings.wait", "runs[].findings.stages",  # an open fleet's wait and queue; a load shape's stages (36)
    "runs[].findings.spans",  # the columns no span filled; the command driver's spans (issue 46)
    # the parts that died (run.json failed_parts, only then) and the connection failures' error kind (issue 44)
    "runs[].findings.failed_parts", "runs[].findings.errors.connection",
    "runs[].findings.observed",  # the datastore's own state read from outside (observed.csv), issue 47
    # one outcome, said alike everywhere: run.json's how it ended, summary.json's whole outcome (issue 54)
    "outcome", "outcome_line", "runs[].findings.outcome", "tests[].outcome", "tests[].outcome_line",
    # the rate forecast from what grows, what it costs on AWS, where the rate changed (issue 59)
    "runs[].findings.forecast", "runs[].findings.cost", "runs[].findings.changes",
    "fidelity.spike_s",  # what an injected latency spike adds, the front's faults for any client (issue 57)
    "runs[].findings.own_time",  # a command run's datastore time per iteration beside the rate (issue 56)
}


def changes(now: list[str] | set[str], before: list[str] | set[str]) -> dict[str, list[str]]:
    """What a run's keys lost against ``before``, and what they gained beyond the scenario's own fields.

    The scenario section grows with every scenario option (``scenario.fleet.ramp_s``, ...); ``ADDED`` lists the
    documented additions since; anything else added, and anything lost or renamed, changes the contract.
    """
    now, before = set(now), set(before)
    return {"lost": sorted(before - now),
            "added": sorted(k for k in now - before if not k.startswith("scenario.") and k not in ADDED)}
