"""The job engine against botocore's ``adaptive`` retry mode, on the same modelled table.

A provisioned table of 60 WCU (moto in-process, behind the fidelity layer's
throttling model), and a foreground writer putting 12 WCU/s on it the whole
time. Into that, for the same number of seconds each:

- the harness's job engine (ceiling 70 % = 42 WCU/s, AIMD, backoff);
- a bulk writer on a botocore client in ``adaptive`` retry mode (its client-side
  token bucket), 8 threads writing as fast as the client lets them.

Printed side by side: the fraction of the ceiling the bulk writer used, the
share of its requests that were throttled, and the throttles it caused the
foreground writer. Usage: python bench/pacing_vs_adaptive.py [--seconds 12]
                         python bench/pacing_vs_adaptive.py --quick   # 3 s each: checks it runs (CI)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
    os.environ.pop(var, None)

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from moto import mock_aws  # noqa: E402

from harness.aws.clients import Clients  # noqa: E402
from harness.aws.endpoints import Endpoints  # noqa: E402
from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer  # noqa: E402
from harness.aws.fidelity.throttle import DynamoCapacity  # noqa: E402
from harness.aws.instrument import instrument  # noqa: E402
from harness.core.clock import SystemClock  # noqa: E402
from harness.jobs.pacing.budget import Budgets  # noqa: E402
from harness.jobs.pacing.ceiling import CeilingWatcher  # noqa: E402
from harness.jobs.pacing.engine import Job  # noqa: E402
from harness.jobs.pacing.journal import Journal  # noqa: E402
from harness.jobs.pacing.sources import FillSource  # noqa: E402

WCU = 60  # small enough that the modelled table, not this process's CPU, is the limit
CEILING = 0.7 * WCU
FOREGROUND_WCU = 12
THROTTLES = {"ProvisionedThroughputExceededException", "ThrottlingException"}


class Counter:
    """Counts every attempt's outcome on one client (``needs-retry`` sees each attempt, retried or not)."""

    def __init__(self, client) -> None:
        self.attempts = self.throttled = self.ok = 0
        self.ok_times: list[float] = []
        self._lock = threading.Lock()
        client.meta.events.register("needs-retry.dynamodb.PutItem", self._on)

    def _on(self, response=None, **_):
        code = (response[1] or {}).get("Error", {}).get("Code") if response else None
        with self._lock:
            self.attempts += 1
            if code in THROTTLES:
                self.throttled += 1
            elif code is None and response is not None:
                self.ok += 1
                self.ok_times.append(time.monotonic())


def client(layer: FidelityLayer, retries: dict) -> tuple[object, Counter]:
    c = instrument(boto3.client("dynamodb", config=Config(retries=retries, max_pool_connections=32)))
    layer.install(c)
    return c, Counter(c)


def foreground(c, stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        t = time.monotonic()
        try:
            c.put_item(TableName="bench", Item={"pk": {"S": f"FG#{i}"}, "sk": {"S": "x"}, "d": {"S": "y" * 500}})
        except Exception:
            pass
        i += 1
        time.sleep(max(0.0, 1 / FOREGROUND_WCU - (time.monotonic() - t)))


def run_engine(layer: FidelityLayer, seconds: float) -> Counter:
    c, counter = client(layer, {"total_max_attempts": 1, "mode": "standard"})
    clients = Clients(dynamodb=c, s3=None, endpoints=Endpoints("moto", None, "moto"))
    source = FillSource(clients.dynamodb, "bench", 10**7, item_bytes=500, prefix="JOB")
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp) / "j.db")
        journal.create("bench", "fill", {}, source.total, None, None)
        watcher = CeilingWatcher(lambda: c.describe_table(TableName="bench")["Table"], "write",
                                 SystemClock())
        job = Job("bench", source, journal, watcher, ("bench",), budgets=Budgets())
        threading.Timer(seconds, job.request_pause, args=("done",)).start()
        job.run()
    return counter


def run_adaptive(layer: FidelityLayer, seconds: float, threads: int = 8) -> Counter:
    c, counter = client(layer, {"max_attempts": 10, "mode": "adaptive"})
    stop = time.monotonic() + seconds

    def writer(t: int) -> None:
        i = 0
        while time.monotonic() < stop:
            try:
                c.put_item(TableName="bench",
                           Item={"pk": {"S": f"AD#{t}#{i}"}, "sk": {"S": "x"}, "d": {"S": "y" * 500}})
            except Exception:
                pass
            i += 1

    ws = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    return counter


def trial(name: str, fn, seconds: float) -> tuple[str, float, float, float, float]:
    layer = FidelityLayer(FidelityConfig(enabled=True, dynamodb=DynamoCapacity(
        mode="provisioned", read=3 * WCU, write=WCU, burst_s=1)))
    setup = boto3.client("dynamodb")
    setup.create_table(TableName="bench", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                     {"AttributeName": "sk", "KeyType": "RANGE"}],
                       AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                             {"AttributeName": "sk", "AttributeType": "S"}],
                       BillingMode="PROVISIONED",
                       ProvisionedThroughput={"ReadCapacityUnits": 3 * WCU, "WriteCapacityUnits": WCU})
    fg, fg_counter = client(layer, {"total_max_attempts": 1, "mode": "standard"})
    stop = threading.Event()
    fg_thread = threading.Thread(target=foreground, args=(fg, stop))
    fg_thread.start()
    time.sleep(1.0)
    fg_before = fg_counter.throttled
    t0 = time.monotonic()
    counter = fn(layer, seconds)
    elapsed = time.monotonic() - t0
    fg_throttled = fg_counter.throttled - fg_before
    stop.set()
    fg_thread.join()
    setup.delete_table(TableName="bench")
    used = counter.ok / elapsed / CEILING
    half = t0 + elapsed / 2
    steady = sum(1 for t in counter.ok_times if t >= half) / (elapsed / 2) / CEILING
    throttled = counter.throttled / max(1, counter.attempts)
    return name, used, steady, throttled, fg_throttled / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--quick", action="store_true", help="3 s per writer: checks it runs and prints its figures")
    args = ap.parse_args()
    if args.quick:
        args.seconds = 3.0
    with mock_aws():
        rows = [trial("harness job engine", run_engine, args.seconds),
                trial("botocore adaptive retries", run_adaptive, args.seconds)]
    print(f"table {WCU} WCU provisioned, ceiling {CEILING:.0f} WCU/s, foreground writer {FOREGROUND_WCU} WCU/s, "
          f"{args.seconds:g} s each")
    print(f"{'bulk writer':28s} {'ceiling used':>13s} {'second half':>12s} {'its requests throttled':>23s} "
          f"{'foreground throttles/s':>23s}")
    for name, used, steady, throttled, fg in rows:
        print(f"{name:28s} {used:13.0%} {steady:12.0%} {throttled:23.1%} {fg:23.2f}")


if __name__ == "__main__":
    main()
