"""run.json bookkeeping: each test's record and, for a web session, the session's list of tests.

Headless, a run is one test and its run directory is the one given. With the
web UI, a run directory is a *session*: each test started from the UI is a
complete run directory of its own under ``SESSION/tests/NNN/`` (run.json,
iterations/, history/, probes.csv, generator.csv, report/), and the
session's ``run.json`` lists every test. Every field comes from the run's plan
(or the test's), so a report rebuilt from the directory reads what the run was.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.config.plan import RunPlan
from harness.load.collect import ActiveTest
from harness.record import outcome, runinfo


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


class RunRecord:
    """The run.json files of one Locust master's (or single process's) run: the session's and each test's."""

    def __init__(self, plan: RunPlan, web: bool) -> None:
        self.plan, self.web = plan, web
        self.root = Path(plan.run_dir).resolve()
        self.base = {"run_id": plan.run_id, "endpoint": plan.endpoint_summary(), "endpoint_kind": plan.endpoint_kind,
                     "resources": {"table": plan.resources.table, "bucket": plan.resources.bucket},
                     "versions": runinfo.versions(), "host": runinfo.host(), "stand_in": plan.stand_in.started}

    def open_session(self, users: int, processes: int) -> None:
        """A web session's run.json exists from the start (the tests list fills as tests run)."""
        sc = self.plan.scenario
        runinfo.write(self.root, {**self.base, "session": True, "status": "open", "scenario": sc.to_dict(),
                                  "scenario_name": sc.name, "backend": sc.backend, "started_at": None,
                                  "ended_at": None, "tests": [], "rows_written": 0,
                                  "fleet": {"workers": users, "processes": processes}})

    def test_started(self, t: ActiveTest, processes: int) -> dict:
        """The test's run.json as it starts (and its entry in the session's)."""
        plan, sc = t.plan, t.plan.scenario
        assert plan.test is not None
        info = {**self.base, "scenario": sc.to_dict(), "scenario_name": sc.name, "backend": sc.backend,
                "started_at": iso(t.started_at), "ended_at": None, "status": "running",
                "fidelity": asdict(plan.fidelity()), "fleet": {"workers": plan.test.users,
                                                               "spawn_rate": plan.test.spawn_rate,
                                                               "processes": processes},
                "stop_reason": None, "incomplete": [], "rows_written": 0, "options": t.options,
                "test": {"number": t.number, "session": str(self.root) if self.web else None}}
        runinfo.write(t.dir, info)
        self.update_session(t, info)
        return info

    def test_finished(self, t: ActiveTest, reason: str, incomplete: list[dict]) -> dict:
        """The test's closed record, with how it ended (``outcome``, ``outcome_line``: harness/record/outcome.py)."""
        assert t.stopping_at is not None
        info = runinfo.read(t.dir)
        info.update(ended_at=iso(t.stopping_at), status="finished", stop_reason=reason, options=t.options,
                    incomplete=incomplete, rows_written=t.writer.written, events_written=t.history.written,
                    processes=t.processes(), generator_samples=t.generator.samples)
        info.update(outcome.run_json_fields(info))
        runinfo.write(t.dir, info)
        self.update_session(t, info)
        return info

    def _entry(self, t: ActiveTest, info: dict) -> dict:
        return {"number": t.number, "dir": str(t.dir.relative_to(self.root)), "status": info["status"],
                "started_at": info["started_at"], "ended_at": info["ended_at"], "scenario_name": t.scenario.name,
                "scenario_source": t.scenario.source, "users": t.options["users"],
                "spawn_rate": t.options["spawn_rate"], "run_time_s": t.run_time_s, "options": t.options,
                "stop_reason": info.get("stop_reason"), "rows": info.get("rows_written", 0),
                "incomplete": info.get("incomplete", []), "report": info.get("report"),
                "outcome": info.get("outcome"), "outcome_line": info.get("outcome_line")}

    def update_session(self, t: ActiveTest, info: dict) -> None:
        if not self.web:
            return
        s = runinfo.read(self.root)
        entries = [e for e in s["tests"] if e["number"] != t.number] + [self._entry(t, info)]
        entries.sort(key=lambda e: e["number"])
        s["tests"] = entries
        s["started_at"] = entries[0]["started_at"]
        s["ended_at"] = entries[-1]["ended_at"]
        s["rows_written"] = sum(e["rows"] or 0 for e in entries)
        runinfo.write(self.root, s)

    def set_report(self, number: int, test_dir: Path, **fields: Any) -> None:
        info = runinfo.update(test_dir, **fields)
        if self.web:
            s = runinfo.read(self.root)
            for e in s["tests"]:
                if e["number"] == number:
                    e["report"] = info.get("report")
                    e["report_error"] = info.get("report_error")
            runinfo.write(self.root, s)

    def close_session(self) -> None:
        if self.web and (self.root / runinfo.RUN_JSON).exists():
            runinfo.update(self.root, status="closed")

    def tests(self) -> list[dict]:
        """For the UI's panel: the session's tests (or the headless run as its one test)."""
        if not (self.root / runinfo.RUN_JSON).exists():
            return []
        info = runinfo.read(self.root)
        if self.web:
            return info.get("tests", [])
        return [{"number": 1, "dir": ".", "status": info.get("status"), "scenario_name": info.get("scenario_name"),
                 "stop_reason": info.get("stop_reason"), "rows": info.get("rows_written"),
                 "report": info.get("report"), "started_at": info.get("started_at"),
                 "ended_at": info.get("ended_at"), "incomplete": info.get("incomplete", [])}]


def now_iso() -> str:
    return iso(time.time())
