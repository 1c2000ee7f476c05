"""What one index commit costs: requests, milliseconds and write units per entry, fenced and not.

For 5, 50 and 500 entries spread over 1, 6 and 51 models (partitions, shards),
on both backends and every index layout, fencing on and off, on the embedded
default stand-in: one worker stages N files of one namespace, takes the lock,
pulls, pushes, and commits them; the first commit creates the entries, and the
figures are the mean over the next three commits of the same N paths (each a
new version), so they include the cleanup of the index items and content those
commits supersede. ``requests`` are the commit's under the lock; ``after``
the ones that cleanup made after the release (step ``collect``: fenced since
issue 43, when no key is written by two commits; older code made them all
under the lock, and shows 0 here). Content is written by the push and is not
counted.

    python bench/commit_cost.py [--json] [--quick] [--sizes 5,50] [--models 1,6] [--backend dynamodb]

Run it with the code you want to measure first on ``PYTHONPATH`` to compare two
versions side by side (it uses only the datastore's public steps).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.aws import standin  # noqa: E402
from harness.aws.clients import make_clients  # noqa: E402
from harness.aws.endpoints import Endpoints  # noqa: E402
from harness.aws.moto_server import DUMMY_CREDENTIALS  # noqa: E402
from harness.core.work import Work  # noqa: E402
from harness.datastore.backends.dynamodb import DynamoBackend  # noqa: E402
from harness.datastore.backends.s3 import S3Backend  # noqa: E402
from harness.datastore.catalog import Catalog  # noqa: E402
from harness.datastore.lock import LockConfig  # noqa: E402
from harness.datastore.sync import Datastore, SyncConfig  # noqa: E402
from harness.datastore.variant import Variant  # noqa: E402

NAMESPACE = "w1"
MEASURED = 3  # commits after the creating one
LAYOUTS = (("dynamodb", "per-model"), ("dynamodb", "legacy"), ("s3", "sharded"), ("s3", "monolith"))


def budget(backend: str, entries: int, shards: int) -> int:
    """The bound under the lock for a fenced commit of N entries that each replace one: on DynamoDB
    2 x ceil(N/25) + 3 (its design since issue 19: the versions, the registry, the seal; issue 30 had moved the
    deletes of what they superseded and its content under the lock, issue 43 moved them after the release);
    shards touched + 3 on S3."""
    return 2 * math.ceil(entries / 25) + 3 if backend == "dynamodb" else shards + 3


def _stage(store: Datastore, rel: str, data: bytes) -> None:
    stage = getattr(store, "stage", None) or store._stage  # older code: the private name
    stage(rel, data)


def measure(make_backend, fencing: bool, entries: int, models: int) -> dict[str, float]:
    be = make_backend(fencing)
    be.ensure()
    cfg = SyncConfig(namespace=NAMESPACE, index_commit="delta", heartbeat=False,
                     lock=LockConfig(ttl_s=60, wait_s=10, retry_s=0.05, retry_cap_s=0.1))
    store = Datastore(be, Catalog(), cfg, holder="bench")
    ms, reqs, wus, after = [], [], [], []
    for rev in range(MEASURED + 1):
        for i in range(entries):
            _stage(store, f"{NAMESPACE}/data/system/m{i % models}/x/{i}/raw", f"rev {rev} entry {i}".encode())
        steps: list = []
        with store.locked(steps) as grant:
            store.pull(Work())
            store.prepare(Work())
            w = Work()
            t0 = time.perf_counter()
            store.commit(grant, w)
            elapsed = (time.perf_counter() - t0) * 1000
        if rev:
            ms.append(elapsed)
            reqs.append(w.total_requests)
            collected = [s.work for s in steps if s.name == "collect"]  # after the release (none in older code)
            after.append(sum(c.total_requests for c in collected))
            wus.append(w.write_units + sum(c.write_units for c in collected))
    return {"requests": statistics.mean(reqs), "after": statistics.mean(after), "ms": statistics.mean(ms),
            "wu": statistics.mean(wus)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="one JSON object a line instead of the table")
    p.add_argument("--quick", action="store_true", help="5 and 50 entries over 1 and 6 models (seconds)")
    p.add_argument("--sizes", help="entries per commit, comma-separated (default 5,50,500)")
    p.add_argument("--models", help="models the entries spread over, comma-separated (default 1,6,51)")
    p.add_argument("--stand-in", default=None, help="the embedded stand-in to measure on (default: the default)")
    p.add_argument("--backend", choices=("dynamodb", "s3"), help="one backend only (default both)")
    args = p.parse_args(argv)
    sizes = [int(x) for x in (args.sizes or ("5,50" if args.quick else "5,50,500")).split(",")]
    model_counts = [int(x) for x in (args.models or ("1,6" if args.quick else "1,6,51")).split(",")]
    os.environ.update(**DUMMY_CREDENTIALS)
    server = standin.start(args.stand_in, note=lambda msg: print(msg, file=sys.stderr))
    try:
        clients = make_clients(Endpoints(server.urls["dynamodb"], server.urls["s3"], "embedded"))
        if not args.json:
            print(f"stand-in: {server.name} {server.version} ({server.services})")
            print(f"{'backend':9s} {'layout':10s} {'fencing':7s} {'entries':>7s} {'shards':>6s} {'requests':>8s} "
                  f"{'bound':>6s} {'after':>6s} {'ms/entry':>8s} {'WU/entry':>8s}")
            print(f"{'':44s}(under the lock)  (after the release)")
        n = 0
        for backend, layout in [x for x in LAYOUTS if args.backend in (None, x[0])]:
            for fencing in (True, False):
                for entries in sizes:
                    for models in model_counts:
                        n += 1
                        name = f"cost-{n}-{entries}x{models}"
                        if backend == "dynamodb":  # fenced or not: the backend's variant
                            def make(fencing, name=name, layout=layout):
                                return DynamoBackend(clients.dynamodb, name, layout, variant=Variant(fenced=fencing))
                        else:
                            def make(fencing, name=name, layout=layout):
                                return S3Backend(clients.s3, name, layout, variant=Variant(fenced=fencing))
                        r = measure(make, fencing, entries, models)
                        shards = min(entries, models) if layout != "monolith" else 1
                        out = {"backend": backend, "layout": layout, "fencing": fencing, "entries": entries,
                               "models": models, "shards": shards, "requests": round(r["requests"], 2),
                               "after": round(r["after"], 2),
                               "ms_per_entry": round(r["ms"] / entries, 3),
                               "wu_per_entry": round(r["wu"] / entries, 3)}
                        if fencing:
                            out["bound"] = budget(backend, entries, shards)
                        if args.json:
                            print(json.dumps(out), flush=True)
                        else:
                            print(f"{backend:9s} {layout:10s} {'on' if fencing else 'off':7s} {entries:7d} "
                                  f"{shards:6d} {out['requests']:8.1f} {out.get('bound', ''):>6} "
                                  f"{out['after']:6.1f} {out['ms_per_entry']:8.2f} {out['wu_per_entry']:8.2f}",
                                  flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
