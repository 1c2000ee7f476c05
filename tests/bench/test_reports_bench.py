"""bench/report_bench.py --quick: the report benchmark's short mode runs and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_report_bench_quick_prints_wall_time_and_memory():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "report_bench.py"), "--quick"], capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = int(re.search(r"generated ([\d,]+) rows", p.stdout).group(1).replace(",", ""))
    assert 17_000 < rows < 23_000
    wall = float(re.search(r"report wall time: median ([\d.]+) s over 1 runs", p.stdout).group(1))
    rss = float(re.search(r"report peak RSS: (\d+) MiB", p.stdout).group(1))
    assert 0 < wall < 120 and 50 < rss < 2048
    built, before = (float(x) for x in re.search(
        r"short run's report CPU-s \(median of 1\): as built ([\d.]+), with scipy.stats imported first ([\d.]+)",
        p.stdout).groups())
    assert 0 < built < before  # the import the report no longer makes is CPU the short run's report saves
