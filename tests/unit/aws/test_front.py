"""The loopback front applies the same fidelity model as the botocore layer: one request mix, two seams.

The same requests go once through the in-process layer (botocore hooks on a client of a moto server) and once
through the front (a plain client of the front, which forwards to the same moto server), each seam with its own
``FidelityModel`` on its own ``FakeClock``: throttles, units per key, GSI lag and latency quantiles must agree.
Fixed latencies make the two clocks move alike, so throttle counts and per-key units are equal exactly; the
lognormal latencies are drawn from different seeds and compared within their sampling error.
"""

from __future__ import annotations

import asyncio
import random
import statistics
from collections.abc import Iterator
from dataclasses import replace

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer
from harness.aws.fidelity.model import FidelityModel
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates
from harness.aws.front.client import FrontClient
from harness.aws.front.server import Front
from harness.aws.front.thread import FrontThread
from harness.aws.instrument import SHAPES, instrument
from harness.aws.keyload import KeyLoad, install
from harness.aws.moto_server import EmbeddedMoto
from harness.core.clock import FakeClock
from harness.core.work import Work, recording

KEYS = {"aws_access_key_id": "harnesslocal", "aws_secret_access_key": "harnesslocal"}
ONE_TRY = Config(retries={"mode": "standard", "total_max_attempts": 1}, s3={"addressing_style": "path"})


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with EmbeddedMoto() as m:
        yield m.urls["dynamodb"]


def _client(service: str, url: str):
    return boto3.session.Session(region_name="us-east-1", **KEYS).client(service, endpoint_url=url, config=ONE_TRY)


class SleepLog(FakeClock):
    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)


def _front(cfg: FidelityConfig, clock: SleepLog, url: str, seed: int = 7) -> FrontThread:
    async def sleep(s: float) -> None:
        clock.sleep(s)

    return FrontThread(Front(FidelityModel(cfg, clock=clock, rng=random.Random(seed)), {"dynamodb": url, "s3": url},
                             sleep=sleep))


def _make_table(url: str, name: str, client=None) -> None:
    """Made by a client without the harness's hooks (unless given one): the front learns its keys and GSI by
    DescribeTable."""
    (client or _client("dynamodb", url)).create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "gsi1pk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[{"IndexName": "gsi1", "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"}],
                                 "Projection": {"ProjectionType": "ALL"}}])


def _mix(ddb, table: str, n: int = 240, seed: int = 3) -> dict[str, int]:
    """A seeded mix of writes (some to the one hot GSI key "FILE"), reads and GSI queries; what each ended in."""
    rng = random.Random(seed)
    out = {"ok": 0, "throttled": 0, "conditional": 0, "gsi_items": 0}
    for i in range(n):
        x = rng.random()
        pk = f"k{rng.randrange(6)}"
        try:
            if x < 0.45:
                item = {"pk": {"S": pk}, "sk": {"S": f"s{i}"}, "blob": {"S": "x" * rng.randrange(10, 3000)}}
                if rng.random() < 0.6:
                    item["gsi1pk"] = {"S": "FILE"}
                ddb.put_item(TableName=table, Item=item)
            elif x < 0.55:
                ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": "lock"}},
                             ConditionExpression="attribute_not_exists(pk)")
            elif x < 0.65:
                ddb.update_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "meta"}},
                                UpdateExpression="SET n = :n", ExpressionAttributeValues={":n": {"N": str(i)}})
            elif x < 0.8:
                ddb.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": "meta"}}, ConsistentRead=True)
            elif x < 0.9:
                r = ddb.query(TableName=table, IndexName="gsi1", KeyConditionExpression="gsi1pk = :f",
                              ExpressionAttributeValues={":f": {"S": "FILE"}}, Limit=40)
                out["gsi_items"] += r["Count"]
            else:
                ddb.query(TableName=table, KeyConditionExpression="pk = :p",
                          ExpressionAttributeValues={":p": {"S": pk}})
            out["ok"] += 1
        except ClientError as e:
            code = e.response["Error"]["Code"]
            out["conditional" if code == "ConditionalCheckFailedException" else "throttled"] += 1
    return out


def _keyed(rows: list[dict], table: str) -> dict[tuple, tuple]:
    return {(r["index"], r["key"]): (round(r["read_units"], 3), round(r["write_units"], 3), r["throttles"])
            for r in rows if r["table"] == table}


def _cfg(latency: str, **kw) -> FidelityConfig:
    cap = DynamoCapacity(mode="provisioned", read=3000, write=1000, scale=0.01)  # 30 RCU / 10 WCU a second
    return FidelityConfig(enabled=True, dynamodb=cap, s3=S3Rates(writes=20, reads=40), latency=latency, **kw)


def test_the_same_mix_meets_the_same_throttles_units_per_key_and_gsi_lag_through_layer_and_front(moto, tmp_path):
    profile = tmp_path / "fixed.toml"
    profile.write_text('[dynamodb."*"]\nfixed_ms = 30\n[dynamodb.Query]\nfixed_ms = 45\n')
    cfg = _cfg(str(profile), gsi_lag="fixed(120ms)")

    # seam 1: the botocore layer on the harness's own client
    ddb = instrument(_client("dynamodb", moto))
    _make_table(moto, "eq_layer", ddb)  # the layer's accounting learns the table's GSI from CreateTable
    layer_load = KeyLoad()
    install(ddb, layer_load)
    layer = FidelityLayer(cfg, clock=SleepLog(), rng=random.Random(7))
    layer.install(ddb)
    work = Work()
    with recording(work):
        via_layer = _mix(ddb, "eq_layer")

    # seam 2: the front, in front of a client with no hooks at all
    _make_table(moto, "eq_front")
    SHAPES.pop("eq_front", None)
    ft = _front(cfg, SleepLog(), moto)
    try:
        via_front = _mix(_client("dynamodb", ft.seat("u1")), "eq_front")
        counts = FrontClient(ft.control_url).counts("u1")
        front = ft.front
        front_rows = front.keyload.drain(1.0)
    finally:
        ft.stop()

    assert via_layer["throttled"] > 10 and via_layer["conditional"] > 0  # the mix meets the model's ceilings
    assert via_front == via_layer  # the same throttles, the same condition failures, the same GSI answers
    assert front.model.throttle_count() == layer.model.throttle_count() == via_layer["throttled"]
    assert front.model.ddb.throttles == layer.model.ddb.throttles  # the same reasons (partition, table, index)
    assert front.model.gsi_lag.hidden == layer.model.gsi_lag.hidden > 0  # lag held back the same items
    by_key = _keyed(front_rows, "eq_front")
    assert by_key == _keyed(layer_load.drain(1.0), "eq_layer")
    assert by_key[("gsi1", "FILE")][1] > 0  # the GSI's one hot key, priced from DescribeTable's GSI
    # the user's counts are the units the harness's own accounting gives the same requests
    assert counts.requests == 240 == sum(work.requests.values())
    assert counts.kinds == {f"dynamodb.{op}": n for op, n in work.requests.items()}
    assert counts.throttles == via_layer["throttled"]
    assert counts.read_units == pytest.approx(work.read_units) and counts.write_units == pytest.approx(work.write_units)
    assert counts.bytes_sent == work.bytes_sent
    # what the client got: the layer counts a GSI answer before the lag takes items out of it, the front after
    assert work.bytes_received > counts.bytes_received > 0.9 * work.bytes_received


def _latencies(sleeps: list[float], n: int) -> list[float]:
    assert len(sleeps) == n
    return sorted(s * 1000 for s in sleeps)


def test_latency_distributions_and_s3_throttles_agree_through_layer_and_front(moto):
    """The AWS profile's lognormal PutObject / GetObject, and S3's per-prefix SlowDown, through both seams."""
    cfg = replace(_cfg("aws"), s3=S3Rates(writes=2, reads=4))  # a PutObject's ~0.3 s refills 0.6 of one
    n = 400
    layer_clock = SleepLog()
    s3 = instrument(_client("s3", moto))
    layer = FidelityLayer(cfg, clock=layer_clock, rng=random.Random(1))
    layer.install(s3)
    s3.create_bucket(Bucket="lat-layer")
    front_clock = SleepLog()
    ft = _front(cfg, front_clock, moto, seed=2)
    try:
        fs3 = _client("s3", ft.seat("u1"))
        fs3.create_bucket(Bucket="lat-front")
        slow = {"layer": 0, "front": 0}
        for client, bucket, seam in ((s3, "lat-layer", "layer"), (fs3, "lat-front", "front")):
            for i in range(n):
                try:
                    client.put_object(Bucket=bucket, Key=f"d/k{i}", Body=b"x" * 100)
                except ClientError as e:
                    assert e.response["Error"]["Code"] == "SlowDown"
                    slow[seam] += 1
        counts = FrontClient(ft.control_url).counts("u1")
    finally:
        ft.stop()
    layer_ms = _latencies(layer_clock.sleeps[1:], n)  # [0]: CreateBucket's
    front_ms = _latencies(front_clock.sleeps[1:], n)
    for q in (0.5, 0.9, 0.99):
        a, b = layer_ms[int(q * n)], front_ms[int(q * n)]
        assert a == pytest.approx(b, rel=0.25 if q < 0.99 else 0.5), q  # two samples of one lognormal
    assert statistics.median(front_ms) == pytest.approx(280, rel=0.15)  # the profile's PutObject median
    # each request's wait refills the prefix's bucket by 2/s * its latency: about every other one is throttled
    assert n / 4 < slow["layer"] < 3 * n / 4 and slow["front"] == pytest.approx(slow["layer"], rel=0.2)
    assert counts.throttles == slow["front"] and counts.kinds["s3.PutObject"] == n


def test_a_throttle_from_the_front_is_dynamodbs_own_error_and_sdk_retries_see_it(moto):
    cfg = _cfg("local")
    _make_table(moto, "eq_err")
    ft = _front(cfg, SleepLog(), moto)
    try:
        ddb = _client("dynamodb", ft.seat("u"))
        codes = []
        for i in range(40):
            try:
                ddb.put_item(TableName="eq_err", Item={"pk": {"S": "hot"}, "sk": {"S": str(i)}, "v": {"S": "x" * 900}})
            except ClientError as e:
                codes.append((e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"],
                              e.response.get("ThrottlingReasons", [{}])[0].get("reason")))
    finally:
        ft.stop()
    assert codes and set(codes) == {("ProvisionedThroughputExceededException", 400,
                                     "TableWriteKeyRangeThroughputExceeded")}


def test_seats_are_ports_and_counts_are_per_user(moto):
    ft = _front(_cfg("local"), SleepLog(), moto)
    try:
        a, b = ft.seat("a"), ft.seat("b")
        assert a != b and ft.seat("a") == a
        _client("s3", a).create_bucket(Bucket="seats")
        for i in range(3):
            _client("s3", b).put_object(Bucket="seats", Key=f"x/{i}", Body=b"12345")
        assert _client("s3", a).head_object(Bucket="seats", Key="x/1")["ContentLength"] == 5
        fc = FrontClient(ft.control_url)
        ca, cb = fc.counts("a"), fc.counts("b")
    finally:
        ft.stop()
    assert ca.kinds == {"s3.CreateBucket": 1, "s3.HeadObject": 1}
    assert cb.kinds == {"s3.PutObject": 3} and cb.write_requests == 3 and cb.bytes_sent == 15


def test_wire_counts_since_is_the_difference():
    from harness.aws.front.counts import WireCounts

    a = WireCounts(requests=3, read_units=1.5, kinds={"dynamodb.GetItem": 3})
    b = WireCounts(requests=5, read_units=2.0, throttles=1, kinds={"dynamodb.GetItem": 4, "dynamodb.PutItem": 1})
    d = b.since(a)
    assert (d.requests, d.read_units, d.throttles, d.kinds) == (2, 0.5, 1, {"dynamodb.GetItem": 1,
                                                                           "dynamodb.PutItem": 1})
    assert asyncio.iscoroutinefunction(Front.handle)


@pytest.mark.parametrize("kind", ["error_5xx", "throttle", "drop", "timeout", "lost", "spike"])
def test_each_fault_kind_reaches_a_client_alike_through_layer_and_front(moto, kind):
    """Injected at a rate of 1 on PutItem: the same error (or none), the same item landed or not, the same wait."""
    from botocore.exceptions import HTTPClientError

    from harness.aws.fidelity.faults import FaultRates

    cfg = FidelityConfig(enabled=True, faults={"PutItem": FaultRates(**{kind: 1.0})}, timeout_after_s=0.5,
                         spike_s=2.0)
    seen = {}
    for seam in ("layer", "front"):
        table = f"fault_{kind}_{seam}"
        _make_table(moto, table)
        clock = SleepLog()
        ft = None
        if seam == "layer":
            ddb = instrument(_client("dynamodb", moto))
            FidelityLayer(cfg, clock=clock, rng=random.Random(1)).install(ddb)
        else:
            ft = _front(cfg, clock, moto)
            ddb = _client("dynamodb", ft.seat("u"))
        try:
            try:
                ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
                error = ""
            except ClientError as e:
                error = f"{e.response['Error']['Code']} {e.response['ResponseMetadata']['HTTPStatusCode']}"
            except HTTPClientError:
                error = "no answer"
            landed = "Item" in _client("dynamodb", moto).get_item(TableName=table, Key={"pk": {"S": "a"},
                                                                                        "sk": {"S": "b"}})
            counts = FrontClient(ft.control_url).counts("u") if ft else None
        finally:
            if ft:
                ft.stop()
        seen[seam] = (error, landed, sum(clock.sleeps))
    assert seen["front"] == seen["layer"], seen
    expected = {"error_5xx": ("InternalServerError 500", False, 0.0),
                "throttle": ("ThrottlingException 400", False, 0.0), "drop": ("no answer", False, 0.0),
                "timeout": ("no answer", False, 0.5), "lost": ("no answer", True, 0.0), "spike": ("", True, 2.0)}
    assert seen["front"] == expected[kind]
    assert counts.requests == 1 and (counts.throttles == 1) == (kind == "throttle")


@pytest.mark.parametrize("argv,problem", [
    (["run", "namespaced", "--front"], "the model driver's own clients have the fidelity layer already"),
    (["run", "namespaced", "--driver", "command", "--front", "--aws"], "not to AWS itself"),
])
def test_a_front_where_it_cannot_serve_is_one_line_and_exit_2(capsys, tmp_path, argv, problem):
    from harness.cli.main import main

    assert main([*argv, "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()  # refused before anything started


def test_a_hundred_users_each_have_a_port_and_their_own_counts(moto):
    import http.client

    ft = _front(_cfg("local"), SleepLog(), moto)
    try:
        urls = {f"w{i}": ft.seat(f"w{i}") for i in range(100)}
        assert len(set(urls.values())) == 100
        for i, url in enumerate(urls.values()):
            conn = http.client.HTTPConnection(*url.split("//")[1].split(":"))
            for _ in range(i % 3 + 1):  # user i sends i % 3 + 1 requests
                conn.request("GET", "/", headers={"authorization": "AWS4-HMAC-SHA256 Credential=harnesslocal/x"})
                assert conn.getresponse().read() is not None
            conn.close()
        counts = FrontClient(ft.control_url).all_counts()
    finally:
        ft.stop()
    assert {u: c.requests for u, c in counts.items()} == {f"w{i}": i % 3 + 1 for i in range(100)}
    assert all(c.kinds == {"s3.ListBuckets": c.requests} for c in counts.values())
