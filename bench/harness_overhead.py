"""How much CPU the harness itself adds to an iteration, and the rate one Locust process sustains.

1. CPU per iteration, in one process, with DynamoDB answering instantly
   (boto3 still serializes, signs and parses every call): the datastore's
   steps through boto3, against the harness's own work on the same iteration
   (building the row, firing Locust request events, writing Parquet shards).
   Target: harness work under 5 % of the boto3 work.
   The in-process run's 20 swamp workers take turns, so the table holds
   what the Locust run's 20 users make.
2. A real Locust process (headless, 20 users) against the instant backend:
   iterations/s it sustains, the CPU it uses, and its CPU per iteration all
   in while its users run, printed beside boto3's (1): the rest is the
   harness's hooks, its records, Locust and gevent. Target: all in at most
   1.10 x boto3's. The instant store's own CPU (its JSON included) is left
   out of both.
3. The same Locust process with the live metrics on, beside off, in turn
   (off, --otel, --prometheus, off, ...: a shared machine's drift falls on
   all three alike): its CPU per iteration all in. ``--otel`` exports to a
   loopback OTLP/HTTP sink every second (Locust's instruments and the
   harness's meters; the instant backend sends no HTTP, so no request spans
   are made); ``--prometheus`` is scraped every second. Target: each within
   5 % of off.
4. The live meters' own CPU on the master, in process (a busy machine's
   contention hardly moves it): measuring a row and its lock grant and
   recording them in Prometheus's registry and in OpenTelemetry's SDK (an
   in-memory reader, collected once a second's worth of rows), per row,
   beside boto3's CPU per iteration (1).

Usage: python bench/harness_overhead.py [--iterations 2000] [--repeat 5] [--locust-seconds 15]
                                        [--telemetry off,otel,prometheus] [--meters-only]
       (--repeat runs every part that many times; medians are printed)
       python bench/harness_overhead.py --quick   # seconds: checks it runs and prints its figures (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
# Constant work per iteration (a disposable model, pruned): the same boto3 cost on iteration 10 and 10,000.
SCENARIO = "pruning"
USERS = 20  # the Locust process's users, and the in-process run's swamp workers


def cpu_split(iterations: int, users: int = USERS) -> tuple[float, float, dict[str, float]]:
    """(boto3+datastore CPU ms/iteration, harness CPU ms/iteration, harness parts).

    ``users`` swamp workers take turns on one instant store, as the Locust run's users do: the same data
    in the table, so the same answers to parse.
    """
    from locust.env import Environment

    from bench.instant import install
    from harness.aws.clients import make_clients
    from harness.aws.endpoints import Endpoints
    from harness.config import scenario
    from harness.datastore.backends.dynamodb import DynamoBackend
    from harness.load.drivers.model import SwampWorker, summarize
    from harness.record.writer import ShardWriter

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    clients = make_clients(Endpoints("http://127.0.0.1:9", "http://127.0.0.1:9", "other"))
    store = install(clients.dynamodb)
    sc = scenario.load(SCENARIO)
    backend = DynamoBackend(clients.dynamodb, "instant", "per-model")
    backend.ensure()  # the instant store starts empty, like a new table
    workers = [SwampWorker(sc, backend, process="local", user=f"w0-{n}") for n in range(users)]
    env = Environment()
    env.create_local_runner()
    fire = env.events.request.fire
    outs = []
    cpu0, store0 = time.process_time(), store.cpu_s
    for i in range(iterations):  # exactly what SwampWorker.run_once does, less the row
        lw = workers[i % users]
        steps: list = []
        model = lw.plan(lw.iteration)[0]
        lw.store.sync_run(model, "get_uptime", 100, steps)
        lw.store.delete_model(model, steps)
        lw.store.prune(steps)
        lw.iteration += 1
        outs.append(steps)
    # the instant store's own CPU is the backend's, not the client's: left out
    boto_ms = (time.process_time() - cpu0 - (store.cpu_s - store0)) * 1000 / iterations

    parts: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        writer = ShardWriter(tmp, flush_every_s=1e9)
        rows = []
        t = time.process_time()
        for steps in outs:  # the row: per-step sums and counts
            row = {"ts_start": time.time(), "ts_end": time.time(), "worker": "local", "user": "w0-0",
                   "scenario": "namespaced", "backend": "dynamodb", "iteration": 0, "model_id": "m",
                   "ok": True, "error_kind": "", "error": "", "total_ms": 1.0}
            row.update(summarize(steps))
            rows.append(row)
        parts["row"] = (time.process_time() - t) * 1000 / iterations
        t = time.process_time()
        for steps in outs:  # one request event per step and one for the iteration
            for s in steps:
                fire(request_type="dynamodb", name=s.name, response_time=s.ms, response_length=0, exception=None,
                     context={})
            fire(request_type="dynamodb", name="iteration", response_time=1.0, response_length=0, exception=None,
                 context={})
        parts["events"] = (time.process_time() - t) * 1000 / iterations
        t = time.process_time()
        for i in range(0, len(rows), 100):  # ~100 rows per shard: a 5 s flush at 20 it/s
            writer.add(rows[i:i + 100])
            writer.flush()
        parts["parquet"] = (time.process_time() - t) * 1000 / iterations
    parts_store = (store.cpu_s - store0) * 1000 / iterations
    return boto_ms, sum(parts.values()), parts | {"_store": parts_store}


class Sinks:
    """A loopback OTLP/HTTP sink (answers 200, keeps nothing) and a scraper of ``/metrics`` every second."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.posts = self.scrapes = 0
        sinks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sinks.posts += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.otlp = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.otlp.serve_forever, daemon=True).start()
        self.metrics_port = _free_port()
        self.stop = threading.Event()
        threading.Thread(target=self._scrape, daemon=True).start()

    def _scrape(self) -> None:
        import urllib.request

        while not self.stop.wait(1.0):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as r:
                    r.read()
                self.scrapes += 1
            except OSError:
                pass  # no run serving now

    def args(self, telemetry: str) -> tuple[list[str], dict[str, str]]:
        """Locust's extra options and environment for ``telemetry`` (off | otel | prometheus)."""
        if telemetry == "otel":
            return ["--otel"], {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{self.otlp.server_address[1]}",
                                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_METRIC_EXPORT_INTERVAL": "1000"}
        if telemetry == "prometheus":
            return ["--prometheus", str(self.metrics_port)], {}
        return [], {}

    def close(self) -> None:
        self.stop.set()
        self.otlp.shutdown()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def locust_rate(users: int, seconds: int, extra: list[str] | None = None,
                extra_env: dict[str, str] | None = None) -> dict[str, float]:
    """One real Locust process against the instant backend: its rate, CPU-s/s, and CPU per iteration.

    ``all_in_ms`` is the process's CPU while its users ran (the last user spawned to the stop, so no
    imports, set-up or shutdown: bench/instant_locustfile.py marks the window) per iteration that ended
    in it, the instant store's own CPU left out: what one Locust process spends per iteration, harness,
    Locust and gevent included, with a backend that costs nothing.
    """
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench", PYTHONPATH=str(ROOT), **(extra_env or {}))
        cmd = [sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "instant_locustfile.py"), "--headless",
               "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--scenario", SCENARIO,
               "--run-dir", f"{tmp}/run", "--exit-code-on-error", "0", "--only-summary", *(extra or [])]
        t = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(f"{tmp}/locust.out", "wb") as out:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                status = proc.wait(timeout=seconds + 120)  # bounded: a Locust that does not stop is an error
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                tail = Path(tmp, "locust.out").read_text(errors="replace")[-2000:]
                raise SystemExit(f"the Locust run did not stop within {seconds + 120} s:\n{tail}") from None
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.time() - t
        shards = list(Path(tmp, "run", "iterations").glob("*.parquet"))
        marks = Path(tmp, "run", "bench_cpu.json")
        if not shards or not marks.exists():
            tail = Path(tmp, "locust.out").read_text(errors="replace")[-2000:]
            raise SystemExit(f"the Locust run recorded no iterations (exit status {status}):\n{tail}")
        rows = pd.read_parquet(f"{tmp}/run/iterations", columns=["ts_start", "ts_end", "ok"])
        span = (rows["ts_end"].max() - rows["ts_start"].min()).total_seconds()
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        w = json.loads(marks.read_text())
        a, b = w["from"], w["to"]
        ends = (rows["ts_end"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
        done = int(((ends > a["ts"]) & (ends <= b["ts"])).sum())
        busy = (b["cpu_s"] - a["cpu_s"]) - (b["store_cpu_s"] - a["store_cpu_s"])
        return {"rate": len(rows) / span, "cpu": cpu / wall, "iterations": done,
                "all_in_ms": 1000 * busy / max(done, 1),
                "store_ms": 1000 * (b["store_cpu_s"] - a["store_cpu_s"]) / max(done, 1)}


def meter_cost(rows: int) -> dict[str, float]:
    """CPU ms per row of the live meters: measuring, then recording in Prometheus and in OTel (in process)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from harness.record.schema import STEP_COLUMNS, STEP_REQUEST_COLUMNS
    from harness.telemetry.measure import KeyNames, measure_events, measure_rows
    from harness.telemetry.otel import OtelMeters
    from harness.telemetry.prometheus import PrometheusMeters

    run = {"run_id": "bench", "scenario": SCENARIO, "backend": "dynamodb"}
    batch = []
    for i in range(rows):  # every step ran (the most observations a row can make), one grant per row
        row = {"worker": f"worker-{i % 2}", "ok": i % 50 != 0, "error_kind": "" if i % 50 else "throttled",
               "read_units": 3.5, "write_units": 6.0}
        row.update({c: 1.0 + i % 7 for c in STEP_COLUMNS.values()})
        row.update({n: 2 for n, _ in STEP_REQUEST_COLUMNS.values()})
        batch.append((row, {"type": "grant", "key": f"ns-{i % 20}", "started_ms": 1000, "granted_ms": 1000 + i % 9}))
    prom = PrometheusMeters(lambda: None)
    reader = InMemoryMetricReader()
    otel = OtelMeters(lambda: None, MeterProvider(metric_readers=[reader]))
    names = KeyNames()
    per = 100  # rows per batch: a worker's report every 3 s at ~30 it/s
    out = {"measure": 0.0, "prometheus": 0.0, "otel": 0.0}
    for i in range(0, rows, per):
        chunk = batch[i:i + per]
        t = time.process_time()
        b = measure_rows([r for r, _ in chunk])
        measure_events([e for _, e in chunk], names, b)
        t1 = time.process_time()
        prom.record(run, b)
        t2 = time.process_time()
        otel.record(run, b)
        if (i // per) % 3 == 2:
            reader.get_metrics_data()  # the SDK's collection, as an export interval would
        t3 = time.process_time()
        out["measure"] += t1 - t
        out["prometheus"] += t2 - t1
        out["otel"] += t3 - t2
    return {k: v * 1000 / rows for k, v in out.items()}


def print_meters(repeat: int, rows: int, boto: float | None) -> None:
    costs = [meter_cost(rows) for _ in range(repeat)]
    m = {k: statistics.median(c[k] for c in costs) for k in costs[0]}
    total = sum(m.values())
    vs = f"   {total / boto:.2%} of boto3's {boto:.3f} ms per iteration" if boto else ""
    print(f"live meters on the master, CPU per row (median of {repeat} x {rows} rows, in process):")
    print(f"  measure {m['measure']:.4f} ms  + Prometheus {m['prometheus']:.4f} ms  + OpenTelemetry "
          f"{m['otel']:.4f} ms  = {total:.4f} ms{vs}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--locust-seconds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="a few seconds: 40 iterations once, Locust for 5 s")
    ap.add_argument("--telemetry", default="off,otel,prometheus",
                    help="the Locust runs of part 3, in turn each repeat (off must be among them)")
    ap.add_argument("--meters-only", action="store_true", help="only part 4: the live meters' CPU per row")
    args = ap.parse_args()
    if args.meters_only:
        print_meters(args.repeat, 200 if args.quick else 20_000, None)
        return
    modes = [m.strip() for m in args.telemetry.split(",") if m.strip()]
    if "off" not in modes or not set(modes) <= {"off", "otel", "prometheus"}:
        ap.error("--telemetry: a comma-separated list of off, otel, prometheus, with off among them")
    if args.quick:
        args.iterations, args.repeat, args.locust_seconds = 40, 1, 5
    splits = [cpu_split(args.iterations) for _ in range(args.repeat)]
    boto = statistics.median(s[0] for s in splits)
    harness = statistics.median(s[1] for s in splits)
    parts = {k: statistics.median(s[2][k] for s in splits) for k in splits[0][2]}
    store = parts.pop("_store")
    print(f"CPU per iteration (median of {args.repeat} x {args.iterations} iterations of '{SCENARIO}', "
          f"{USERS} swamp workers in turn, instant DynamoDB):")
    print(f"  datastore steps through boto3 : {boto:7.3f} ms   (the instant store's own {store:.3f} ms left out)")
    print(f"  harness (row+events+parquet)  : {harness:7.3f} ms   "
          + "  ".join(f"{k} {v:.3f}" for k, v in parts.items()))
    print(f"  harness / boto3               : {harness / boto:7.2%}   (target < 5 %)")
    sinks = Sinks()
    by_mode: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    try:
        for _ in range(args.repeat):
            for mode in modes:  # in turn: a shared machine's drift falls on every mode alike
                by_mode[mode].append(locust_rate(USERS, args.locust_seconds, *sinks.args(mode)))
    finally:
        sinks.close()
    runs = by_mode["off"]
    m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"one Locust process, {USERS} users, instant backend (median of {args.repeat} x {args.locust_seconds} s): "
          f"{m['rate']:.0f} iterations/s at {m['cpu']:.2f} CPU-s/s")
    rest = m["all_in_ms"] - boto
    print("CPU per iteration, side by side (the instant store's own left out of both):")
    print(f"  all in (one Locust process)   : {m['all_in_ms']:7.3f} ms   (while its users ran: "
          f"{m['iterations']:.0f} iterations; the store's own {m['store_ms']:.3f} ms left out)")
    print(f"  boto3 (datastore steps)       : {boto:7.3f} ms")
    print(f"  the rest (harness, Locust...) : {rest:7.3f} ms   all in / boto3 = {m['all_in_ms'] / boto:.3f} "
          "(target <= 1.10)")
    if len(modes) > 1:
        print(f"live metrics: CPU per iteration all in, median of {args.repeat} x {args.locust_seconds} s each, "
              "run in turn (target: within 5 % of off):")
        for mode in modes:
            med = statistics.median(r["all_in_ms"] for r in by_mode[mode])
            each = " ".join(f"{r['all_in_ms']:.3f}" for r in by_mode[mode])
            print(f"  {mode:<11s}: {med:7.3f} ms   {med / m['all_in_ms']:.3f} x off   "
                  f"{statistics.median(r['rate'] for r in by_mode[mode]):.0f} it/s   (each run: {each})")
        print(f"  (the OTLP sink took {sinks.posts} exports; /metrics was scraped {sinks.scrapes} times)")
    print_meters(args.repeat, 200 if args.quick else 20_000, boto)


if __name__ == "__main__":
    main()
