"""Safety under faults, measured: the safety scenarios until N contended lock acquisitions.

Runs ``harness run lock-safety`` (contended locks, holders paused past their
TTL, colliding paths), ``lifecycle-safety`` (the same with disposable models
deleted and pruned every iteration and full commits in shared namespaces:
deletes must stay deleted), ``two-phase-safety`` (lock-safety under swamp's
two-phase sync) and ``recreate-safety`` (disposable models re-created by name
after another worker deleted or pruned them), real Locust on the embedded
default, in back-to-back runs of ``--chunk`` each, until the runs together
reach ``--target`` contended acquisitions (an acquisition that found the lock
held at least once) or ``--max-time`` passes. Each run's ``safety.json`` gives
the figures; they are summed per scenario, backend and fencing mode.
``--fencing off`` runs a copy of the scenario with ``fencing = false`` (swamp's
own commit), to show what fencing prevents.

    python bench/safety_bench.py                      # lock-safety, both backends, fencing on, 10,000 contended each
    python bench/safety_bench.py --scenario lifecycle-safety --fencing both --chunk 60 --target 1
    python bench/safety_bench.py --scenario all --fencing both --chunk 60 --target 1   # the four, 60 s each
    python bench/safety_bench.py --quick              # three short runs, 3 workers (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("lock-safety", "lifecycle-safety", "two-phase-safety", "recreate-safety")
# each quick run once: lifecycle and recreate on both backends between them
QUICK = (("lock-safety", "s3"), ("lifecycle-safety", "dynamodb"), ("recreate-safety", "s3"))
FIELDS = ("acquisitions", "contended", "overlaps", "pauses", "acknowledged", "refused", "lost", "phantom", "corrupt",
          "sequence_anomalies", "unsafe_overlaps", "lease_overlaps", "torn_reads", "uncertain_overlaps", "violations")


def scenario_file(name: str, fencing: bool, where: Path) -> Path:
    """The shipped scenario, or a copy of it with ``fencing = false``."""
    shipped = ROOT / "harness" / "config" / "scenarios" / f"{name}.toml"
    if fencing:
        return shipped
    text = re.sub(r"(?m)^fencing = true\b.*$", "fencing = false", shipped.read_text())
    assert "fencing = false" in text, f"scenarios/{name}.toml must say fencing = true"
    path = where / f"{name}-unfenced.toml"
    path.write_text(text.replace(f'name = "{name}"', f'name = "{name}-unfenced"'))
    return path


def one_run(scenario: Path, backend: str, seconds: int, run_dir: Path, fleet: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT_URL", "HARNESS_"))}
    proc = subprocess.run([sys.executable, "-m", "harness", "run", str(scenario), "--backend", backend,
                           "--duration", f"{seconds}s", "--run-dir", str(run_dir), "--no-report", *fleet],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=seconds + 600)
    if proc.returncode not in (0, 3) or not (run_dir / "safety.json").is_file():
        raise SystemExit(f"safety_bench: the run in {run_dir} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads((run_dir / "safety.json").read_text())


def line(label: str, n: int, seconds: float, totals: dict) -> str:
    rate = totals["contended"] / seconds if seconds else 0.0
    return (f"{label:36s} {n:4d} {seconds:8.0f} " + " ".join(f"{totals[f]:>{max(6, len(f))}d}" for f in FIELDS)
            + f" {rate:9.1f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one short run per backend, fencing on (seconds)")
    p.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="lock-safety")
    p.add_argument("--backend", choices=["dynamodb", "s3", "both"], default="both")
    p.add_argument("--fencing", choices=["on", "off", "both"], default="on")
    p.add_argument("--target", type=int, default=10_000, help="contended acquisitions per backend and mode")
    p.add_argument("--chunk", type=int, default=300, help="seconds per run")
    p.add_argument("--max-time", type=int, default=4 * 3600, help="give up on the target after this many seconds")
    p.add_argument("--keep", help="keep the run directories under this directory")
    p.add_argument("--processes", type=int, default=2,
                   help="Locust worker processes per run (0: one local process); the load generator is the "
                        "ceiling on a small machine")
    p.add_argument("--workers", type=int, help="workers per run (default: the scenario's)")
    args = p.parse_args(argv)
    if args.quick:
        args.target, args.chunk, args.max_time, args.processes, args.workers = 1, 5, 1, 0, 3
    fleet = ((["--processes", str(args.processes)] if args.processes else [])
             + (["--users", str(args.workers)] if args.workers else []))
    backends = ["dynamodb", "s3"] if args.backend == "both" else [args.backend]
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    plan = list(QUICK) if args.quick else [(n, b) for n in names for b in backends]
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.fencing]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="safety-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'scenario:backend:fencing':36s} {'runs':>4s} {'seconds':>8s} "
          + " ".join(f"{f:>{max(6, len(f))}s}" for f in FIELDS) + f" {'contended/s':>9s}", flush=True)
    try:
        for name, backend in plan:
            for fencing in modes:
                scenario = scenario_file(name, fencing, work)
                totals = dict.fromkeys(FIELDS, 0)
                runs, spent, start = 0, 0.0, time.monotonic()
                while totals["contended"] < args.target and (runs == 0 or time.monotonic() - start < args.max_time):
                    label = f"{name}:{backend}:{'on' if fencing else 'off'}"
                    run_dir = work / f"{label.replace(':', '-')}-{runs + 1:03d}"
                    report = one_run(scenario, backend, args.chunk, run_dir, fleet)
                    spent += args.chunk
                    runs += 1
                    for f in FIELDS:
                        totals[f] += int(report.get(f, 0))
                    print(line(f"  {label}:run{runs}", 1, args.chunk, {f: int(report.get(f, 0)) for f in FIELDS}),
                          flush=True)
                print(line(label, runs, spent, totals), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
