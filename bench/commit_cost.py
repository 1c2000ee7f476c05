"""Commit cost on a real moto server: requests, write units and milliseconds per index entry.

One commit of N entries under a lock grant, first creating the entries, then
overwriting them (a fenced commit reads what it replaces). Run with the code you
want to measure on ``PYTHONPATH`` to compare two versions side by side:

    python bench/commit_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.aws.clients import make_clients  # noqa: E402
from harness.aws.endpoints import Endpoints  # noqa: E402
from harness.aws.moto_server import DUMMY_CREDENTIALS, EmbeddedMoto  # noqa: E402
from harness.datastore.backends.base import FileMeta  # noqa: E402
from harness.datastore.backends.dynamodb import DynamoBackend  # noqa: E402
from harness.datastore.backends.s3 import S3Backend  # noqa: E402
from harness.datastore.lock import Lock, LockConfig  # noqa: E402
from harness.work import Work  # noqa: E402


def entries(n: int, rev: int) -> list[FileMeta]:
    """``n`` entries over 5 models (partitions) of namespace w1."""
    return [FileMeta(f"w1/data/system/m{i % 5}/x/{i}/raw", 100, f"d{rev}-{i}", 1000 + rev, rev) for i in range(n)]


def measure(backend, n: int, reps: int) -> dict[str, float]:
    lock = Lock(backend.lock_store, ".locks/w1.lock", backend.clock, LockConfig(ttl_s=60, wait_s=5))
    ms, reqs, wu = [], [], []
    for rev in range(1, reps + 1):
        grant = lock.acquire(Work())
        w = Work()
        t = time.perf_counter()
        backend.commit("w1", entries(n, rev), grant, w)
        ms.append((time.perf_counter() - t) * 1000)
        reqs.append(w.total_requests)
        wu.append(w.write_units)
        lock.release(grant, Work())
    return {"ms": statistics.median(ms[1:] or ms), "requests": statistics.median(reqs[1:] or reqs),
            "write_units": statistics.median(wu[1:] or wu)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small commits, two repetitions (seconds)")
    args = p.parse_args(argv)
    sizes, reps = ((5, 50), 2) if args.quick else ((5, 50, 500), 4)
    moto = EmbeddedMoto().start()
    os.environ.update(**DUMMY_CREDENTIALS)
    try:
        clients = make_clients(Endpoints(moto.url, moto.url, "moto"))
        print(f"{'backend':12s} {'entries':>7s} {'ms':>8s} {'ms/entry':>9s} {'req':>6s} {'req/entry':>9s} "
              f"{'WU/entry':>8s}")
        for name, make in (("dynamodb", lambda t: DynamoBackend(clients.dynamodb, t, "per-model")),
                           ("s3-sharded", lambda t: S3Backend(clients.s3, t, "sharded")),
                           ("s3-monolith", lambda t: S3Backend(clients.s3, t, "monolith"))):
            for n in sizes:
                be = make(f"cost-{name}-{n}")
                be.ensure()
                r = measure(be, n, reps)
                print(f"{name:12s} {n:7d} {r['ms']:8.1f} {r['ms'] / n:9.2f} {r['requests']:6.0f} "
                      f"{r['requests'] / n:9.2f} {r['write_units'] / n:8.2f}", flush=True)
    finally:
        moto.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
