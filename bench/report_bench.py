"""Report at scale: a nine-hour, hundred-worker run (~1,000,000 iteration rows).

Prints the wall time and peak memory of `harness report` on it (target, issue 39:
under 10 s and under 1 GB on the project's 2-core machine). The report runs in a
child process so its peak RSS is its own. The run has failures, a stand-in
probe, the load generator's CPU, per-step requests and a lock history (a grant
and a release per iteration, one lock key per worker: ~2 million events), so
every figure and finding is built, the bound included.
Usage:

    python bench/report_bench.py [--rows 1000000] [--repeat 3]
    python bench/report_bench.py --quick     # 20,000 rows, once: seconds (CI runs this)
    python bench/report_bench.py --short [--repeat 5]   # only the short run's report, as built beside the same
                                                        # with scipy.stats imported first (what it cost before)

A short run's report is mostly imports: ``--short`` (and ``--quick``, once each) reports a 3-second, two-worker
run in a child process both ways and prints their CPU-s side by side, medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from tests.support.synthetic import make_run

HOURS = 9
WORKERS = 100
TARGET_S, TARGET_MIB = 10, 1024  # issue 39: a nine-hour, hundred-worker report in under 10 s and 1 GB


def make(run: Path, rows: int) -> None:
    """The synthetic nine-hour run, about ``rows`` iterations."""
    T = HOURS * 3600.0
    base = rows / (WORKERS * T) * 1.8  # mean of the falling curve below is ~0.55 of its start

    def rate(t):
        return base * (1 - 0.8 * t / T)

    make_run(run, workers=WORKERS, duration_s=T, rate=rate,
             steps={"lock_wait_ms": lambda x: 50 + 0 * x, "commit_ms": lambda x: 100 + 2000 * x / T,
                    "pull_ms": lambda x: 80 + 0 * x, "export_ms": lambda x: 20 + 500 * x / T},
             counts={"index_entries_written": lambda x: 6 + x / 10, "catalog_rows": lambda x: x / 8},
             requests={f"{s}_{c}": (lambda x, k=k: k + 0 * x) for s, k in (("lock", 1), ("pull", 3),
                                                                            ("commit", 8), ("export", 1))
                       for c in ("requests", "request_ms")},
             lock_history="per-user",
             failure=lambda x: 0.02 + 0 * x, error_kinds=("lock_timeout", "throttled", "other"),
             probe=lambda x: 2 + x / T, probe_every_s=5.0,
             generator={"master": lambda x: 20 + 0 * x, "worker-0": lambda x: 50 + 30 * x / T},
             generator_every_s=30.0)


def _child_cpu(argv: list[str], err_path: str) -> float:
    """A child's own user + system CPU-s (``wait4``), exiting on its failure."""
    with open(err_path, "w+") as err:
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            sys.exit(f"{argv[2:5]} failed: {err.read()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def short(tmp: str, repeat: int) -> None:
    """The report of a 3-s, two-worker run (~60 rows): CPU-s as built, and with ``scipy.stats`` imported first."""
    run = Path(tmp) / "short"
    make_run(run, workers=2, duration_s=3.0, rate=lambda x: 10 + 0 * x, steps={"commit_ms": lambda x: 20 + 30 * x},
             counts={"index_entries_written": lambda x: 6 + 4 * x})
    ways = {"as built": [sys.executable, "-m", "harness"],
            "scipy.stats imported first": [sys.executable, "-c", "import runpy, sys, scipy.stats; sys.argv[0] = "
                                           "'harness'; runpy.run_module('harness', run_name='__main__')"]}
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    for i in range(repeat):
        for w, argv in ways.items():  # alternated, so a busier stretch of the machine weighs on both
            cpu[w].append(_child_cpu([*argv, "report", str(run), "--out", f"{tmp}/short-{i}"], f"{tmp}/short.err"))
    built, before = (statistics.median(cpu[w]) for w in ways)
    print(f"short run's report CPU-s (median of {repeat}): as built {built:.2f}, with scipy.stats imported first "
          f"{before:.2f}: x{built / before:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20,000 rows, one report: a smoke run in seconds")
    ap.add_argument("--make", metavar="DIR", help=argparse.SUPPRESS)  # the child that writes the run
    ap.add_argument("--short", action="store_true", help="only the short run's report, both ways, --repeat times")
    args = ap.parse_args()
    if args.short:
        with tempfile.TemporaryDirectory() as tmp:
            short(tmp, args.repeat)
        return
    if args.make:
        make(Path(args.make), args.rows)
        return
    if args.quick:
        args.rows, args.repeat = 20_000, 1
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = Path(tmp) / "nine-hours"
        # made in a child of its own: this process stays small, so the report's child (forked from it) is
        # measured alone (a fork's peak RSS counts the pages it shares with its parent)
        subprocess.run([sys.executable, __file__, "--make", str(run), "--rows", str(args.rows)], check=True)
        made = time.perf_counter() - t
        import pyarrow.dataset as ds

        rows = ds.dataset(str(run / "iterations")).count_rows()
        print(f"generated {rows:,} rows ({WORKERS} workers, {HOURS} h) in {made:.1f} s")
        walls, cpus, peaks = [], [], []
        for i in range(args.repeat):
            t = time.perf_counter()
            with open(f"{tmp}/report-{i}.err", "w+") as err:
                child = subprocess.Popen([sys.executable, "-m", "harness", "report", str(run), "--out",
                                          f"{tmp}/report-{i}"], stdout=subprocess.DEVNULL, stderr=err)
                _, status, usage = os.wait4(child.pid, 0)  # this child's own resource use, not every child's
                child.returncode = os.waitstatus_to_exitcode(status)
                if child.returncode:
                    err.seek(0)
                    sys.exit(f"harness report failed ({child.returncode}): {err.read()[-2000:]}")
            walls.append(time.perf_counter() - t)
            cpus.append(usage.ru_utime + usage.ru_stime)
            peaks.append(usage.ru_maxrss / 1024)
        print(f"report wall time: median {statistics.median(walls):.1f} s over {args.repeat} runs "
              f"(min {min(walls):.1f}, max {max(walls):.1f}); target < {TARGET_S} s -> "
              f"{statistics.median(walls) / TARGET_S:.0%} of budget")
        print(f"report CPU time (user + system): median {statistics.median(cpus):.1f} s (the wall time on an idle "
              f"machine; on a shared one the wall time is longer)")
        print(f"report peak RSS: {max(peaks):.0f} MiB (the largest of the reports); target < {TARGET_MIB} MiB -> "
              f"{max(peaks) / TARGET_MIB:.0%} of budget")
        print(f"rows per second of report: {rows / statistics.median(walls):,.0f}")
        if args.quick:
            short(tmp, 1)


if __name__ == "__main__":
    main()
