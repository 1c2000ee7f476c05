"""bench/standins.py's short mode: every candidate, every request, a ratio; the throughput lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.standins import REQUESTS
from harness.aws.standin.dynamodb_local import missing_runtime as dynamodb_local_missing
from harness.aws.standin.seaweedfs import missing_runtime as weed_missing

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
def test_standins_bench_quick_prints_costs_ratios_and_throughput(tmp_path):
    # DynamoDB's rows only: the S3 rows (both candidates, same sizes) are test_bench's test_standins_s3_rows_quick,
    # which runs this bench with --services s3; run here too they were the same figures made twice
    proc = subprocess.run([sys.executable, "bench/standins.py", "--quick", "--services", "dynamodb", "--candidates",
                           "moto-indexed", "--sizes", "0,150", "--samples", "4", "--seconds", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list(tmp_path.glob("bench-standin-*"))  # each stand-in's scratch goes with it
    out = proc.stdout
    for req in REQUESTS:  # client p50 and server CPU, each with a ratio of the two sizes
        # (a quick run's few calls may take less server CPU than one clock tick: no ratio then, said so)
        assert len(re.findall(rf"{re.escape(req)}\s+[\d.]+ /\s+[\d.]+\s+ratio\s+(?:[\d.]+|n/a)", out)) == 2, req
    assert re.search(r"^moto-indexed [\d.]+: start-up [\d.]+ s; server memory \(RSS\) \d+ / \d+ MB$", out, re.M), out
    rates = dict(re.findall(r"^\s+(moto_server|moto-indexed)\s+(\d+) PutItem/s", out, re.M))
    assert set(rates) == {"moto_server", "moto-indexed"} and all(int(v) > 0 for v in rates.values())
    assert re.search(r"moto-indexed / moto_server = [\d.]+", out)


@pytest.mark.e2e
@pytest.mark.skipif(dynamodb_local_missing() is not None, reason=f"DynamoDB Local: {dynamodb_local_missing()}")
def test_standins_bench_quick_has_dynamodb_local_rows():
    proc = subprocess.run([sys.executable, "bench/standins.py", "--quick", "--services", "dynamodb", "--candidates",
                           "dynamodb-local", "--sizes", "0,150", "--samples", "4", "--no-throughput"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^dynamodb-local \d+\.\d+\.\d+: start-up [\d.]+ s; server memory \(RSS\) \d+ / \d+ MB$",
                     proc.stdout, re.M), proc.stdout
    for req in REQUESTS:
        assert len(re.findall(rf"{re.escape(req)}\s+[\d.]+ /\s+[\d.]+\s+ratio", proc.stdout)) == 2, req


def test_an_unknown_candidate_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "bench/standins.py", "--candidates", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "'nope'" in proc.stderr


@pytest.mark.e2e
def test_standin_soak_quick_samples_every_process_and_prints_growth(tmp_path):
    proc = subprocess.run([sys.executable, "bench/standin_soak.py", "--quick", "--stand-in", "moto",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = (tmp_path / "soak.csv").read_text().splitlines()
    assert samples[0] == "t,dynalite,moto,seaweedfs,locust,objects,bucket_kb,disk_mb" and len(samples) >= 4
    for role in ("moto", "locust"):  # each process's memory, measured, with its growth after the settle time
        m = re.search(rf"^{role}: ([\d.]+) MB 6 s after it started -> ([\d.]+) MB at the end: ([-+][\d.]+) %",
                      proc.stdout, re.M)
        assert m and float(m[1]) > 10 and float(m[2]) > 10, proc.stdout
    assert "harness run exited 0" in proc.stdout


@pytest.mark.e2e
@pytest.mark.skipif(weed_missing() is not None, reason=f"seaweedfs unavailable: {weed_missing()}")
def test_standin_soak_quick_on_s3_samples_seaweedfs_and_the_bucket(tmp_path):
    proc = subprocess.run([sys.executable, "bench/standin_soak.py", "--quick", "--backend", "s3", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import csv

    rows = list(csv.DictReader((tmp_path / "soak.csv").open()))
    weed = [float(r["seaweedfs"]) for r in rows if r["seaweedfs"]]
    # weed's resident memory, sampled all along: the first sample may catch it starting (8.5 MB, seen under load)
    assert len(weed) >= 4 and min(weed) > 0 and max(weed) > 20, weed
    listed = [(float(r["objects"]), float(r["bucket_kb"])) for r in rows if r["objects"]]
    # the pruning run's bucket, listed all along: a listing before its first push finds it empty (0 objects, 0 KB,
    # seen in CI under load), and the run's objects and bytes show in the later ones
    assert listed and all(n >= 0 and kb >= 0 for n, kb in listed), listed
    assert max(n for n, _ in listed) >= 1 and max(kb for _, kb in listed) > 0, listed
    disk = [float(r["disk_mb"]) for r in rows if r["disk_mb"]]
    # the data directory after a vacuum on weed's master, measured all along: the first vacuum may find it under
    # 0.05 MB (written 0.0, seen in CI under load) before the run has written much
    assert len(disk) >= 2 and all(d >= 0 for d in disk) and max(disk) > 0, disk
    for col, unit in (("seaweedfs", "MB"), ("objects", "objects"), ("disk_mb", "MB on disk after a vacuum")):
        assert re.search(rf"^{col}: [\d.]+ {unit} 6 s after it started -> [\d.]+ {unit} at the end", proc.stdout,
                         re.M), proc.stdout


@pytest.mark.e2e
def test_standin_scenarios_quick_reads_each_runs_report(tmp_path):
    proc = subprocess.run([sys.executable, "bench/standin_scenarios.py", "--quick", "--stand-ins", "moto",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("namespaced ") and "| moto" in ln)
    cells = [c.strip() for c in row.split("|")]
    assert int(cells[2]) > 0 and cells[4] in ("flat", "still falling", "rising", "recovering", "stalled"), row
    assert re.search(r"namespaced / moto: .*commit \d+->\d+ ms", proc.stdout), proc.stdout


def test_soak_growth_settles_from_each_process_own_start():
    """A process that starts late (Locust on a busy machine) is measured from its own start plus the settle."""
    from bench.standin_soak import growth_after

    late = [(0.0, 0.0), (2.0, 0.0), (8.0, 8.5), (10.0, 150.0), (14.0, 180.0), (16.0, 181.0)]
    first, last, ratio = growth_after(late, 6.0)
    assert (first, last) == (180.0, 181.0) and ratio == pytest.approx(1 / 180)
    assert growth_after([(0.0, 0.0), (4.0, 9.0)], 6.0) is None  # nothing after its settle period
    assert growth_after([], 6.0) is None
