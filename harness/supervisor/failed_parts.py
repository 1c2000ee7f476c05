"""After Locust: what died during the run, written into ``run.json`` ``failed_parts``, and whether it completed.

The supervisor's failures (``harness/supervisor/watch.py``) and those a Locust process recorded itself (the probe)
become one list, each part once, its worker named as the master named it (``worker-1``, from run.json's
``processes``), each with its one line; a headless run's ``stop_reason`` then says what stopped it (the Locust
process only saw the signal the supervisor sent). A worker process that was lost under a master the harness
does not see (``--master``: workers elsewhere) is in ``incomplete`` only; unless the scenario allows it
(``[checks] allow_lost_workers``), it fails the run the same way.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.record import outcome, runinfo
from harness.record.parts import PartFailure, merge


def _epoch(text: str | None) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


def _read(d: Path) -> dict[str, Any]:
    try:
        return runinfo.read(d)
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _tests(run_dir: Path, info: dict) -> list[tuple[Path, dict]]:
    if not info.get("session"):
        return [(run_dir, info)] if info else []
    return [(run_dir / e["dir"], _read(run_dir / e["dir"])) for e in info.get("tests", []) if e.get("dir")]


def _named(f: PartFailure, infos: list[dict]) -> PartFailure:
    """A worker watched by pid, named as its master named it (run.json's ``processes``)."""
    if f.part != "locust-worker" or f.pid is None:
        return f
    for info in infos:
        for name, p in (info.get("processes") or {}).items():
            if isinstance(p, dict) and p.get("pid") == f.pid:
                return PartFailure(f.part, str(name), f.at, f.pid, f.status, f.signal, f.detail, f.log, f.log_tail)
    return f


def _lost(tests: list[tuple[Path, dict]]) -> list[dict]:
    """Workers a master lost (``incomplete``) in tests whose scenario does not allow it."""
    out = []
    for _, info in tests:
        checks = (info.get("scenario") or {}).get("checks") or {}
        if checks.get("allow_lost_workers"):
            continue
        at = _epoch(info.get("ended_at")) or 0.0
        for gap in info.get("incomplete") or []:
            f = PartFailure("locust-worker", str(gap.get("process", "?")), at, detail=str(gap.get("reason", "")))
            d = f.as_dict(_epoch(info.get("started_at")))
            d["line"] = (f"the Locust worker process {f.name} was lost before its final report ({f.detail}); the "
                         "run did not complete")
            out.append(d)
    return out


def record(run_dir: Path, failures: list[PartFailure], stopped_by_us: bool) -> list[dict]:
    """Write every failed part into run.json (the run's, and in a web session the test's it happened in: the last
    one, as a session runs one test at a time); return them, first died first. ``stopped_by_us``: the
    supervisor stopped the test for the first of them."""
    info = _read(run_dir)
    tests = _tests(run_dir, info)
    infos = [t for _, t in tests]
    test_dir, test = tests[-1] if tests else (run_dir, info)
    t0 = _epoch(test.get("started_at"))
    found = [d for t in infos for d in t.get("failed_parts") or []]
    recorded = merge(found, [_named(f, infos).as_dict(t0) for f in failures])
    for d in recorded:
        d["line"] = PartFailure.from_dict(d).line(t0)
    failed = recorded or _lost(tests)
    if not failed:
        return []
    fields: dict[str, Any] = {"failed_parts": failed}
    if recorded and (stopped_by_us or not test.get("stop_reason")):
        fields["stop_reason"] = recorded[0]["line"]
    for d in {run_dir, test_dir}:
        if (d / runinfo.RUN_JSON).exists():
            info = runinfo.update(d, **fields)
            if not info.get("session"):  # a run's (a test's) outcome now reads "did not complete"
                runinfo.update(d, **outcome.run_json_fields(info))
    return failed
