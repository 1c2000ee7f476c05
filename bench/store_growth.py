"""Does a pruned run's datastore stay the size of its live data? Items and bytes of the table and bucket over time.

Starts the embedded default stand-in itself, runs ``harness run pruning``
against it (its endpoint given as ``AWS_ENDPOINT_URL_*``, a table and bucket
named here), and every ``--every`` seconds counts what the store holds: the
table's items and bytes by Scan (dynalite's DescribeTable always says 0), the
bucket's objects and bytes by ListObjectsV2. It prints both curves and each
one's growth from the end of ``--settle`` to the end (target: within 10 %).

    python bench/store_growth.py --duration 30m --every 60          # the soak, both backends (~62 minutes)
    python bench/store_growth.py --backend s3 --duration 10m
    python bench/store_growth.py --quick              # 15 s each, both at once: the figures print, no verdict
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.aws import standin  # noqa: E402
from harness.aws.capacity import item_size  # noqa: E402
from harness.aws.clients import make_clients  # noqa: E402
from harness.aws.endpoints import Endpoints  # noqa: E402
from harness.aws.moto_server import DUMMY_CREDENTIALS  # noqa: E402
from harness.core.durations import parse_duration  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_GROWTH = 0.10


def table_size(client, table: str) -> tuple[int, int]:
    """(items, bytes) of the whole table, by Scan."""
    n = size = 0
    kwargs = {"TableName": table}
    while True:
        try:
            out = client.scan(**kwargs)
        except client.exceptions.ResourceNotFoundException:
            return 0, 0
        n += len(out["Items"])
        size += sum(item_size(i) for i in out["Items"])
        if "LastEvaluatedKey" not in out:
            return n, size
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def bucket_size(client, bucket: str) -> tuple[int, int]:
    """(objects, bytes) of the whole bucket, by ListObjectsV2."""
    n = size = 0
    kwargs = {"Bucket": bucket}
    while True:
        try:
            out = client.list_objects_v2(**kwargs)
        except client.exceptions.NoSuchBucket:
            return 0, 0
        n += out.get("KeyCount", 0)
        size += sum(o["Size"] for o in out.get("Contents", []))
        if not out.get("IsTruncated"):
            return n, size
        kwargs["ContinuationToken"] = out["NextContinuationToken"]


def growth(points: list[tuple[float, int]], settle_s: float) -> tuple[int, int, float] | None:
    """(level after the settle period, level at the end, relative change); None without two samples after it.

    The settle period counts from the first sample with data (the run takes seconds to start its load).
    """
    started = next((t for t, v in points if v > 0), None)
    after = [v for t, v in points if started is not None and t >= started + settle_s]
    if len(after) < 2 or after[0] == 0:
        return None
    return after[0], after[-1], (after[-1] - after[0]) / after[0]


def soak(backend: str, seconds: float, every: float, settle: float, server, run_dir: Path) -> dict[str, list]:
    clients = make_clients(Endpoints(server.urls["dynamodb"], server.urls["s3"], "other"))
    name = f"growth-{backend}-{int(time.time())}"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT_URL", "HARNESS_"))},
           **DUMMY_CREDENTIALS, "AWS_ENDPOINT_URL_DYNAMODB": server.urls["dynamodb"],
           "AWS_ENDPOINT_URL_S3": server.urls["s3"]}
    cmd = [sys.executable, "-m", "harness", "run", "pruning", "--backend", backend, "--duration", f"{seconds:g}s",
           "--table", name, "--bucket", name, "--run-dir", str(run_dir), "--no-report"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    curves: dict[str, list] = {"items": [], "bytes": []}
    stop = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.wait(every):
            n, b = table_size(clients.dynamodb, name) if backend == "dynamodb" else bucket_size(clients.s3, name)
            t = time.monotonic() - t0
            curves["items"].append((t, n))
            curves["bytes"].append((t, b))
            print(f"  {backend:8s} {t:7.0f} s  {n:8d} {'items' if backend == 'dynamodb' else 'objects'}"
                  f"  {b / 1024:10.1f} KiB", flush=True)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate(timeout=seconds + 600)
    stop.set()
    sampler.join()
    if proc.returncode not in (0, 3):
        raise SystemExit(f"store_growth: the run failed (exit {proc.returncode}): {err[-1500:]}")
    return curves


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["dynamodb", "s3", "both"], default="both")
    p.add_argument("--duration", default="30m")
    p.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    p.add_argument("--settle", default="5m", help="growth is measured from the end of this period")
    p.add_argument("--quick", action="store_true",
                   help="15 s per backend, both at once, a sample every 3 s (no verdict)")
    args = p.parse_args(argv)
    if args.quick:
        args.duration, args.every, args.settle = "15s", 3.0, "3s"
    seconds, settle = parse_duration(args.duration), parse_duration(args.settle)
    os.environ.update(**DUMMY_CREDENTIALS)
    backends = ["dynamodb", "s3"] if args.backend == "both" else [args.backend]
    with tempfile.TemporaryDirectory(prefix="store-growth-") as tmp:
        server = standin.start(run_dir=tmp, note=lambda m: print(m, file=sys.stderr))
        try:
            print(f"stand-in: {server.name} {server.version} ({server.services}); pruning for {args.duration}, "
                  f"a sample every {args.every:g} s", flush=True)
            # quick: both backends' runs at once (their own table and bucket, on the one stand-in), which halves
            # the smoke check's time; the soak measures one backend at a time, alone on the machine
            with ThreadPoolExecutor(max_workers=len(backends) if args.quick else 1) as pool:
                futures = {b: pool.submit(soak, b, seconds, args.every, settle, server, Path(tmp) / f"run-{b}")
                           for b in backends}
                results = {b: f.result() for b, f in futures.items()}
        finally:
            server.stop()
    ok = True
    for b, curves in results.items():
        for what, points in curves.items():
            g = growth(points, settle)
            if g is None:
                print(f"{b:8s} {what:6s} too few samples after {args.settle} to compare")
                continue
            verdict = "" if args.quick else ("  within 10 %" if abs(g[2]) <= TARGET_GROWTH else "  GREW")
            ok = ok and (args.quick or abs(g[2]) <= TARGET_GROWTH)
            print(f"{b:8s} {what:6s} {g[0]:>10d} after {args.settle} -> {g[1]:>10d} at the end  "
                  f"({g[2] * 100:+.1f} %){verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
