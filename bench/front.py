"""What the loopback front costs: time added per request, requests a second on one core, a run's CPU.

The upstream is an instant one (an asyncio server in a process of its own that answers every DynamoDB request at
once with a fixed small answer), so the stand-in is not what is measured. The front is the real one
(``python -m harness.aws.front``, as ``harness run --front`` starts it) with the default capacity model on (every
request priced, admitted and its read billed) and no modelled latency (profile ``local``), then a fixed 5 ms:

1. added time: one client, one request at a time on a kept-alive connection, GetItem and PutItem alternately,
   straight to the upstream and through the front; the front's added time is the difference of the medians
   (and of the p99s), beyond the modelled latency (0, then 5 ms);
2. requests a second on one core: client processes keep the front busy for a few seconds; the front's own CPU
   time (it is one asyncio thread) gives the requests one core carries (requests / CPU seconds), beside what the
   busy machine let it serve per wall second;
3. (not with ``--quick``) the harness's CPU for a command-driver run with and without the front:
   ``harness run legacy-gsi --driver command`` for the same time, the CPU of every process it started
   (processes.csv), by role.

Usage:
  python bench/front.py               # 3,000 requests a seam, 8 s of load, the two 20 s runs
  python bench/front.py --quick       # 400 requests a seam, 2 s of load, no runs (seconds; a test runs it)
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.aws.fidelity.model import FidelityConfig  # noqa: E402
from harness.aws.fidelity.throttle import DynamoCapacity  # noqa: E402
from harness.aws.front.client import FrontClient  # noqa: E402
from harness.aws.front.config import FrontConfig  # noqa: E402
from harness.aws.front.launch import FrontProcess  # noqa: E402

TABLE = {"Table": {"TableName": "t", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                                     {"AttributeName": "sk", "KeyType": "RANGE"}],
                   "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "KeySchema": [
                       {"AttributeName": "gsi1pk", "KeyType": "HASH"}]}]}}
ITEM = {"pk": {"S": "k1"}, "sk": {"S": "s1"}, "gsi1pk": {"S": "FILE"}, "v": {"S": "x" * 200}}
REQUESTS = [("GetItem", json.dumps({"TableName": "t", "Key": {"pk": {"S": "k1"}, "sk": {"S": "s1"}}}).encode()),
            ("PutItem", json.dumps({"TableName": "t", "Item": ITEM}).encode())]
ANSWERS = {b"GetItem": json.dumps({"Item": ITEM}).encode(), b"PutItem": b"{}",
           b"DescribeTable": json.dumps(TABLE).encode()}


# ---- the instant upstream ------------------------------------------------------------------------------


async def _instant(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length, op = 0, b"GetItem"
            for line in head.split(b"\r\n"):
                k, _, v = line.partition(b":")
                if k.lower() == b"content-length":
                    length = int(v)
                elif k.lower() == b"x-amz-target":
                    op = v.strip().rsplit(b".", 1)[-1]
            if length:
                await reader.readexactly(length)
            body = ANSWERS.get(op, b"{}")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def _serve_instant() -> None:
    server = await asyncio.start_server(_instant, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def start_instant() -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, __file__, "--instant"], stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


# ---- clients ---------------------------------------------------------------------------------------------


def _send(conn: http.client.HTTPConnection, i: int) -> None:
    op, body = REQUESTS[i % 2]
    conn.request("POST", "/", body, {"x-amz-target": f"DynamoDB_20120810.{op}",
                                     "content-type": "application/x-amz-json-1.0",
                                     "authorization": "AWS4-HMAC-SHA256 Credential=harnesslocal/x"})
    r = conn.getresponse()
    body = r.read()
    # a throttle is an answer too: on a quiet machine the clients outrun one key's modelled 1,000 WCU/s
    if r.status != 200 and not (r.status == 400 and (b"Throughput" in body or b"Throttl" in body)):
        raise RuntimeError(f"{op}: status {r.status}: {body[:200]!r}")


def latencies_ms(port: int, n: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    for i in range(50):  # warm-up: the connection, the front's shapes
        _send(conn, i)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        _send(conn, i)
        out.append((time.perf_counter() - t0) * 1000)
    conn.close()
    return out


def _pump(port: int, seconds: float, q: multiprocessing.Queue) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        _send(conn, n)
        n += 1
    q.put(n)


def throughput(port: int, pid: int, seconds: float, clients: int) -> tuple[int, float, float]:
    """(requests, the front's CPU seconds, wall seconds) while ``clients`` processes keep it busy."""
    proc = psutil.Process(pid)
    q: multiprocessing.Queue = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=_pump, args=(port, seconds, q)) for _ in range(clients)]
    c0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
    for p in ps:
        p.start()
    n = sum(q.get(timeout=seconds + 120) for _ in ps)  # a client that died must not hang the bench
    for p in ps:
        p.join()
    return n, sum(proc.cpu_times()[:2]) - c0, time.monotonic() - t0


def _q(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


# ---- the front -------------------------------------------------------------------------------------------


def front_for(upstream: str, latency: str, d: Path) -> FrontProcess:
    cfg = FidelityConfig(enabled=True, dynamodb=DynamoCapacity(), latency=latency)
    f = FrontProcess(FrontConfig(cfg, {"dynamodb": upstream}, users=("bench",)), d)
    f.start()
    return f


def seat_port(f: FrontProcess) -> int:
    return int(FrontClient(f.control_url).seat("bench").rsplit(":", 1)[1])


def added(n: int, tmp: Path, up_port: int) -> list[dict]:
    profile = tmp / "fixed5.toml"
    profile.write_text('[dynamodb."*"]\nfixed_ms = 5\n')
    out = []
    for latency, modelled in (("local", 0.0), (str(profile), 5.0)):
        f = front_for(f"http://127.0.0.1:{up_port}", latency, tmp / f"front-{modelled:g}")
        try:
            port = seat_port(f)
            direct, via = [], []
            for _ in range(4):  # interleaved blocks: the machine's load moves both alike
                direct += latencies_ms(up_port, n // 4)
                via += latencies_ms(port, n // 4)
            own = FrontClient(f.control_url).model()
        finally:
            f.stop()
        row = {"modelled_ms": modelled, "direct_p50": _q(direct, 0.5), "front_p50": _q(via, 0.5),
               "direct_p99": _q(direct, 0.99), "front_p99": _q(via, 0.99)}
        row["own_p50"], row["own_p99"] = own["own_ms_p50"], own["own_ms_p99"]
        row["added_p50"] = row["front_p50"] - row["direct_p50"] - modelled
        row["added_p99"] = row["front_p99"] - row["direct_p99"] - modelled
        out.append(row)
    return out


def run_cpu(seconds: str, tmp: Path) -> list[dict]:
    """A command-driver run's CPU by role, without and with the front (processes.csv)."""
    out = []
    for front in (False, True):
        run_dir = tmp / f"run-{'front' if front else 'bare'}"
        argv = [sys.executable, "-m", "harness", "run", "legacy-gsi", "--driver", "command", "--users", "2",
                "--duration", seconds, "--no-report", "--run-dir", str(run_dir)] + (["--front"] if front else [])
        subprocess.run(argv, check=True, capture_output=True, cwd=ROOT, timeout=600)
        p = pd.read_csv(run_dir / "processes.csv")
        p = p[p["role"] != "machine"]
        cpu_s = p.groupby("process")["cpu_percent"].sum() / 100  # one sample a second: percent-seconds
        rows = pd.read_parquet(run_dir / "iterations")
        out.append({"front": front, "iterations": len(rows), "cpu_s": cpu_s.to_dict(), "total_cpu_s": cpu_s.sum()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="seconds: fewer requests, shorter load, no runs")
    ap.add_argument("--instant", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--run-duration", default="20s")
    args = ap.parse_args()
    if args.instant:
        asyncio.run(_serve_instant())
        return
    n = args.requests or (400 if args.quick else 3000)
    seconds = args.seconds or (2.0 if args.quick else 8.0)
    up, up_port = start_instant()
    try:
        with tempfile.TemporaryDirectory(prefix="front-bench-") as t:
            tmp = Path(t)
            for r in added(n, tmp, up_port):
                print(f"added per request (modelled {r['modelled_ms']:g} ms): median {r['added_p50']:.3f} ms "
                      f"(direct {r['direct_p50']:.3f}, via the front {r['front_p50']:.3f}), p99 {r['added_p99']:.3f} "
                      f"ms (direct {r['direct_p99']:.3f}, via the front {r['front_p99']:.3f}); the front's own time "
                      f"median {r['own_p50']:.3f} ms, p99 {r['own_p99']:.3f} ms; {n} requests a seam")
            f = front_for(f"http://127.0.0.1:{up_port}", "local", tmp / "front-load")
            try:
                reqs, cpu, wall = throughput(seat_port(f), f.proc.pid, seconds, args.clients)
            finally:
                f.stop()
            print(f"one front process: {reqs} requests in {wall:.1f} s from {args.clients} clients = {reqs / wall:.0f}"
                  f"/s served; its CPU {cpu:.2f} s = {reqs / max(cpu, 1e-9):.0f} requests per CPU second (one core)")
            if not args.quick:
                for r in run_cpu(args.run_duration, tmp):
                    parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu_s"].items()))
                    print(f"harness run legacy-gsi --driver command{' --front' if r['front'] else ''}: "
                          f"{r['iterations']} iterations, CPU {r['total_cpu_s']:.1f} s ({parts})")
    finally:
        up.terminate()
        up.wait(5)


if __name__ == "__main__":
    main()
