"""bench/safety_bench.py --quick runs lock-safety (S3), lifecycle-safety (DynamoDB) and recreate-safety (S3) and
prints their figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
@pytest.mark.heavy
def test_quick_safety_bench_prints_the_figures():
    proc = subprocess.run([sys.executable, "bench/safety_bench.py", "--quick"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = lines[0].split()
    assert header[:3] == ["scenario:backend:fencing", "runs", "seconds"] and "violations" in header
    totals = {ln.split()[0]: dict(zip(header[1:], map(float, ln.split()[1:]), strict=True))
              for ln in lines[1:] if not ln.startswith(" ")}
    assert set(totals) == {"lock-safety:s3:on", "lifecycle-safety:dynamodb:on", "recreate-safety:s3:on"}
    for figures in totals.values():
        assert figures["runs"] == 1 and figures["acquisitions"] >= 1
        assert 0 <= figures["contended"] <= figures["acquisitions"]
        assert figures["acknowledged"] + figures["refused"] >= 1
        assert figures["violations"] == figures["lost"] == figures["phantom"] == figures["torn_reads"] == 0
