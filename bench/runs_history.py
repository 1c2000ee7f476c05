"""How fast `harness runs` lists hundreds of run directories (target: 300 in under 2 s).

Builds N synthetic run directories under a temporary runs/ folder: one real report (tests/support/synthetic.py's
run, `harness report`), its summary.json copied into every other run with its numbers varied, and a run.json
each; a tenth of them without a report (read from run.json alone, as a --no-report run is), a few web
sessions, a story and a sweep folder beside them. Then times the listing in this process (the reading of
the summaries) and as the command a user types (`harness runs`, a new Python process: imports included),
median of a few repeats each, side by side.

    python bench/runs_history.py            # 300 runs, 5 repeats
    python bench/runs_history.py --quick    # 30 runs, 2 repeats (tests/bench/test_bench.py)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.products.runs import history  # noqa: E402
from harness.record import runinfo  # noqa: E402
from harness.report.run.build import build_report  # noqa: E402
from tests.support.synthetic import T0, make_run, run_info  # noqa: E402

TARGET_S = 2.0


def build_tree(root: Path, n: int) -> None:
    template = make_run(root / "template", workers=4, duration_s=120.0, rate=lambda t: np.full_like(t, 2.0),
                        lock_history="shared")
    build_report([template])
    summary = json.loads((template / "report" / "summary.json").read_text())
    rng = np.random.default_rng(0)
    for i in range(n - 1):
        d = root / f"run-{i:04d}"
        (d / "iterations").mkdir(parents=True)
        scenario = ("shared-lock", "namespaced", "legacy-gsi")[i % 3]
        info = run_info(workers=int(rng.integers(1, 32)), duration_s=60.0, scenario=scenario,
                        backend=("dynamodb", "s3")[i % 2], t0=T0 + 600 * i, rows_written=int(rng.integers(100, 5000)))
        runinfo.write(d, info)
        if i % 10 == 9:
            continue  # a --no-report run: listed from run.json
        s = json.loads(json.dumps(summary))
        f = s["runs"][0]["findings"]
        f["successes"] = int(f["successes"] * rng.uniform(0.5, 1.5))
        s["runs"][0].update(run_dir=str(d), scenario=scenario)
        (d / "report").mkdir()
        (d / "report" / "summary.json").write_text(json.dumps(s, indent=2))
    session = root / "session-1"
    (session / "tests").mkdir(parents=True)
    shutil.copytree(template, session / "tests" / "001")
    runinfo.write(session, {"session": True, "tests": [{"number": 1, "dir": "tests/001"}]})
    (root / "story-1").mkdir()
    (root / "story-1" / "story.json").write_text(json.dumps({"schema": 1, "chapters": [], "status": "finished"}))
    (root / "jobs").mkdir()


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--repeats", type=int)
    a = ap.parse_args()
    n = a.runs or (30 if a.quick else 300)
    repeats = a.repeats or (1 if a.quick else 5)
    with tempfile.TemporaryDirectory(prefix="runs-history-") as tmp:
        root = Path(tmp) / "runs"
        t = time.perf_counter()
        build_tree(root, n)
        built = time.perf_counter() - t
        found = history.entries(root)
        listed = median_s(lambda: history.lines(history.entries(root), root), repeats)
        cmd = [sys.executable, "-m", "harness", "runs", "--runs-dir", str(root)]
        command = median_s(lambda: subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT), repeats)
        bare = median_s(lambda: subprocess.run([sys.executable, "-c", "import harness.cli.main"], check=True,
                                               capture_output=True, cwd=ROOT), repeats)
    print(f"runs directories: {n} (+ a session, a story, jobs/), built in {built:.1f} s; entries listed: {len(found)}")
    print(f"listing in-process: median {listed:.3f} s ({listed / n * 1000:.2f} ms a run)")
    print(f"harness runs (a new process): median {command:.3f} s; of it Python and the CLI's imports: {bare:.3f} s")
    print(f"target: under {TARGET_S:g} s for 300 runs ({n} here): {'met' if command < TARGET_S else 'NOT met'} "
          f"(x{command / TARGET_S:.2f} of the target; the machine may be shared: quote the median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
