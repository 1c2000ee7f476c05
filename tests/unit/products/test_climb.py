"""The climb's loop over its steps, with each run replaced by what it recorded: a step that finished no
iteration (random arrivals at a low rate in a short step can bring none) is said and skipped, not an error that
loses the steps around it; a closed run with none stops the climb with one line, since it has no fleet rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config.build import RunOptions
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.products.climb import command
from harness.report.run.checks import NO_ROWS
from harness.supervisor.run import RunResult

ALSO: list[str] = []  # another failed check of an empty run, set by a test


def _wait(rate: float, served: float) -> dict:
    growing = rate > served
    return {"growing": growing, "served_per_s": served, "queue_growth_per_s": rate - served if growing else 0.0,
            "p50_ms": 100.0, "p99_ms": 300.0}


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Each step's rows by its directory's name (absent: 10 rows); a run with rows serves up to 5/s, one without
    fails the check every empty run fails (and those in ``ALSO``)."""
    rows: dict[str, int] = {}
    plans: list = []

    def run(plan) -> RunResult:  # noqa: ANN001 - a RunPlan
        plans.append(plan)
        d = Path(plan.run_dir)
        n = rows.get(d.name, 10)
        return RunResult(d, n, [] if n else [*ALSO, NO_ROWS], 0)

    def findings(run_dir: Path) -> dict:
        fleet = next(p.scenario.fleet for p in plans if Path(p.run_dir) == run_dir)
        if fleet.arrival == "closed":
            return {"successes": 50, "duration_s": 10.0}
        return {"wait": _wait(fleet.rate_per_s, min(fleet.rate_per_s, 5.0))}

    monkeypatch.setattr(command, "run", run)
    monkeypatch.setattr(command, "_findings", findings)
    return rows


def test_a_step_with_no_rows_is_said_and_skipped(recorded, tmp_path, capsys) -> None:
    recorded["step-01-1per-s"] = 0
    opts = RunOptions(scenario="namespaced", duration_s=5.0, run_dir=str(tmp_path / "c"))
    assert command.climb(opts, UserEnvironment(), (1.0, 9.0), 3) == ExitCode.OK  # its empty run's check: not failed
    c = json.loads((tmp_path / "c" / "climb.json").read_text())
    first, *others = c["steps"]
    assert first["wait"] is None and first["note"] == ("no iteration finished in its 5s (5.0 arrivals expected): "
                                                      "it says nothing of the wait")
    assert [s["rate_per_s"] for s in others] == [5.0, 9.0] and all("note" not in s for s in others)
    assert (c["bounded_up_to_per_s"], c["grows_from_per_s"], c["closed_per_s"]) == (5.0, 9.0, 5.0)
    out = capsys.readouterr().out.splitlines()
    assert "harness: climb step 1/3 at 1.00/s: no iteration finished in its 5s (5.0 arrivals expected)" in out[1]
    assert out[2].startswith("harness: climb step 2/3 at 5.00/s: served 5.00/s") and out[-1].startswith(
        "harness: saturation: the wait grows without bound from 9.00/s")


def test_a_closed_run_with_no_rows_stops_the_climb_before_any_step(recorded, tmp_path) -> None:
    recorded["closed"] = 0
    opts = RunOptions(scenario="namespaced", duration_s=5.0, run_dir=str(tmp_path / "c"))
    with pytest.raises(HarnessError, match=r"^the closed run finished no iteration in 5s, so the climb has no fleet "
                                           r"rate to climb beside: lengthen --duration or see .*closed/locust.log$"):
        command.climb(opts, UserEnvironment(), (1.0, 9.0), 2)
    assert not (tmp_path / "c" / "climb.json").exists()


def test_an_empty_steps_other_failed_checks_still_fail_the_climb(recorded, tmp_path, capsys, monkeypatch) -> None:
    recorded["step-01-1per-s"] = 0
    monkeypatch.setattr(f"{__name__}.ALSO", ["the run did not complete: a Locust process died"])
    opts = RunOptions(scenario="namespaced", duration_s=5.0, run_dir=str(tmp_path / "c"))
    assert command.climb(opts, UserEnvironment(), (1.0, 9.0), 2) == ExitCode.CHECKS_FAILED
    err = capsys.readouterr().err.splitlines()
    assert err == ["harness: check failed: step-01-1per-s: the run did not complete: a Locust process died"]
