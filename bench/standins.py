"""Which local DynamoDB stand-in has request costs that follow the work, not the table?

For each candidate, grow one table (the harness's shape: pk/sk, GSI gsi1) from
0 to 20k to 100k items and time, at each size, requests whose result size is
fixed: GetItem, a Query on a 5-item GSI partition, a Query of a 5-item
base-table partition, a conditional UpdateItem (the lock acquire) and a
BatchWriteItem of 25 (overwriting the same 25 keys). Prints the p50 (ms) per
size and the ratio largest/smallest size (target for the default: <= 1.5).
Then 16 client threads of PutItem against stock ``moto_server`` (the console
script moto ships, Werkzeug) and against each candidate, in the same run:
requests/s, the ratio to stock (target for the default: >= 2) and the client's
own CPU per call (one Python process: the GIL caps it at 1000 / CPU ms calls/s).

Candidates: ``moto_server`` (stock), ``moto`` (the harness's keep-alive moto,
stock queries), ``moto-indexed`` (moto with per-partition Query candidates),
``dynalite`` (npm, LevelDB on disk), ``dynalite-memory``, ``dynamodb-local``
(AWS's DynamoDB Local on Java, in memory; skipped with a line where Java or its
npm package is missing). Each also gets its start-up time (start to first
answer) and the server process's resident memory at each size.

S3 (``bench/standins_s3.py``): the same growth for a bucket (0 / 20k / 100k
objects) with PutObject, GetObject, a conditional PutObject and
ListObjectsV2 on a 5-object prefix, for moto and SeaweedFS; then the mix of
the four from 16 threads, with each server's CPU per request.

Usage:
  python bench/standins.py                    # sizes 0, 20k, 100k; 20 s of throughput per stand-in; both services
  python bench/standins.py --quick            # sizes 0, 300, 1500; seconds (CI runs this)
  python bench/standins.py --candidates dynalite,moto_server --sizes 0,5000
  python bench/standins.py --services s3 --s3-candidates moto,seaweedfs
Soak (memory over a long run): bench/standin_soak.py.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import boto3
import psutil
from botocore.config import Config

from bench import standins_s3

ROOT = Path(__file__).resolve().parents[1]
ALL = ("moto_server", "moto", "moto-indexed", "dynalite", "dynalite-memory", "dynamodb-local")
DEFAULT_CANDIDATES = ("moto_server", "moto-indexed", "dynalite", "dynalite-memory", "dynamodb-local")
REQUESTS = ("GetItem", "Query GSI 5 items", "Query pk 5 items", "UpdateItem conditional", "BatchWrite 25")
TABLE = "bench-standins"
TARGET_RATIO = 1.5
TARGET_THROUGHPUT = 2.0


@dataclass
class Server:
    name: str
    url: str
    stop: Callable[[], None]
    version: str = ""
    pids: tuple[int, ...] = ()
    start_s: float = 0.0  # from launching it to its first answer

    def rss_mb(self) -> float:
        """Resident memory of the DynamoDB server process(es), MB."""
        return sum(psutil.Process(pid).memory_info().rss for pid in self.pids) / 1e6

    def cpu_s(self) -> float:
        """CPU seconds the DynamoDB server process has used: a cost the machine's other load does not inflate."""
        total = 0.0
        for pid in self.pids:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        return total


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stock_moto_server() -> Server:
    """moto's own console script (Werkzeug, Connection: close), as a user would start it."""
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            break
        except OSError:
            time.sleep(0.2)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # Werkzeug's threaded server can hang on open connections
            proc.kill()
            proc.wait(10)

    from importlib import metadata
    return Server("moto_server", url, stop, metadata.version("moto"), (proc.pid,))


def start(name: str) -> Server:
    t0 = time.monotonic()
    if name == "moto_server":
        server = _stock_moto_server()
    else:
        from harness.aws import standin

        scratch = tempfile.mkdtemp(prefix="bench-standin-")
        s = standin.start(name, scratch, services=["dynamodb"])  # no S3 server
        pid = s.pids.get(name) or s.pids.get("dynalite") or s.pids["moto"]  # the process serving DynamoDB

        def stop() -> None:
            s.stop()
            shutil.rmtree(scratch, ignore_errors=True)  # its log and data: the figures are printed

        server = Server(name, s.urls["dynamodb"], stop, s.version, (pid,))
    client(server.url).list_tables()  # its first answer
    server.start_s = time.monotonic() - t0
    return server


def missing(name: str) -> str | None:
    """Why a candidate cannot start here (None: it can)."""
    if name == "moto_server":
        return None
    from harness.aws import standin

    return standin.missing_runtime(name)


def client(url: str, pool: int = 20):  # noqa: ANN201 - a boto3 client
    cfg = Config(retries={"max_attempts": 2, "mode": "standard"}, max_pool_connections=pool, read_timeout=120)
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench", config=cfg)


def create_table(c) -> None:  # noqa: ANN001
    keys = ("pk", "sk", "gsi1pk", "gsi1sk")
    c.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[{"IndexName": "gsi1", "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                                               {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}])
    c.get_waiter("table_exists").wait(TableName=TABLE, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})


def _file_item(i: int, part: str | None = None) -> dict:
    rel = f"data/m{i // 5}/f{i}/raw"
    return {"pk": {"S": f"FILE#{rel}"}, "sk": {"S": "META"}, "relPath": {"S": rel},
            "gsi1pk": {"S": part or f"FILE#m{i // 100}"}, "gsi1sk": {"S": f"{i:013d}|{rel}"},
            "size": {"N": "100"}, "digest": {"S": "d" * 40}, "data": {"S": "x" * 120}}


def _batch(c, items: list[dict]) -> None:  # noqa: ANN001
    pending = {TABLE: [{"PutRequest": {"Item": it}} for it in items]}
    while pending:
        pending = c.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def fill(c, start_i: int, end_i: int, threads: int = 4) -> None:  # noqa: ANN001
    """Items start_i..end_i in 100-item GSI partitions, written by a few threads."""
    chunks = [list(range(i, min(i + 25, end_i))) for i in range(start_i, end_i, 25)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for chunk in chunks[k::threads]:
                _batch(c, [_file_item(i) for i in chunk])
        except BaseException as e:  # propagated below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def seed_fixed(c) -> None:  # noqa: ANN001
    """The fixed small partitions the timed requests read."""
    _batch(c, [_file_item(10_000_000 + i, part="FILE#fixed") for i in range(5)])
    _batch(c, [{"pk": {"S": "FIXED"}, "sk": {"S": f"S#{i}"}, "v": {"S": "x" * 120}} for i in range(5)])


def requests(c) -> dict[str, Callable[[], None]]:  # noqa: ANN001
    batch = [{"pk": {"S": "BATCH"}, "sk": {"S": f"B#{i:02d}"}, "v": {"S": "y" * 120}} for i in range(25)]

    def query_gsi() -> None:
        out = c.query(TableName=TABLE, IndexName="gsi1", KeyConditionExpression="gsi1pk = :p AND gsi1sk >= :s",
                      ExpressionAttributeValues={":p": {"S": "FILE#fixed"}, ":s": {"S": "0"}})
        assert out["Count"] == 5, out["Count"]

    def query_pk() -> None:
        out = c.query(TableName=TABLE, KeyConditionExpression="pk = :p",
                      ExpressionAttributeValues={":p": {"S": "FIXED"}})
        assert out["Count"] == 5, out["Count"]

    def update() -> None:
        c.update_item(TableName=TABLE, Key={"pk": {"S": "LOCK#bench"}, "sk": {"S": "LOCK"}},
                      UpdateExpression="SET nonce = :n, expiresAtMs = :e ADD fence :one",
                      ConditionExpression="attribute_not_exists(nonce) OR expiresAtMs < :now",
                      ExpressionAttributeValues={":n": {"S": "n"}, ":e": {"N": "1"}, ":one": {"N": "1"},
                                                 ":now": {"N": str(int(time.time() * 1000))}})

    return {
        "GetItem": lambda: c.get_item(TableName=TABLE, Key={"pk": {"S": "FIXED"}, "sk": {"S": "S#0"}}),
        "Query GSI 5 items": query_gsi,
        "Query pk 5 items": query_pk,
        "UpdateItem conditional": update,
        "BatchWrite 25": lambda: _batch(c, batch),
    }


def p50(call: Callable[[], None], samples: int, budget_s: float, server: Server) -> tuple[float, float]:
    """(median ms, server CPU ms per call) over up to ``samples`` calls (at least 3, stopping after
    ``budget_s``), after one warm-up call."""
    call()
    times: list[float] = []
    t_end = time.monotonic() + budget_s
    cpu0 = server.cpu_s()
    while len(times) < samples and (len(times) < 3 or time.monotonic() < t_end):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), (server.cpu_s() - cpu0) * 1000 / len(times)


@dataclass
class CostResult:
    name: str
    version: str
    sizes: list[int]
    ms: dict[str, list[float]] = field(default_factory=dict)
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    start_s: float = 0.0
    rss_mb: list[float] = field(default_factory=list)  # the server's resident memory after each size's requests


def warm_up(reqs: dict[str, Callable[[], None]], seconds: float) -> None:
    """Every timed request, round after round, for ``seconds``: a JIT (the JVM's, V8's) compiles the server's hot
    paths in its first thousands of requests, which would otherwise be charged to the first table size."""
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        for call in reqs.values():
            call()


def costs(name: str, sizes: list[int], samples: int, budget_s: float, warm_s: float = 0.0) -> CostResult:
    server = start(name)
    try:
        c = client(server.url)
        create_table(c)
        seed_fixed(c)
        reqs = requests(c)
        warm_up(reqs, warm_s)
        res = CostResult(name, server.version, sizes, {r: [] for r in REQUESTS}, {r: [] for r in REQUESTS},
                         server.start_s)
        have = 0
        for size in sizes:
            fill(c, have, size)
            have = max(have, size)
            for r in REQUESTS:
                ms, cpu_ms = p50(reqs[r], samples, budget_s, server)
                res.ms[r].append(ms)
                res.cpu_ms[r].append(cpu_ms)
            res.rss_mb.append(server.rss_mb())
            print(f"  {name}: {size:,} items: " + ", ".join(f"{r} {res.ms[r][-1]:.1f}" for r in REQUESTS),
                  flush=True)
        return res
    finally:
        server.stop()


def throughput(name: str, threads: int, seconds: float, warm_s: float = 0.0) -> tuple[float, float]:
    """(PutItem/s with ``threads`` client threads, client CPU ms per call), after ``warm_s`` of the same calls."""
    server = start(name)
    try:
        c = client(server.url, pool=threads + 4)
        create_table(c)
        warm_until = time.monotonic() + warm_s
        while time.monotonic() < warm_until:
            c.put_item(TableName=TABLE, Item={"pk": {"S": "T#warm"}, "sk": {"S": "0"}, "v": {"S": "x" * 100}})
        stop_at = time.monotonic() + seconds
        counts = [0] * threads
        errors: list[BaseException] = []

        def work(k: int) -> None:
            i = 0
            try:
                while time.monotonic() < stop_at:
                    c.put_item(TableName=TABLE, Item={"pk": {"S": f"T#{k}"}, "sk": {"S": f"{i % 50}"},
                                                      "v": {"S": "x" * 100}})
                    i += 1
                    counts[k] += 1
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        cpu0, t0 = time.process_time(), time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
        if errors:
            raise errors[0]
        n = sum(counts)
        return n / wall, cpu * 1000 / max(n, 1)
    finally:
        server.stop()


def print_costs(results: list[CostResult]) -> None:
    sizes = results[0].sizes
    head = " / ".join(f"{s:,}" for s in sizes)
    print(f"\nper request at {head} items: p50 ms seen by the client, and the server process's CPU ms per "
          f"request\n(which other load on the machine does not inflate); ratio = largest size / smallest size "
          f"(target for the default <= {TARGET_RATIO})")
    width = max(len(r) for r in REQUESTS)
    for res in results:
        print(f"\n{res.name} {res.version}: start-up {res.start_s:.1f} s; server memory (RSS) "
              + " / ".join(f"{m:.0f}" for m in res.rss_mb) + " MB")
        for label, table in (("p50 ms", res.ms), ("server CPU ms", res.cpu_ms)):
            for r in REQUESTS:
                ms = table[r]
                print(f"  {label:<13} {r:<{width}}  " + " / ".join(f"{v:8.2f}" for v in ms)
                      + f"   ratio {standins_s3.ratio_text(ms, TARGET_RATIO)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and short runs (seconds)")
    ap.add_argument("--candidates", default=",".join(DEFAULT_CANDIDATES), help=f"comma list of {', '.join(ALL)}")
    ap.add_argument("--sizes", help="comma list of table sizes (default 0,20000,100000; quick 0,300,1500)")
    ap.add_argument("--samples", type=int, help="samples per request and size (default 40; quick 10)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seconds", type=float, help="throughput run per stand-in (default 20; quick 3)")
    ap.add_argument("--warm-up", type=float, help="seconds of the timed requests before the first size, and of PutItem "
                    "before the throughput is counted (default 15; quick 0): DynamoDB Local's JVM compiles its hot "
                    "paths over its first thousands of requests")
    ap.add_argument("--no-costs", action="store_true")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--services", default="dynamodb,s3", help="comma list of dynamodb, s3")
    ap.add_argument("--s3-candidates", default=",".join(standins_s3.DEFAULT),
                    help=f"comma list of {', '.join(standins_s3.ALL)}")
    args = ap.parse_args()
    names = [n.strip() for n in args.candidates.split(",") if n.strip()]
    s3_names = [n.strip() for n in args.s3_candidates.split(",") if n.strip()]
    services = [n.strip() for n in args.services.split(",") if n.strip()]
    for label, given, known in (("candidate", names, ALL), ("S3 candidate", s3_names, standins_s3.ALL),
                                ("service", services, ("dynamodb", "s3"))):
        bad = [n for n in given if n not in known]
        if bad:
            print(f"standins: unknown {label} {bad[0]!r}: choose from {', '.join(known)}", file=sys.stderr)
            return 2
    sizes = [int(s) for s in (args.sizes or ("0,300,1500" if args.quick else "0,20000,100000")).split(",")]
    samples = args.samples or (10 if args.quick else 40)
    seconds = args.seconds or (3.0 if args.quick else 20.0)
    budget = 2.0 if args.quick else 10.0
    args.warm_up = args.warm_up if args.warm_up is not None else (0.0 if args.quick else 15.0)
    if "dynamodb" in services:
        dynamodb(args, names, sizes, samples, seconds, budget)
    if "s3" in services:
        if not args.no_costs:
            results = []
            for n in s3_names:
                print(f"S3 costs: {n}", flush=True)
                results.append(standins_s3.costs(n, sizes, samples, budget))
            standins_s3.print_costs(results)
        if not args.no_throughput:
            standins_s3.print_mix(s3_names, args.threads, seconds)
    return 0


def dynamodb(args: argparse.Namespace, names: list[str], sizes: list[int], samples: int, seconds: float,
             budget: float) -> None:
    """The DynamoDB rows: per-request cost at each table size, then PutItem throughput."""
    for n in list(names):
        why = missing(n)
        if why:
            print(f"skipped: {n}: {why}", flush=True)
            names.remove(n)
    if not args.no_costs:
        results = []
        for n in names:
            print(f"costs: {n}", flush=True)
            results.append(costs(n, sizes, samples, budget, args.warm_up))
        print_costs(results)
    if not args.no_throughput:
        print(f"\nthroughput: {args.threads} client threads of PutItem, {seconds:g} s each (after {args.warm_up:g} s "
              "of warm-up), one client process")
        rates = {}
        for n in dict.fromkeys(["moto_server", *names]):
            rate, cpu_ms = throughput(n, args.threads, seconds, args.warm_up)
            rates[n] = rate
            print(f"  {n:<16} {rate:8.0f} PutItem/s   client CPU {cpu_ms:.2f} ms/call "
                  f"(one process: at most {1000 / cpu_ms:.0f} calls/s)", flush=True)
        for n in names:
            if n != "moto_server":
                print(f"  {n} / moto_server = {rates[n] / rates['moto_server']:.2f} "
                      f"(target for the default >= {TARGET_THROUGHPUT})")


if __name__ == "__main__":
    sys.exit(main())
