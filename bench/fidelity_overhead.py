"""Client-side CPU of the harness's hooks per request, against the boto3 call's own CPU.

The client talks real HTTP (keep-alive) to an instant DynamoDB in another
process (``bench/instant.py``), so its process CPU is all client: boto3's
serialization, signing, HTTP exchange and parsing, plus the harness's hooks.
The hooks' time is measured directly (each hook is timed), which is robust on
a noisy machine where the difference of two totals is not. Two layers:

- accounting: always on (requests, bytes, capacity units from the real request and response);
- fidelity: the throttling model (partition and table buckets), latency profile "local".

Target: the whole layer under 5 % of a boto3 call's own CPU.
Usage: python bench/fidelity_overhead.py [--calls 1000] [--rounds 5]
       python bench/fidelity_overhead.py --quick   # seconds: checks it runs and prints its figures (CI)
"""

from __future__ import annotations

import argparse
import functools
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

import harness.aws.instrument as ins  # noqa: E402
from harness.aws.fidelity import layer  # noqa: E402
from harness.aws.fidelity.throttle import DynamoCapacity  # noqa: E402
from harness.core.work import Work, recording  # noqa: E402
from harness.datastore.backends.dynamodb import GSI_KEYS, DynamoBackend  # noqa: E402

ITEM = {"pk": {"S": "FILE#ns/data/system/m1/uptime/1/raw"}, "sk": {"S": "META"}, "size": {"N": "812"},
        "digest": {"S": "0123456789abcdef01234567"}, "updatedAt": {"N": "1750000000000"},
        "gsi1pk": {"S": "FILE#ns/system/m1"}, "gsi1sk": {"S": "1750000000000|ns/data/system/m1/uptime/1/raw"},
        "pad": {"S": "x" * 700}}
CALLS = {
    "PutItem": lambda c: c.put_item(TableName="instant", Item=ITEM),
    "GetItem": lambda c: c.get_item(TableName="instant", Key={"pk": ITEM["pk"], "sk": ITEM["sk"]}),
    "Query": lambda c: c.query(TableName="instant", IndexName="gsi1", KeyConditionExpression="gsi1pk = :p",
                               ExpressionAttributeValues={":p": ITEM["gsi1pk"]}),
    "BatchWriteItem(25)": lambda c: c.batch_write_item(
        RequestItems={"instant": [{"PutRequest": {"Item": dict(ITEM, sk={"S": f"S{i}"})}} for i in range(25)]}),
}
HOOK_TIME: dict[str, float] = {}


def _timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            HOOK_TIME[name] = HOOK_TIME.get(name, 0.0) + time.perf_counter() - t
    return wrapper


def _time_hooks() -> None:
    """Wrap every harness hook with a timer (before any client registers them)."""
    for n in ("_on_send", "_on_after_call", "_on_params", "_on_ddb_after_call"):
        setattr(ins, n, _timed(f"accounting.{n}", getattr(ins, n)))
    layer.FidelityLayer._before_send = _timed("fidelity.before_send", layer.FidelityLayer._before_send)
    layer.FidelityLayer._after_call = _timed("fidelity.after_call", layer.FidelityLayer._after_call)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a few seconds: 100 calls per operation, one round")
    args = ap.parse_args()
    if args.quick:
        args.calls, args.rounds = 100, 1
    _time_hooks()
    server = subprocess.Popen([sys.executable, "-m", "bench.instant"], stdout=subprocess.PIPE,
                              cwd=Path(__file__).resolve().parents[1])
    try:
        select.select([server.stdout], [], [], 20)
        url = server.stdout.readline().decode().split()[1]
        c = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                         aws_secret_access_key="bench", config=Config(retries={"total_max_attempts": 1}))
        DynamoBackend(c, "instant", "per-model").ensure()  # the instant store starts empty, like a new account
        ins.instrument(c)
        ins.register_table("instant", "pk", "sk", GSI_KEYS)
        cap = DynamoCapacity(scale=1e6)  # the full model runs, but never throttles
        layer.FidelityLayer(layer.FidelityConfig(enabled=True, dynamodb=cap)).install(c)
        print(f"CPU per request against an instant DynamoDB over keep-alive HTTP (median of {args.rounds} rounds)")
        print(f"{'operation':20s} {'call, us':>9s} {'boto3, us':>10s} {'accounting':>11s} {'throttling':>11s} "
              f"{'layer/boto3':>12s}")
        for name, call in CALLS.items():
            n = args.calls if "Batch" not in name else max(50, args.calls // 10)
            rows = []
            for _ in range(args.rounds):
                w = Work()
                with recording(w):
                    call(c)
                    HOOK_TIME.clear()
                    t = time.process_time()
                    for _ in range(n):
                        call(c)
                    total = (time.process_time() - t) / n * 1e6
                acc = sum(v for k, v in HOOK_TIME.items() if k.startswith("accounting")) / n * 1e6
                fid = sum(v for k, v in HOOK_TIME.items() if k.startswith("fidelity")) / n * 1e6
                boto = total - acc - fid
                rows.append((total, boto, acc, fid, (acc + fid) / boto))
            total, boto, acc, fid, ratio = (statistics.median(x) for x in zip(*rows, strict=True))
            print(f"{name:20s} {total:9.0f} {boto:10.0f} {acc:11.1f} {fid:11.1f} {ratio:12.1%}")
        print("layer/boto3 = (accounting + throttling hook CPU) / the rest of the call's CPU; target < 5 %")
    finally:
        server.kill()


if __name__ == "__main__":
    main()
