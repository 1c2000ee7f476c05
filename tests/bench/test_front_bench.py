"""``bench/front.py --quick`` runs and prints its three figures (the front's cost; docs/benchmarks.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_front_bench_quick_prints_added_time_and_requests_per_cpu_second():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "front.py"), "--quick"], capture_output=True, text=True,
                       cwd=ROOT, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    added = re.findall(r"added per request \(modelled (\d+) ms\): median (-?[\d.]+) ms .* the front's own time "
                       r"median ([\d.]+) ms", p.stdout)
    assert [m[0] for m in added] == ["0", "5"], p.stdout
    assert all(float(own) > 0 for _, _, own in added)
    m = re.search(r"one front process: (\d+) requests .* = (\d+) requests per CPU second", p.stdout)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, p.stdout
