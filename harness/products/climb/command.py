"""``harness climb SCENARIO --rate LO..HI --steps N``: the saturation point, measured.

One closed run first (the scenario's own fleet: its rate is what a closed fleet reaches), then one open run
per rate from LO to HI, each for the run's duration, each a run directory of its own under the climb's
(``closed``, ``step-01-2.0per-s``, ...) with its report; ``climb.json`` and the last line say where the wait
starts growing without bound (``harness.report.run.wait.saturation``), beside the closed fleet's rate.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.config.build import RunOptions, plan_run
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.products.product_dir import product_dir
from harness.report.run.build import build_report
from harness.report.run.checks import NO_ROWS
from harness.report.run.wait import saturation
from harness.supervisor.run import run


def rates(lo: float, hi: float, steps: int) -> list[float]:
    """``steps`` rates from ``lo`` to ``hi``, both included, evenly spaced."""
    if steps < 2:
        raise HarnessError(f"--steps must be at least 2 for a rate range, got {steps}")
    return [lo + (hi - lo) * k / (steps - 1) for k in range(steps)]


def _findings(run_dir: Path) -> dict[str, Any]:
    out = build_report([run_dir])
    return json.loads((out / "summary.json").read_text())["runs"][0]["findings"]


def climb(opts: RunOptions, env: UserEnvironment, rate_range: tuple[float, float], steps: int) -> int:
    if opts.web:
        raise HarnessError("--rate LO..HI runs headless steps, one after the other: drop --web")
    todo = rates(*rate_range, steps)
    base = product_dir("climb", Path(opts.scenario).stem, opts.run_dir, quick=False)
    base.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []

    def one(name: str, rate: float | None) -> tuple[dict[str, Any] | None, float]:
        """The step's findings (None when it finished no iteration: nothing to report, the climb goes on) and
        its duration as its plan has it (--duration or the scenario's)."""
        plan = plan_run(replace(opts, rate_per_s=rate, run_dir=str(base / name), report=True), env)
        res = run(plan)
        empty_step = rate is not None and not res.rows  # said on its line and skipped, not a failed check too
        failed.extend(f"{name}: {line}" for line in res.failed_checks if not (empty_step and line == NO_ROWS))
        if res.signal:
            raise HarnessError(f"the climb was stopped ({res.signal}) during {name}; its runs are in {base}")
        return (_findings(res.run_dir) if res.rows else None), plan.scenario.fleet.duration_s

    closed, seconds = one("closed", None)
    if closed is None:
        raise HarnessError(f"the closed run finished no iteration in {seconds:g}s, so the climb has no "
                           f"fleet rate to climb beside: lengthen --duration or see {base / 'closed' / 'locust.log'}")
    closed_rate = closed["successes"] / closed["duration_s"]
    print(f"harness: climb {base}: closed fleet {closed_rate:.2f} it/s")
    done = []
    for k, r in enumerate(todo, 1):
        f, seconds = one(f"step-{k:02d}-{r:g}per-s", r)
        step = {"rate_per_s": r, "run_dir": str(base / f"step-{k:02d}-{r:g}per-s"), "wait": (f or {}).get("wait")}
        done.append(step)
        if f is None:  # arrivals are random: a short step at a low rate can see none, or none finish in time
            step["note"] = (f"no iteration finished in its {seconds:g}s ({r * seconds:.1f} arrivals "
                            "expected): it says nothing of the wait")
            print(f"harness: climb step {k}/{len(todo)} at {r:.2f}/s: {step['note']}")
            continue
        w = f.get("wait") or {}
        print(f"harness: climb step {k}/{len(todo)} at {r:.2f}/s: served {w.get('served_per_s', 0):.2f}/s, wait p50 "
              f"{w.get('p50_ms', 0) / 1000:.2f}s p99 {w.get('p99_ms', 0) / 1000:.2f}s, "
              f"{'growing' if w.get('growing') else 'bounded'}")
    point = saturation(done, closed_rate)
    (base / "climb.json").write_text(json.dumps({"closed_per_s": closed_rate, "steps": done, **point}, indent=2,
                                                default=str))
    print(f"harness: saturation: {point['sentence']}")
    for line in failed:
        print(f"harness: check failed: {line}", file=sys.stderr)
    return ExitCode.CHECKS_FAILED if failed else ExitCode.OK
