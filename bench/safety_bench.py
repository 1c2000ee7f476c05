"""Safety under faults, measured: the lock-safety scenario until N contended lock acquisitions.

Runs ``harness run lock-safety`` (real Locust, the embedded moto server, holders
paused past their TTL) in back-to-back runs of ``--chunk`` each, until the runs
together reach ``--target`` contended acquisitions (an acquisition that found
the lock held at least once) or ``--max-time`` passes. Each run's
``safety.json`` gives the figures; they are summed per backend and fencing mode.
``--fencing off`` runs a copy of the scenario with ``fencing = false`` (swamp's
own commit), to show what fencing prevents.

    python bench/safety_bench.py                      # both backends, fencing on, 10,000 contended each
    python bench/safety_bench.py --fencing both --target 2000
    python bench/safety_bench.py --quick              # one short run per backend, 3 workers (CI)
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
SCENARIO = ROOT / "scenarios" / "lock-safety.toml"
FIELDS = ("acquisitions", "contended", "overlaps", "pauses", "acknowledged", "refused", "lost", "phantom", "corrupt",
          "sequence_anomalies", "unsafe_overlaps", "lease_overlaps", "violations")


def scenario_file(fencing: bool, where: Path) -> Path:
    """The shipped scenario, or a copy of it with ``fencing = false``."""
    if fencing:
        return SCENARIO
    text = re.sub(r"(?m)^fencing = true\b.*$", "fencing = false", SCENARIO.read_text())
    assert "fencing = false" in text, "scenarios/lock-safety.toml must say fencing = true"
    path = where / "lock-safety-unfenced.toml"
    path.write_text(text.replace('name = "lock-safety"', 'name = "lock-safety-unfenced"'))
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
    return (f"{label:24s} {n:4d} {seconds:8.0f} " + " ".join(f"{totals[f]:>{max(6, len(f))}d}" for f in FIELDS)
            + f" {rate:9.1f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one short run per backend, fencing on (seconds)")
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
        args.target, args.chunk, args.max_time, args.processes, args.workers = 1, 8, 1, 0, 3
    fleet = ((["--processes", str(args.processes)] if args.processes else [])
             + (["--workers", str(args.workers)] if args.workers else []))
    backends = ["dynamodb", "s3"] if args.backend == "both" else [args.backend]
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.fencing]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="safety-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'backend:fencing':24s} {'runs':>4s} {'seconds':>8s} "
          + " ".join(f"{f:>{max(6, len(f))}s}" for f in FIELDS) + f" {'contended/s':>9s}", flush=True)
    try:
        for backend in backends:
            for fencing in modes:
                scenario = scenario_file(fencing, work)
                totals = dict.fromkeys(FIELDS, 0)
                runs, spent, start = 0, 0.0, time.monotonic()
                while totals["contended"] < args.target and (runs == 0 or time.monotonic() - start < args.max_time):
                    label = f"{backend}:{'on' if fencing else 'off'}"
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
