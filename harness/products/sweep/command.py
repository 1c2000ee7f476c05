"""``harness sweep SCENARIO --users 1,2,4,8,16``: one run per fleet size (and trial), the fleet's scaling fitted.

Each size is an ordinary ``harness run`` run (the same plan builder and ``harness.supervisor.run.run``: its own
embedded stand-in, so a fresh table or bucket), in a run directory of its own inside the sweep directory, with
its report. ``sweep.json`` records each run as it ends, so whatever stops the sweep keeps the sizes that
finished, and the page (``harness/products/sweep/``: throughput against fleet size with the Universal Scalability Law
fitted, latency, the bound at each size) is built from them; ``harness report --sweep SWEEP_DIR`` rebuilds it.

Exit codes: 0; 2 bad input (before anything runs); 128 + signal when interrupted.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.config.build import RunOptions, plan_run
from harness.config.plan import RunPlan
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.products.product_dir import product_dir
from harness.products.sweep import SWEEP_JSON
from harness.products.sweep import sweep as sweeps
from harness.report.run.build import build_report
from harness.supervisor.run import run
from harness.supervisor.supervise import Interrupted, signals_raise

DEFAULT_WORKERS = "1,2,4,8,16"
QUICK_WORKERS = "1,2"
QUICK_DURATION_S = 8.0
MAX_SIZES = 12
MAX_WORKERS = 10_000
USERS_PER_PROCESS = 50  # --processes auto: a Locust process (one core) runs this many workers before it saturates
OVERHEAD_S = 15.0  # per run, about: the stand-in, Locust's start and stop, the run's report (for the estimate)


@dataclass(frozen=True)
class SweepOptions:
    scenario: str
    workers: str | None = None
    duration_s: float | None = None
    backend: str | None = None
    processes: str = "0"
    trials: int = 1
    quick: bool = False
    run_dir: str | None = None


def parse_workers(text: str) -> tuple[int, ...]:
    """``1,2,4,8`` -> the sizes, ascending; a bad list is one line saying what is wrong."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise HarnessError(f"--users {text!r}: give fleet sizes separated by commas, e.g. --users 1,2,4,8")
    sizes = []
    for p in parts:
        if not p.isdigit() or int(p) < 1:
            raise HarnessError(f"--users {text!r}: {p!r} is not a fleet size (a whole number of 1 or more)")
        sizes.append(int(p))
    if len(set(sizes)) != len(sizes):
        raise HarnessError(f"--users {text!r}: a size is given twice (use --trials K to repeat each size)")
    if max(sizes) > MAX_WORKERS:
        raise HarnessError(f"--users {text!r}: at most {MAX_WORKERS:,} workers a size")
    if len(sizes) > MAX_SIZES:
        raise HarnessError(f"--users {text!r}: at most {MAX_SIZES} sizes in one sweep")
    return tuple(sorted(sizes))


def processes_for(spec: str, workers: int, cores: int | None = None) -> int:
    """Locust worker processes for a size: ``auto`` adds one per USERS_PER_PROCESS workers, up to the cores
    (0: the one process of a plain run); a number is taken as it is."""
    if spec == "auto":
        cores = cores or os.cpu_count() or 1
        need = math.ceil(workers / USERS_PER_PROCESS)
        return 0 if need <= 1 else min(need, cores)
    if not spec.isdigit():
        raise HarnessError(f"--processes {spec!r}: give auto or a number of Locust processes (0: one process)")
    return int(spec)


def _say(line: str) -> None:
    print(line, flush=True)


def _plan(opts: SweepOptions, env: UserEnvironment, workers: int, duration: float | None, run_dir: Path,
          processes: int) -> RunPlan:
    return plan_run(RunOptions(scenario=opts.scenario, backend=opts.backend, workers=workers, duration_s=duration,
                               processes=processes, run_dir=str(run_dir)), env)


def cmd_sweep(opts: SweepOptions, env: UserEnvironment, say: Callable[[str], None] = _say) -> int:
    sizes = parse_workers(opts.workers or (QUICK_WORKERS if opts.quick else DEFAULT_WORKERS))
    if opts.trials < 1:
        raise HarnessError(f"--trials {opts.trials}: give 1 or more runs per fleet size")
    duration = opts.duration_s if opts.duration_s is not None else (QUICK_DURATION_S if opts.quick else None)
    runs = [(n, k, processes_for(opts.processes, n)) for n in sizes for k in range(1, opts.trials + 1)]
    first = _plan(opts, env, sizes[0], duration, Path("."), runs[0][2])
    sweep_dir = product_dir("sweep", first.scenario.name, opts.run_dir, opts.quick)
    plans = [_plan(opts, env, n, duration, sweep_dir / sweeps.run_name(n, k), p) for n, k, p in runs]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    run_s = plans[0].scenario.fleet.duration_s
    sweeps.start(sweep_dir, {"scenario": first.scenario.name, "backend": first.backend, "workers": list(sizes),
                             "trials": opts.trials, "duration_s": run_s, "processes": opts.processes,
                             "quick": opts.quick, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    say(f"harness: sweep {first.scenario.name} on {first.backend}: {len(runs)} runs at "
        f"{', '.join(map(str, sizes))} workers, {run_s:g}s each (about "
        f"{_mmss(len(runs) * (run_s + OVERHEAD_S))} in all) -> {sweep_dir}")
    t0 = time.monotonic()
    signame: str | None = None
    with signals_raise():
        try:
            for (n, k, p), plan in zip(runs, plans, strict=True):
                say(f"harness:   {n} worker{'' if n == 1 else 's'}" + (f", trial {k}" if opts.trials > 1 else "")
                    + (f", {p} Locust processes" if p else "") + f" -> {plan.run_dir}")
                res = run(plan, quiet=True)
                if res.rows:
                    build_report([res.run_dir])
                    sweeps.add_run(sweep_dir, n, k, p)
                elif not res.signal:
                    say(f"harness:   {plan.run_dir} recorded no iteration: left out of the fit (see its locust.log)")
                for line in res.failed_checks:
                    say(f"harness:   check failed: {line}")
                if res.signal:
                    signame = res.signal
                    break
        except Interrupted as e:
            signame = e.name
    sweeps.finish(sweep_dir, elapsed_s=time.monotonic() - t0, interrupted=signame)
    if signame in ("SIGTERM", "SIGHUP"):
        say(f"harness: sweep recorded in {sweep_dir / SWEEP_JSON}; build its page with "
            f"`harness report --sweep {sweep_dir}`")
    else:
        out = sweeps.build(sweep_dir, rebuild=False)
        fit = sweeps.read(out)["fit"]
        for line in fit.get("words") or []:
            say(f"harness:   {line}")
        say(f"harness: sweep {out / 'index.html'} ({_mmss(time.monotonic() - t0)})")
    if signame:
        return 128 + int(getattr(signal, signame))
    return 0


def _mmss(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s"
