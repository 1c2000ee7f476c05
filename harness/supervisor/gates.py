"""What the gates do around a run: the baseline refused or compared, the JUnit file written.

``harness run --baseline/--junit`` and ``harness report --baseline/--junit`` (their arguments:
``harness.cli.gates``). The comparison is ``report/run/baseline.py``'s, the file
``report/run/junit.py``'s.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode

if TYPE_CHECKING:
    from harness.config.plan import RunPlan
    from harness.supervisor.run import RunResult



def plan_identity(plan: RunPlan) -> dict[str, Any]:
    return {"scenario": plan.scenario.name, "backend": plan.backend, "fleet size": plan.scenario.fleet.workers,
            "latency profile": plan.fidelity().latency or "local"}


def refuse_baseline(args: argparse.Namespace, plan: RunPlan) -> None:
    """Before anything starts: a baseline that is no run, or a run that answers another question, is one line."""
    if not args.baseline:
        return
    if args.web:
        raise HarnessError("--baseline compares one headless run with another: drop --web (then `harness report "
                           "SESSION/tests/NNN --baseline BASE` compares a test)")
    from harness.report.run.baseline import identity, read_baseline, refusal

    info, _ = read_baseline(args.baseline)
    why = refusal(identity(info), plan_identity(plan), args.baseline)
    if why:
        raise HarnessError(why)


def compare(baseline: str | None, run_dirs: list[Path], tolerance: float) -> dict[Path, dict]:
    """Each run against the baseline, printed; {run_dir: comparison}."""
    if not baseline:
        return {}
    from harness.report.run.baseline import compare_dirs, format_lines

    out = {}
    for d in run_dirs:
        cmp = compare_dirs(baseline, d, tolerance)
        for line in format_lines(cmp):
            print(f"harness: {line}")
        out[d] = cmp
    return out


def regressed(compared: dict[Path, dict]) -> list[str]:
    return [f"{Path(d).name}: {name}" for d, c in compared.items() for name in c["regressions"]]


def write_junit(path: str | None, res: RunResult, compared: dict[Path, dict]) -> None:
    """``--junit FILE``: a suite per test of the run, a case per check (and per baseline item)."""
    if not path:
        return
    from harness.report.run import junit

    suites = []
    for number, d, info, results in res.checked:
        scenario = info.get("scenario_name") or "run"
        started = info.get("started_at")
        when = datetime.fromisoformat(started) if started else datetime.now(UTC)
        ended = info.get("ended_at")
        seconds = (datetime.fromisoformat(ended) - when).total_seconds() if ended and started else 0.0
        name = f"{scenario} {info.get('backend', '')}".strip() + (f" test {number:03d}" if res.session else "")
        suites.append(junit.Suite(name, junit.cases_of(scenario, results, res.safety, compared.get(d)), when,
                                  max(seconds, 0.0), {"run_dir": str(d), "backend": info.get("backend"),
                                                      "workers": (info.get("fleet") or {}).get("workers"),
                                                      "stop_reason": info.get("stop_reason")}))
    out = junit.write(path, suites)
    print(f"harness: JUnit results {out} ({sum(len(s.cases) for s in suites)} test cases)")


def report_gates(args: argparse.Namespace, run_dirs: list[Path]) -> tuple[dict[Path, dict], int]:
    """``harness report --baseline/--junit``: the comparison for the report, and the exit code."""
    if (args.baseline or args.junit) and len(run_dirs) != 1:
        raise HarnessError("--baseline and --junit take one run directory (a web session's test: SESSION/tests/NNN)")
    compared = compare(args.baseline, run_dirs, args.threshold)
    return compared, ExitCode.CHECKS_FAILED if regressed(compared) else 0


def report_junit(path: str | None, summary: dict, compared: dict[Path, dict]) -> None:
    """``harness report --junit``: the checks the report judged (summary.json), a case each."""
    if not path:
        return
    from harness.report.run import junit

    suites = []
    for r in summary["runs"]:
        f = r["findings"]
        when = datetime.fromisoformat(f["span"]["start"])
        sf = f.get("safety")
        safety = None if sf is None else ([f"{sf.get('violations')} violations"] if sf.get("violations") else [])
        suites.append(junit.Suite(f"{r.get('scenario')} {r.get('backend')}",
                                  junit.cases_of(r.get("scenario") or "run", f.get("checks") or [], safety,
                                                 compared.get(Path(r["run_dir"]))), when, f.get("duration_s") or 0.0,
                                  {"run_dir": r["run_dir"]}))
    out = junit.write(path, suites)
    print(f"harness: JUnit results {out} ({sum(len(s.cases) for s in suites)} test cases)")
