"""Audit a run directory: its history against its final remote state; write ``RUN_DIR/safety.json``.

At the end of ``harness run`` (scenarios with ``[checks] safety = true``) the
final state is captured while the endpoint is still up, then checked;
``harness check RUN_DIR`` checks again from the files alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from harness.core import atomic
from harness.core.errors import HarnessError
from harness.safety.checker import FINDINGS, check
from harness.safety.history import read_events
from harness.safety.state import capture, read_state

SAFETY_JSON = "safety.json"
RUN_JSON = "run.json"
SEED_STATE = "seed-state"  # a run pre-aged by --seed-models: entries the history never saw are expected


def check_run(run_dir: str | Path, *, state: dict | None = None, source: str = "live") -> dict[str, Any]:
    """Check ``run_dir`` against ``state`` (read ``source``), or the one captured in it; writes the report."""
    run_dir = Path(run_dir)
    if not (run_dir / RUN_JSON).is_file():
        raise HarnessError(f"{run_dir} is not a run directory (no {RUN_JSON}): give the directory `harness run` made")
    events = read_events(run_dir)
    if state is None:
        state, source = read_state(run_dir), "final-state"
    report = check(events, state, untracked_ok=(run_dir / SEED_STATE).exists())
    report.update(checked_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), state_source=source,
                  backend=state.get("backend"))
    atomic.write_text(run_dir / SAFETY_JSON, json.dumps(report, indent=2, sort_keys=True))
    return report


def capture_and_check(run_dir: str | Path, backend: Any) -> dict[str, Any]:
    """Capture what readers of ``backend`` see into the run directory, then check the run against it."""
    state = capture(backend, run_dir, read_events(Path(run_dir)))
    return check_run(run_dir, state=state, source="captured at the end of the run")


def summary(report: dict[str, Any]) -> str:
    """One line: the counts a user acts on."""
    return (f"{report['acknowledged']} acknowledged commits of {report['attempted']}; {report['acquisitions']} "
            f"lock grants ({report['contended']} contended), {report['overlaps']} overlaps; "
            f"{report['lost']} lost, {report['phantom']} phantom, {report['corrupt']} corrupt, "
            f"{report['sequence_anomalies']} sequence anomalies, {report['unsafe_overlaps']} unsafe overlaps, "
            f"{report.get('torn_reads', 0)} torn reads of {report.get('pulls_checked', 0)} checked, "
            f"{report.get('unexplained_seals', 0)} unexplained seals, {report.get('lost_reads', 0)} lost reads, "
            f"{report.get('unreadable', 0)} unreadable of {report.get('fresh_reads', 0)} fresh reads: "
            f"{report['violations']} violations")


def failed_checks(report: dict[str, Any]) -> list[str]:
    """The run's failed-check lines for a report with violations (empty when it has none)."""
    if not report["violations"]:
        return []
    parts = [f"{report[k]} {k.replace('_', ' ')}" for k in FINDINGS if report.get(k)]
    return [f"safety: {report['violations']} violations ({', '.join(parts)}); see safety.json"]


def after_run(run_dir: str | Path, backend: Any, enabled: bool) -> list[str]:
    """For ``harness run``: capture and check when the scenario asks; the failed-check lines."""
    if not enabled:
        return []
    try:
        report = capture_and_check(run_dir, backend)
    except (HarnessError, BotoCoreError, ClientError, OSError) as e:  # the run's record and cleanup go on
        return [f"safety: could not check: {str(e).splitlines()[0] if str(e) else type(e).__name__}"]
    return failed_checks(report)
