"""Soak: does an embedded stand-in's memory (and Locust's) follow the data or the request count?

Runs ``harness run pruning`` (data bounded: every model is deleted and pruned)
for ``--duration`` on ``--dynamodb-stand-in`` (and ``--backend``, ``--s3-stand-in``),
samples the resident memory of the stand-in's processes (dynalite / moto /
SeaweedFS's ``weed``, every process of each) and of the Locust process every
``--every`` seconds, and prints the curves and each one's growth after the
first five minutes (target: < 10 %). On S3 it also lists the run's bucket
(objects and bytes) at each sample, and with SeaweedFS triggers a vacuum on
its master every ``--vacuum-every`` seconds and records the disk its data
directory takes after it (its volumes are append-only: before a vacuum, disk
use follows the bytes ever written, not the bytes kept). The samples go to
``OUT/soak.csv``, so ``--from OUT/soak.csv`` prints them again.

Usage:
  python bench/standin_soak.py --duration 30m --out /tmp/soak         # the soak (about 31 minutes)
  python bench/standin_soak.py --duration 30m --backend s3            # S3 on the default (SeaweedFS)
  python bench/standin_soak.py --duration 60s --every 5 --settle 20s  # short mode (CI / a smoke check)
  python bench/standin_soak.py --from /tmp/soak/soak.csv              # print a finished soak again
  python bench/standin_soak.py --quick                                # 16 s, 2 workers: the figures print,
                                                                      # the growth verdict is not gated
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import psutil

from harness.core.durations import parse_duration

ROOT = Path(__file__).resolve().parents[1]
TARGET_GROWTH = 0.10


ROLES = ("dynalite", "moto", "seaweedfs", "locust")
S3_COLUMNS = ("objects", "bucket_kb", "disk_mb")  # the bucket listed; SeaweedFS's data directory after a vacuum
COLUMNS = (*ROLES, *S3_COLUMNS)


def role(cmdline: list[str]) -> str | None:
    """Which part of a run a process is, from its command line."""
    text = " ".join(cmdline)
    if "dynalite_server.js" in text:
        return "dynalite"
    if "harness.aws.moto_server" in text:
        return "moto"
    if cmdline and Path(cmdline[0]).name == "weed":
        return "seaweedfs"
    if "harness.aws.fidelity.probe" in text:
        return None
    if "locust" in text:
        return "locust"
    return None


def sample(root: psutil.Process) -> dict[str, float]:
    """RSS in MB per role, summed over the run's processes."""
    out: dict[str, float] = {}
    try:
        procs = root.children(recursive=True)
    except psutil.Error:
        return out
    for p in procs:
        try:
            r = role(p.cmdline())
            if r:
                out[r] = out.get(r, 0.0) + p.memory_info().rss / 2**20
        except psutil.Error:
            continue
    return out


def weed_flags(root: psutil.Process) -> dict[str, str] | None:
    """The ``-flag=value`` options of the run's ``weed`` process (its master port, its data directory)."""
    try:
        procs = root.children(recursive=True)
    except psutil.Error:
        return None
    for p in procs:
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if role(cmd) == "seaweedfs":
            return dict(a[1:].split("=", 1) for a in cmd if a.startswith("-") and "=" in a)
    return None


def vacuum_and_measure(flags: dict[str, str]) -> float | None:
    """Ask SeaweedFS's master to vacuum every volume with any garbage, then the data directory's MB on disk."""
    import urllib.request

    url = f"http://{flags.get('ip', '127.0.0.1')}:{flags['master.port']}/vol/vacuum?garbageThreshold=0.0001"
    try:
        urllib.request.urlopen(url, timeout=120).read()
    except OSError:
        return None
    total = 0
    for f in Path(flags["dir"]).rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_blocks * 512
        except OSError:
            continue
    return total / 2**20


def bucket_size(run_dir: Path) -> tuple[int, float] | None:
    """(objects, MB) in the run's bucket, listed, from the endpoint and bucket its run.json names."""
    import json

    import boto3
    from botocore.config import Config

    try:
        info = json.loads((run_dir / "run.json").read_text())
        url, bucket = info["endpoint"]["s3"], info["resources"]["bucket"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if info.get("backend") != "s3" or not url:
        return None
    c = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="harness-local",
                     aws_secret_access_key="harness-local", config=Config(s3={"addressing_style": "path"}))
    n, size = 0, 0
    try:
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for o in page.get("Contents", []):
                n += 1
                size += o["Size"]
    except Exception:  # the run is starting or stopping: no figure this time
        return None
    return n, size / 2**20


def growth_after(points: list[tuple[float, float]], settle_s: float) -> tuple[float, float, float] | None:
    """(MB at the end of the settle period, MB at the end, growth ratio) of one curve; None without data.

    The settle period counts from the process's own first sample: on a busy machine Locust can start
    seconds after the stand-ins, and a process still importing is not its settled size.
    """
    alive = [(t, v) for t, v in points if v > 0]
    after = [(t, v) for t, v in alive if t >= alive[0][0] + settle_s] if alive else []
    if len(after) < 2:
        return None
    first, last = after[0][1], after[-1][1]
    return first, last, (last - first) / first


def read_csv(path: Path) -> list[dict[str, float]]:
    with path.open() as f:
        return [{k: float(v) for k, v in row.items() if v != ""} for row in csv.DictReader(f)]


def report(rows: list[dict[str, float]], settle_s: float) -> bool:
    """Print the curves (one line a minute, or per sample when short) and the growth verdicts."""
    roles = [r for r in COLUMNS if any(r in row for row in rows)]
    unit = {r: " MB" for r in ROLES} | {"objects": "", "bucket_kb": "", "disk_mb": ""}
    print(f"{'t (s)':>7}  " + "  ".join(f"{r + unit[r]:>12}" for r in roles))
    step = 60.0 if rows and rows[-1]["t"] > 600 else 0.0
    next_t = 0.0
    for row in rows:
        if row["t"] >= next_t or row is rows[-1]:
            print(f"{row['t']:7.0f}  " + "  ".join(f"{row.get(r, float('nan')):12.1f}" for r in roles))
            next_t = row["t"] + step
    ok = True
    for r in roles:
        g = growth_after([(row["t"], row[r]) for row in rows if r in row], settle_s)
        if g is None:
            print(f"{r}: not enough samples after {settle_s:.0f} s")
            ok &= r in S3_COLUMNS  # a bucket figure can miss (listed while the run starts); memory cannot
            continue
        first, last, ratio = g
        verdict = "ok" if ratio < TARGET_GROWTH else "OVER TARGET"
        ok &= ratio < TARGET_GROWTH
        what = {"objects": "objects", "bucket_kb": "KB in the bucket", "disk_mb": "MB on disk after a vacuum"}
        label = what.get(r, "MB")
        print(f"{r}: {first:.1f} {label} {settle_s:.0f} s after it started -> {last:.1f} {label} at the end: "
              f"{ratio * 100:+.1f} % (target < {TARGET_GROWTH * 100:.0f} %) {verdict}")
    return ok


def soak(duration_s: float, every_s: float, out: Path, stand_in: str, workers: int, backend: str = "dynamodb",
         s3_stand_in: str | None = None, vacuum_every_s: float = 60.0) -> list[dict[str, float]]:
    run_dir = out / "run"
    cmd = [sys.executable, "-m", "harness", "run", "pruning", "--duration", f"{duration_s:g}s",
           "--run-dir", str(run_dir), "--no-report", "--users", str(workers), "--dynamodb-stand-in", stand_in,
           "--backend", backend, *(["--s3-stand-in", s3_stand_in] if s3_stand_in else [])]
    log = (out / "harness.out").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    root = psutil.Process(proc.pid)
    rows: list[dict[str, float]] = []
    t0 = time.monotonic()
    next_vacuum = t0 + vacuum_every_s
    with (out / "soak.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", *COLUMNS])
        while proc.poll() is None:
            s = sample(root)
            if s and backend == "s3":
                listed = bucket_size(run_dir)
                if listed:
                    s["objects"], s["bucket_kb"] = float(listed[0]), listed[1] * 1024
                flags = weed_flags(root)
                if flags and time.monotonic() >= next_vacuum:
                    next_vacuum += vacuum_every_s
                    disk = vacuum_and_measure(flags)
                    if disk is not None:
                        s["disk_mb"] = disk
            if s:
                row = {"t": time.monotonic() - t0, **s}
                rows.append(row)
                w.writerow([f"{row['t']:.1f}"] + [f"{s[k]:.1f}" if k in s else "" for k in COLUMNS])
                f.flush()
            time.sleep(every_s)
    log.close()
    print(f"harness run exited {proc.returncode}; run directory {run_dir}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", default="30m")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    ap.add_argument("--settle", default="5m", help="growth is measured after this much time")
    ap.add_argument("--stand-in", default="dynalite")
    ap.add_argument("--backend", default="dynamodb", choices=["dynamodb", "s3"])
    ap.add_argument("--s3-stand-in", choices=["seaweedfs", "moto"], help="S3's stand-in (default: the harness's)")
    ap.add_argument("--vacuum-every", type=float, default=60.0,
                    help="SeaweedFS: seconds between a vacuum and the disk figure after it")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--out", help="directory for soak.csv and the run (default: a new temporary one)")
    ap.add_argument("--from", dest="from_csv", help="print a finished soak's soak.csv")
    ap.add_argument("--quick", action="store_true",
                    help="16 s, a sample every 2 s, growth after 6 s, 2 workers; exit 0 whatever the growth "
                         "(too short to judge a leak: a smoke check that the soak and its figures work)")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.every, args.settle, args.workers = "16s", 2.0, "6s", 2
        args.vacuum_every = min(args.vacuum_every, 4.0)
    settle_s = parse_duration(args.settle)
    if args.from_csv:
        return 0 if report(read_csv(Path(args.from_csv)), settle_s) else 1
    out = Path(args.out or tempfile.mkdtemp(prefix="standin-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = soak(parse_duration(args.duration), args.every, out, args.stand_in, args.workers, args.backend,
                args.s3_stand_in, args.vacuum_every)
    print(f"samples: {out / 'soak.csv'}")
    ok = report(rows, settle_s)
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
