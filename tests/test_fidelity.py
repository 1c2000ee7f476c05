"""The fidelity layer: throttles where DynamoDB and S3 would throttle, latency, faults."""

from __future__ import annotations

import statistics
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from harness.aws.fidelity.buckets import TokenBucket
from harness.aws.fidelity.faults import FaultRates
from harness.aws.fidelity.latency import Dist, load_profile
from harness.aws.fidelity.layer import Fidelity, FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity, S3Rates
from harness.aws.instrument import instrument, recording
from harness.clock import FakeClock
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.lock import Lock, LockConfig
from harness.datastore.work import Work
from harness.errors import HarnessError

# botocore's `max_attempts` counts retries (total = max_attempts + 1); `total_max_attempts` counts tries.
NO_RETRY = Config(retries={"total_max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"})


def _clients(config=NO_RETRY):
    return instrument(boto3.client("dynamodb", config=config)), instrument(boto3.client("s3", config=config))


def test_token_bucket_rate_and_burst():
    clock = FakeClock()
    b = TokenBucket(100, clock, burst_s=5)
    assert b.take(100) and not b.take(1)  # one second's worth to start with
    clock.advance(0.5)
    assert b.take(50) and not b.take(1)
    clock.advance(60)  # unused capacity accumulates, up to burst_s seconds' worth
    assert b.level() == 500
    b.charge(700)  # reads may go into debt
    assert b.level() == -200 and not b.fits(1)


def _commit_entries(be, n, namespace="ns", models=50):
    return [FileMeta(f"{namespace}/data/system/m{i % models}/r/{i}/raw", 300, "d", 1_700_000_000_000 + i, 1)
            for i in range(n)]


def _commit_load(aws_unused, layout, entries_per_commit, commits, fid_clock):
    ddb, _ = _clients()
    fid = Fidelity(FidelityConfig(enabled=True, dynamodb=DynamoCapacity()), clock=fid_clock)
    fid.install(ddb)
    lock_clock = FakeClock()
    be = DynamoBackend(ddb, f"hot-{layout}", layout, clock=lock_clock)
    be.ensure()
    grant = Lock(be.lock_store, ".locks/ns.lock", lock_clock, LockConfig(ttl_s=1e6)).acquire(Work())
    throttled, reasons = 0, []
    for _ in range(commits):
        try:
            be.commit("ns", _commit_entries(be, entries_per_commit), grant, Work())
        except ClientError as e:
            assert e.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            reasons = e.response.get("ThrottlingReasons") or []
            throttled += 1
        fid_clock.advance(1.0 / commits)  # all the commits inside one second
    return throttled, dict(fid.ddb.throttles), reasons


def test_legacy_gsi_key_is_a_hot_partition_per_model_is_not(aws):
    # 4,000 index entries (1 WCU each, plus 1 for the GSI) within one second. A partition can take 2,000
    # in that second (its starting second of credit plus a second of refill): one "FILE" key cannot
    # carry them, 50 per-model keys spread over the table's 4 partitions (~1,000 each) can.
    legacy, legacy_reasons, raw = _commit_load(aws, "legacy", 100, 40, FakeClock())
    per_model, per_model_reasons, _ = _commit_load(aws, "per-model", 100, 40, FakeClock())
    assert legacy > 0 and set(legacy_reasons) == {"IndexWriteKeyRangeThroughputExceeded"}
    assert raw and raw[0]["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert per_model == 0 and per_model_reasons == {}


def _writer(ddb, clock, rate, seconds):
    """PutItems of exactly 1 WCU at ``rate`` a second of simulated time; returns throttled count per second."""
    throttled = [0] * seconds
    for i in range(int(rate * seconds)):
        try:
            ddb.put_item(TableName="cap", Item={"pk": {"S": f"k{i}"}, "sk": {"S": "s"}, "d": {"S": "x" * 900}})
        except ClientError as e:
            assert e.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            throttled[int(i / rate)] += 1
        clock.advance(1.0 / rate)
    return throttled


@pytest.mark.parametrize("rate,expect_throttles", [(120, True), (80, False)])
def test_table_capacity(aws, rate, expect_throttles):
    """A 1,000-WCU provisioned table (scaled x0.1 to 100 WCU): past it throttles, under it none."""
    ddb, _ = _clients()
    clock = FakeClock()
    cap = DynamoCapacity(mode="provisioned", read=1000, write=1000, scale=0.1)
    Fidelity(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
    ddb.create_table(TableName="cap", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                 {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PROVISIONED", ProvisionedThroughput={"ReadCapacityUnits": 1000,
                                                                       "WriteCapacityUnits": 1000})
    throttled = _writer(ddb, clock, rate, 10)
    if expect_throttles:
        # one second's credit at the start, spent at 20 WCU/s: throttles from ~5 s on, then 20 of 120 a second
        assert sum(throttled[:4]) == 0
        assert all(15 <= t <= 25 for t in throttled[6:]), throttled
    else:
        assert sum(throttled) == 0


def test_throttles_go_through_botocore_retries(aws):
    """With standard retries the throttled request is retried and counted as a request each time."""
    ddb = instrument(boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 3, "mode": "standard"})))
    clock = FakeClock()
    cap = DynamoCapacity(mode="provisioned", read=1000, write=1000, scale=0.001)  # 1 WCU a second
    Fidelity(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
    ddb.create_table(TableName="r", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="r", Item={"pk": {"S": "a"}})
    w = Work()
    with recording(w), pytest.raises(ClientError) as e:
        ddb.put_item(TableName="r", Item={"pk": {"S": "b"}})
    assert e.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert w.requests["PutItem"] == 3 and w.write_units == 0  # three attempts, nothing written


def test_hot_read_partition_goes_into_debt_then_throttles(aws):
    ddb, _ = _clients()
    clock = FakeClock()
    cap = DynamoCapacity(scale=0.01)  # 30 RCU per partition
    Fidelity(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
    ddb.create_table(TableName="rd", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    for i in range(100):
        ddb.put_item(TableName="rd", Item={"pk": {"S": "hot"}, "sk": {"S": f"{i:03d}"}, "d": {"S": "x" * 3000}})
        clock.advance(1)
    q = {"TableName": "rd", "KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "hot"}},
         "ConsistentRead": True}
    ddb.query(**q)  # ~75 RCU against a 30 RCU partition: allowed, but the partition is now in debt
    with pytest.raises(ClientError) as e:
        ddb.query(**q)
    assert e.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    clock.advance(3)  # debt repaid at 30 RCU/s
    ddb.query(**q)


def test_s3_prefix_rate_slow_down(aws):
    _, s3 = _clients()
    clock = FakeClock()
    Fidelity(FidelityConfig(enabled=True, s3=S3Rates(scale=0.01)), clock=clock).install(s3)  # 35 writes/s
    s3.create_bucket(Bucket="slow")
    codes = []
    for i in range(50):
        try:
            s3.put_object(Bucket="slow", Key=f"a/{i}", Body=b"x")
        except ClientError as e:
            codes.append((e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]))
    assert len(codes) == 15 and set(codes) == {("SlowDown", 503)}
    s3.put_object(Bucket="slow", Key="b/other-prefix", Body=b"x")  # another prefix has its own rate


def _median_call_ms(call, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def test_aws_dynamodb_profile_adds_its_median(aws):
    ddb, _ = _clients()
    ddb.create_table(TableName="lat", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")

    def put():
        return ddb.put_item(TableName="lat", Item={"pk": {"S": "a"}})

    plain = instrument(boto3.client("dynamodb", config=NO_RETRY))
    Fidelity(FidelityConfig(enabled=True, latency="aws-dynamodb")).install(ddb)
    with_profile, without = [], []
    for _ in range(300):  # interleaved, so machine noise hits both the same
        with_profile.append(_median_call_ms(put, 1))
        without.append(_median_call_ms(lambda: plain.put_item(TableName="lat", Item={"pk": {"S": "a"}}), 1))
    added = statistics.median(with_profile) - statistics.median(without)
    assert added == pytest.approx(3.2, abs=1.2)  # the profile's PutItem median
    assert Dist(3.2, 12).mean_ms == pytest.approx(3.7, abs=0.1)  # the seed's average


def test_user_profile_file_for_s3(aws, tmp_path):
    _, s3 = _clients()
    s3.create_bucket(Bucket="lat")
    profile = tmp_path / "p.toml"
    profile.write_text('[s3.PutObject]\nmedian_ms = 25\np99_ms = 60\n[s3."*"]\nfixed_ms = 0\n')

    def put():
        return s3.put_object(Bucket="lat", Key="k", Body=b"x")

    base = _median_call_ms(put, 60)
    Fidelity(FidelityConfig(enabled=True, latency=str(profile))).install(s3)
    assert _median_call_ms(put, 120) - base == pytest.approx(25, rel=0.3)
    with pytest.raises(HarnessError, match="needs fixed_ms, or median_ms and p99_ms"):
        bad = tmp_path / "bad.toml"
        bad.write_text("[s3.PutObject]\nmean = 3\n")
        load_profile(str(bad))
    with pytest.raises(HarnessError, match="unknown latency profile 'fast'"):
        load_profile("fast")


@pytest.mark.parametrize("kind,exc", [("timeout", ReadTimeoutError), ("drop", ConnectionClosedError)])
def test_transport_faults(aws, kind, exc):
    ddb, _ = _clients()
    cfg = FidelityConfig(enabled=True, faults={"GetItem": FaultRates(**{kind: 1.0})}, timeout_after_s=0.01)
    Fidelity(cfg).install(ddb)
    ddb.list_tables()  # other operations untouched
    with pytest.raises(exc):
        ddb.get_item(TableName="none", Key={"pk": {"S": "a"}})


def test_5xx_rate_is_retried_by_botocore(aws):
    ddb = instrument(boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 10, "mode": "standard"})))
    cfg = FidelityConfig(enabled=True, faults={"*": FaultRates(error_5xx=0.3)})
    Fidelity(cfg).install(ddb)
    w = Work()
    with recording(w):
        for _ in range(40):
            ddb.list_tables()
    assert 40 < w.requests["ListTables"] < 40 * 2.2  # ~1/(1-0.3) attempts per call
    Fidelity(FidelityConfig(enabled=True, faults={"*": FaultRates(error_5xx=1.0)})).install(
        ddb2 := instrument(boto3.client("dynamodb", config=NO_RETRY)))
    with pytest.raises(ClientError) as e:
        ddb2.list_tables()
    assert e.value.response["Error"]["Code"] == "InternalServerError"


def test_disabled_layer_installs_nothing(aws):
    ddb, _ = _clients()
    Fidelity(FidelityConfig(enabled=False, faults={"*": FaultRates(drop=1.0)})).install(ddb)
    ddb.list_tables()
