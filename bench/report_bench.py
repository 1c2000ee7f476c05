"""Report at scale: a nine-hour, hundred-worker run (~1,000,000 iteration rows).

Prints the wall time and peak memory of `harness report` on it (target: under
30 s and under 2 GB on the project's 2-core machine). The report runs in a
child process so its peak RSS is its own. The run has failures, a stand-in
probe and the load generator's CPU, so every figure and finding is built.
Usage:

    python bench/report_bench.py [--rows 1000000] [--repeat 3]
    python bench/report_bench.py --quick     # 20,000 rows, once: seconds (CI runs this)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from reports.synthetic import make_run

HOURS = 9
WORKERS = 100


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20,000 rows, one report: a smoke run in seconds")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.repeat = 20_000, 1
    T = HOURS * 3600.0
    base = args.rows / (WORKERS * T) * 1.8  # mean of the falling curve below is ~0.55 of its start

    def rate(t):
        return base * (1 - 0.8 * t / T)

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = make_run(Path(tmp) / "nine-hours", workers=WORKERS, duration_s=T, rate=rate,
                       steps={"lock_wait_ms": lambda x: 50 + 0 * x, "commit_ms": lambda x: 100 + 2000 * x / T,
                              "pull_ms": lambda x: 80 + 0 * x, "export_ms": lambda x: 20 + 500 * x / T},
                       counts={"index_entries_written": lambda x: 6 + x / 10, "catalog_rows": lambda x: x / 8},
                       failure=lambda x: 0.02 + 0 * x, error_kinds=("lock_timeout", "throttled", "other"),
                       probe=lambda x: 2 + x / T, probe_every_s=5.0,
                       generator={"master": lambda x: 20 + 0 * x, "worker-0": lambda x: 50 + 30 * x / T},
                       generator_every_s=30.0)
        made = time.perf_counter() - t
        import pyarrow.dataset as ds

        rows = ds.dataset(str(run / "iterations")).count_rows()
        print(f"generated {rows:,} rows ({WORKERS} workers, {HOURS} h) in {made:.1f} s")
        walls, cpus, peaks = [], [], []
        for i in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "harness", "report", str(run), "--out", f"{tmp}/report-{i}"],
                           check=True, capture_output=True)
            walls.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            peaks.append(max(after.ru_maxrss, before.ru_maxrss) / 1024)
        print(f"report wall time: median {statistics.median(walls):.1f} s over {args.repeat} runs "
              f"(min {min(walls):.1f}, max {max(walls):.1f}); target < 30 s -> "
              f"{statistics.median(walls) / 30:.0%} of budget")
        print(f"report CPU time (user + system): median {statistics.median(cpus):.1f} s (the wall time on an idle "
              f"machine; on a shared one the wall time is longer)")
        print(f"report peak RSS: {max(peaks):.0f} MiB (largest child so far); target < 2048 MiB -> "
              f"{max(peaks) / 2048:.0%} of budget")
        print(f"rows per second of report: {rows / statistics.median(walls):,.0f}")


if __name__ == "__main__":
    main()
