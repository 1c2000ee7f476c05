"""The S3 rows of ``bench/standins.py``: does a request's server cost follow the work, not the bucket?

For each S3 candidate, grow one bucket from 0 to 20k to 100k objects (1 KB,
in 100-object prefixes) and time, at each size, requests whose result is
fixed: PutObject (1 KB, over the same key), GetObject (1 KB), a conditional
PutObject (``If-Match`` on the ETag of the last write: the lock's
compare-and-swap) and ListObjectsV2 on a prefix of 5 objects. Per request:
the client's p50 and the server process's CPU (from ``/proc``, every process
of the server, less its idle CPU over the same time), and the ratio largest / smallest size (target for the
default: <= 1.5). Then the mix of the four from 16 client threads for a few
seconds: requests/s and the server's CPU per request (target: SeaweedFS at
most half of moto's; on 2 cores the client, not the server, limits the rate).

Candidates: ``moto`` (the harness's keep-alive moto server, what S3 used to
run on), ``moto_server`` (moto's own console script, Werkzeug), ``seaweedfs``
(``weed mini``, the default).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import boto3
import psutil
from botocore.config import Config

ALL = ("moto", "moto_server", "seaweedfs")
DEFAULT = ("moto", "seaweedfs")
REQUESTS = ("PutObject 1 KB", "GetObject 1 KB", "PutObject If-Match", "ListObjectsV2 5 objects")
BUCKET = "bench-standins"
BODY = b"x" * 1024
TARGET_RATIO = 1.5
TARGET_MIX_CPU = 0.5  # SeaweedFS's server CPU per request of the mix, as a share of moto's


def ratio_text(ms: list[float], target: float) -> str:
    """Largest size over smallest, against the target; none when the smallest is 0 (a quick run's few calls
    can take less server CPU than one tick of the process clock, 10 ms)."""
    if not ms[0]:
        return "   n/a (under one CPU clock tick)"
    r = ms[-1] / ms[0]
    return f"{r:6.2f} {'ok' if r <= target else 'over'}"


@dataclass
class S3Server:
    name: str
    url: str
    stop: Callable[[], None]
    version: str
    pid: int

    def cpu_s(self) -> float:
        """CPU seconds of the server process and its children: a cost other load on the machine does not inflate."""
        total = 0.0
        try:
            root = psutil.Process(self.pid)
            for p in [root, *root.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
        return total


def start(name: str) -> S3Server:
    if name == "moto_server":
        from bench.standins import _stock_moto_server

        s = _stock_moto_server()
        return S3Server(name, s.url, s.stop, s.version, s.pids[0])
    if name == "moto":
        from harness.aws.moto_server import EmbeddedMoto

        m = EmbeddedMoto().start()
        return S3Server(name, m.url, m.stop, m.version, m.proc.pid)
    from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS

    w = EmbeddedSeaweedFS().start()  # its data and log in a scratch directory it removes at stop
    return S3Server(name, w.url, w.stop, w.version, w.proc.pid)


def client(url: str, pool: int = 20):  # noqa: ANN201 - a boto3 client
    cfg = Config(retries={"max_attempts": 2, "mode": "standard"}, max_pool_connections=pool, read_timeout=120,
                 s3={"addressing_style": "path"})
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench", config=cfg)


def fill(c, start_i: int, end_i: int, threads: int = 8) -> None:  # noqa: ANN001
    """Objects start_i..end_i, 1 KB each, in 100-object prefixes, written by a few threads."""
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(start_i + k, end_i, threads):
                c.put_object(Bucket=BUCKET, Key=f"fill/p{i // 100:05d}/o{i:07d}", Body=BODY)
        except BaseException as e:  # propagated below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def requests(c) -> dict[str, Callable[[], None]]:  # noqa: ANN001
    for i in range(5):
        c.put_object(Bucket=BUCKET, Key=f"fixed/list/{i}", Body=BODY)
    c.put_object(Bucket=BUCKET, Key="fixed/get", Body=BODY)
    etag = [c.put_object(Bucket=BUCKET, Key="fixed/lock", Body=b"0")["ETag"]]
    n = [0]

    def cas() -> None:
        n[0] += 1
        etag[0] = c.put_object(Bucket=BUCKET, Key="fixed/lock", Body=str(n[0]).encode(), IfMatch=etag[0])["ETag"]

    def listing() -> None:
        out = c.list_objects_v2(Bucket=BUCKET, Prefix="fixed/list/")
        assert out["KeyCount"] == 5, out["KeyCount"]

    return {
        "PutObject 1 KB": lambda: c.put_object(Bucket=BUCKET, Key="fixed/put", Body=BODY),
        "GetObject 1 KB": lambda: c.get_object(Bucket=BUCKET, Key="fixed/get")["Body"].read(),
        "PutObject If-Match": cas,
        "ListObjectsV2 5 objects": listing,
    }


MIN_SERVER_CPU_S = 0.25  # per figure: the kernel counts CPU in 10 ms ticks, so at least 25 of them


def idle_cpu_rate(server: S3Server, seconds: float) -> float:
    """The server's own CPU seconds per second with no request (weed's heartbeats and maintenance worker)."""
    cpu0, t0 = server.cpu_s(), time.monotonic()
    time.sleep(seconds)
    return (server.cpu_s() - cpu0) / (time.monotonic() - t0)


def p50(call: Callable[[], None], samples: int, budget_s: float, server: S3Server,
        idle: float = 0.0) -> tuple[float, float]:
    """(median ms, server CPU ms per call), after one warm-up call.

    At least ``samples`` calls, and more until the server has used ``MIN_SERVER_CPU_S`` (or ``budget_s`` is
    spent); the server's idle CPU over the same time is taken off.
    """
    call()
    times: list[float] = []
    t_end = time.monotonic() + budget_s
    cpu0, w0 = server.cpu_s(), time.monotonic()
    while len(times) < 3 or (time.monotonic() < t_end and (
            len(times) < samples or server.cpu_s() - cpu0 < MIN_SERVER_CPU_S)):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    used = server.cpu_s() - cpu0 - idle * (time.monotonic() - w0)
    return statistics.median(times), max(used, 0.0) * 1000 / len(times)


@dataclass
class CostResult:
    name: str
    version: str
    sizes: list[int]
    ms: dict[str, list[float]] = field(default_factory=dict)
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)


def costs(name: str, sizes: list[int], samples: int, budget_s: float) -> CostResult:
    server = start(name)
    try:
        c = client(server.url)
        c.create_bucket(Bucket=BUCKET)
        reqs = requests(c)
        idle = idle_cpu_rate(server, min(budget_s, 3.0))
        print(f"  {name}: idle server CPU {idle * 1000:.1f} ms/s (taken off each figure)", flush=True)
        res = CostResult(name, server.version, sizes, {r: [] for r in REQUESTS}, {r: [] for r in REQUESTS})
        have = 0
        for size in sizes:
            t0 = time.monotonic()
            fill(c, have, size)
            filled = size - have
            have = max(have, size)
            for r in REQUESTS:
                ms, cpu_ms = p50(reqs[r], samples, budget_s, server, idle)
                res.ms[r].append(ms)
                res.cpu_ms[r].append(cpu_ms)
            rate = f" (filled {filled:,} at {filled / max(time.monotonic() - t0, 1e-9):.0f}/s)" if filled else ""
            print(f"  {name}: {size:,} objects{rate}: " + ", ".join(f"{r} {res.ms[r][-1]:.1f}" for r in REQUESTS),
                  flush=True)
        return res
    finally:
        server.stop()


def mix(name: str, threads: int, seconds: float) -> tuple[float, float, float]:
    """(requests/s, server CPU ms per request, client CPU ms per request) of the four requests from ``threads``."""
    server = start(name)
    try:
        c = client(server.url, pool=threads + 4)
        c.create_bucket(Bucket=BUCKET)
        for i in range(5):
            c.put_object(Bucket=BUCKET, Key=f"mix/list/{i}", Body=BODY)
        idle = idle_cpu_rate(server, min(seconds, 3.0))
        stop_at = time.monotonic() + seconds
        counts = [0] * threads
        errors: list[BaseException] = []

        def work(k: int) -> None:
            lock = f"mix/lock/{k}"
            try:
                etag = c.put_object(Bucket=BUCKET, Key=lock, Body=b"0")["ETag"]
                i = 0
                while time.monotonic() < stop_at:
                    op = i % 4
                    if op == 0:
                        c.put_object(Bucket=BUCKET, Key=f"mix/w{k}/{i % 50}", Body=BODY)
                    elif op == 1:
                        c.get_object(Bucket=BUCKET, Key="mix/list/0")["Body"].read()
                    elif op == 2:
                        etag = c.put_object(Bucket=BUCKET, Key=lock, Body=str(i).encode(), IfMatch=etag)["ETag"]
                    else:
                        c.list_objects_v2(Bucket=BUCKET, Prefix="mix/list/")
                    i += 1
                    counts[k] += 1
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        cpu0, scpu0, t0 = time.process_time(), server.cpu_s(), time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall, cpu, scpu = time.monotonic() - t0, time.process_time() - cpu0, server.cpu_s() - scpu0
        scpu = max(scpu - idle * wall, 0.0)
        if errors:
            raise errors[0]
        n = max(sum(counts), 1)
        return n / wall, scpu * 1000 / n, cpu * 1000 / n
    finally:
        server.stop()


def print_costs(results: list[CostResult]) -> None:
    sizes = results[0].sizes
    head = " / ".join(f"{s:,}" for s in sizes)
    print(f"\nS3, per request at {head} objects in the bucket: p50 ms seen by the client, and the server's CPU ms "
          f"per request\n(which other load on the machine does not inflate); ratio = largest size / smallest size "
          f"(target for the default <= {TARGET_RATIO})")
    width = max(len(r) for r in REQUESTS)
    for res in results:
        print(f"\n{res.name} {res.version}")
        for label, table in (("p50 ms", res.ms), ("server CPU ms", res.cpu_ms)):
            for r in REQUESTS:
                ms = table[r]
                print(f"  {label:<13} {r:<{width}}  " + " / ".join(f"{v:8.2f}" for v in ms)
                      + f"   ratio {ratio_text(ms, TARGET_RATIO)}")


def print_mix(names: list[str], threads: int, seconds: float) -> None:
    print(f"\nS3 mix: {threads} client threads of PutObject / GetObject / PutObject If-Match / ListObjectsV2, "
          f"{seconds:g} s each, one client process")
    cpu = {}
    for n in names:
        rate, server_ms, client_ms = mix(n, threads, seconds)
        cpu[n] = server_ms
        print(f"  {n:<12} {rate:8.0f} requests/s   server CPU {server_ms:.2f} ms/request   client CPU "
              f"{client_ms:.2f} ms/request (one process: at most {1000 / client_ms:.0f} requests/s)", flush=True)
    if "seaweedfs" in cpu and "moto" in cpu:
        share = cpu["seaweedfs"] / cpu["moto"]
        flag = "ok" if share <= TARGET_MIX_CPU else "over"
        print(f"  server CPU per request, seaweedfs / moto = {share:.2f} (target <= {TARGET_MIX_CPU}) {flag}")
