"""Stand-in probe: constant-cost requests of the workload's kind, timed from outside the load generator.

If the backend itself gets slower during a run (moto's Query sorts the whole
table, so it slows as the table grows), a request whose result never changes
gets slower too; if the probe stays flat while iterations slow down, the
workload is asking for more. So the probe issues the requests the workload
depends on, each over a fixed small result:

- DynamoDB: a ``Query`` on a fixed 5-item partition (of the GSI when one is
  given, as a pull does; else of the base table) and a ``GetItem``;
- S3: a ``GetObject`` of a small object and a ``ListObjectsV2`` of a fixed
  5-object prefix.

It runs as its own process (``python -m harness.aws.fidelity.probe``): inside
the Locust process its timings would include waiting for gevent's event loop,
i.e. the load generator's own backlog. The Locust process starts it when a
test starts and stops it when the test stops, so every sample was taken while
load ran. Each sample is one row of ``RUN_DIR/probes.csv``: ``ts,op,ms``.

It takes primitives (service, endpoint, table or bucket, key prefix), not a
datastore backend: harness/aws does not depend on harness/datastore.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROBES_CSV = "probes.csv"
PROBE_KEY = "PROBE#harness"
PARTITION_ITEMS = 5
SMALL = "x" * 100


@dataclass(frozen=True)
class Target:
    """What to probe: ``service`` (dynamodb|s3), its endpoint (None: AWS), the table or bucket, and where."""

    service: str
    endpoint: str | None
    name: str  # table or bucket
    key: str = PROBE_KEY  # DynamoDB partition key value / S3 key prefix (under the run's prefix)
    index: str | None = None  # DynamoDB GSI to query (hash key ``<index>pk``), or None for the base table
    region: str = "us-east-1"
    credentials: str = "chain"  # what signs its requests: boto3's chain, or the stand-in's local keys (dummy)

    def argv(self) -> list[str]:
        out = ["--service", self.service, "--name", self.name, "--key", self.key, "--region", self.region,
               "--credentials", self.credentials]
        if self.endpoint:
            out += ["--endpoint", self.endpoint]
        if self.index:
            out += ["--index", self.index]
        return out


def _client(t: Target):  # noqa: ANN202 - a boto3 client
    from botocore.config import Config

    from harness.aws.clients import new_session

    cfg = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=30,
                 ignore_configured_endpoint_urls=True)
    return new_session(t.credentials).client(t.service, endpoint_url=t.endpoint, region_name=t.region, config=cfg)


def dynamodb_ops(t: Target) -> list[tuple[str, Callable[[], object]]]:
    """Seed a 5-item partition (GSI and base table) and return the timed requests."""
    c = _client(t)
    hk, rk = (f"{t.index}pk", f"{t.index}sk") if t.index else ("pk", "sk")
    for i in range(PARTITION_ITEMS):
        item = {"pk": {"S": t.key}, "sk": {"S": f"PROBE#{i}"}, "v": {"S": SMALL}}
        if t.index:
            item |= {hk: {"S": t.key}, rk: {"S": f"PROBE#{i}"}}
        c.put_item(TableName=t.name, Item=item)
    query = {"TableName": t.name, "KeyConditionExpression": "#h = :h",
             "ExpressionAttributeNames": {"#h": hk}, "ExpressionAttributeValues": {":h": {"S": t.key}}}
    if t.index:
        query["IndexName"] = t.index
    key = {"pk": {"S": t.key}, "sk": {"S": "PROBE#0"}}
    return [("Query", lambda: c.query(**query)),
            ("GetItem", lambda: c.get_item(TableName=t.name, Key=key))]


def s3_ops(t: Target) -> list[tuple[str, Callable[[], object]]]:
    """Seed a 5-object prefix and return the timed requests."""
    c = _client(t)
    prefix = f"{t.key.rstrip('/')}/"
    for i in range(PARTITION_ITEMS):
        c.put_object(Bucket=t.name, Key=f"{prefix}{i}", Body=SMALL.encode())
    return [("GetObject", lambda: c.get_object(Bucket=t.name, Key=f"{prefix}0")["Body"].read()),
            ("ListObjectsV2", lambda: c.list_objects_v2(Bucket=t.name, Prefix=prefix))]


def sample(ops: list[tuple[str, Callable[[], object]]]) -> list[tuple[str, float]]:
    """One timed call of each operation (a failed call is left out: it has no service time)."""
    out = []
    for op, call in ops:
        t0 = time.perf_counter()
        try:
            call()
        except Exception:
            continue
        out.append((op, (time.perf_counter() - t0) * 1000))
    return out


def run(t: Target, run_dir: Path, every_s: float, stop: threading.Event) -> None:
    """Sample every ``every_s`` until ``stop``; appends rows to ``run_dir/probes.csv``."""
    ops = dynamodb_ops(t) if t.service == "dynamodb" else s3_ops(t)
    path = run_dir / PROBES_CSV
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["ts", "op", "ms"])
            f.flush()
        next_at = time.monotonic()
        while not stop.is_set():
            ts = time.time()
            for op, ms in sample(ops):
                w.writerow([f"{ts:.3f}", op, f"{ms:.3f}"])
            f.flush()
            next_at += every_s
            stop.wait(max(0.0, next_at - time.monotonic()))


class Probe:
    """The probe process, started by the Locust process when a test starts; ``stop()`` when it stops."""

    def __init__(self, target: Target, run_dir: str | Path, every_s: float = 1.0) -> None:
        self.target, self.run_dir, self.every_s = target, Path(run_dir), every_s
        self.proc: subprocess.Popen | None = None

    def start(self) -> Probe:
        cmd = [sys.executable, "-m", "harness.aws.fidelity.probe", *self.target.argv(),
               "--run-dir", str(self.run_dir), "--every", f"{self.every_s:g}"]
        log = open(self.run_dir / "probe.log", "ab")  # noqa: SIM115 - the child owns it from here
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=log)
        finally:
            log.close()
        return self

    def finish(self) -> None:
        """Close its lifeline (stdin), without waiting: it finishes the sample in flight and exits. Called
        when the load starts stopping, so no sample reads an idle stand-in after the load."""
        proc = self.proc
        if proc is not None and proc.stdin and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def stop(self) -> None:
        """Finish, and wait for it to exit (killed if it does not)."""
        proc = self.proc
        if proc is None:
            return
        self.finish()
        self.proc = None
        try:
            proc.wait(10)
        except Exception:
            proc.kill()
            proc.wait(5)


def _until_stdin_closes(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(1):
            pass
    except Exception:
        pass
    stop.set()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Time constant-cost requests into RUN_DIR/probes.csv until stdin closes.")
    ap.add_argument("--service", choices=["dynamodb", "s3"], required=True)
    ap.add_argument("--endpoint")
    ap.add_argument("--name", required=True, help="table or bucket")
    ap.add_argument("--key", default=PROBE_KEY, help="partition key value (DynamoDB) or key prefix (S3)")
    ap.add_argument("--index", help="DynamoDB GSI to query (its hash key is <index>pk)")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--credentials", choices=["chain", "dummy"], default="chain")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    args = ap.parse_args(argv)
    stop = threading.Event()
    threading.Thread(target=_until_stdin_closes, args=(stop,), daemon=True).start()
    target = Target(args.service, args.endpoint, args.name, args.key, args.index, args.region, args.credentials)
    run(target, Path(args.run_dir), args.every, stop)


if __name__ == "__main__":
    main()
