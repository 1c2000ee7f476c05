"""The fidelity layer: throttles where DynamoDB and S3 would throttle, latency, faults."""

from __future__ import annotations

import random
import statistics

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from harness.aws.fidelity.buckets import TokenBucket
from harness.aws.fidelity.faults import FaultRates
from harness.aws.fidelity.latency import PROFILES, Dist, load_profile
from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer
from harness.aws.fidelity.throttle import SWEEP_AT, DynamoCapacity, S3Rates, S3Throttle
from harness.aws.instrument import instrument
from harness.core.clock import FakeClock
from harness.core.errors import HarnessError
from harness.core.work import Work, recording
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.lock import Lock, LockConfig
from tests.conftest import SESSION, SleepLog

# botocore's `max_attempts` counts retries (total = max_attempts + 1); `total_max_attempts` counts tries.
NO_RETRY = Config(retries={"total_max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"})



def _clients(config=NO_RETRY):
    return instrument(SESSION.client("dynamodb", config=config)), instrument(SESSION.client("s3", config=config))


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


def _commit_load(aws_unused, layout, entries_per_commit, commits, fid_clock, scale=1.0):
    ddb, _ = _clients()
    fid = FidelityLayer(FidelityConfig(enabled=True, dynamodb=DynamoCapacity(scale=scale)), clock=fid_clock)
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
    # A new on-demand table's 4 partitions, scaled x0.1: 100 WCU/s each. 400 index entries (1 WCU each, plus
    # 1 for the GSI) within one second. A partition can take 200 in that second (its starting second of
    # credit plus a second of refill): one "FILE" key cannot carry them, 50 per-model keys spread over the
    # 4 partitions (~100 each) can.
    legacy, legacy_reasons, raw = _commit_load(aws, "legacy", 40, 10, FakeClock(), scale=0.1)
    per_model, per_model_reasons, _ = _commit_load(aws, "per-model", 40, 10, FakeClock(), scale=0.1)
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


@pytest.mark.parametrize("rate,expect_throttles", [(24, True), (16, False)])
def test_table_capacity(aws, rate, expect_throttles):
    """A 1,000-WCU provisioned table (scaled x0.02 to 20 WCU): past it throttles, under it none."""
    ddb, _ = _clients()
    clock = FakeClock()
    cap = DynamoCapacity(mode="provisioned", read=1000, write=1000, scale=0.02)
    FidelityLayer(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
    ddb.create_table(TableName="cap", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                 {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PROVISIONED", ProvisionedThroughput={"ReadCapacityUnits": 1000,
                                                                       "WriteCapacityUnits": 1000})
    throttled = _writer(ddb, clock, rate, 10)
    if expect_throttles:
        # one second's credit (20) at the start, spent at 4 WCU/s over: throttles from ~5 s on, then 4 of 24 a second
        assert sum(throttled[:4]) == 0
        assert all(3 <= t <= 5 for t in throttled[6:]), throttled
    else:
        assert sum(throttled) == 0


def test_throttles_go_through_botocore_retries(aws):
    """With standard retries the throttled request is retried and counted as a request each time."""
    ddb = instrument(SESSION.client("dynamodb", config=Config(retries={"total_max_attempts": 3, "mode": "standard"})))
    clock = FakeClock()
    cap = DynamoCapacity(mode="provisioned", read=1000, write=1000, scale=0.001)  # 1 WCU a second
    FidelityLayer(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
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
    FidelityLayer(FidelityConfig(enabled=True, dynamodb=cap), clock=clock).install(ddb)
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
    FidelityLayer(FidelityConfig(enabled=True, s3=S3Rates(scale=0.01)), clock=clock).install(s3)  # 35 writes/s
    s3.create_bucket(Bucket="slow")
    codes = []
    for i in range(50):
        try:
            s3.put_object(Bucket="slow", Key=f"a/{i}", Body=b"x")
        except ClientError as e:
            codes.append((e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]))
    assert len(codes) == 15 and set(codes) == {("SlowDown", 503)}
    s3.put_object(Bucket="slow", Key="b/other-prefix", Body=b"x")  # another prefix has its own rate


def test_s3_prefix_buckets_stay_bounded_and_a_hot_prefix_stays_throttled():
    """A run writes under ever new prefixes (each disposable model its own): full buckets are dropped (a full
    bucket is a new one), so memory stays flat, and a prefix that is being throttled keeps its debt."""
    clock = FakeClock()
    t = S3Throttle(S3Rates(scale=0.001), clock)  # 3.5 writes/s a prefix: a bucket is full again 0.29 s after a write
    for i in range(5 * SWEEP_AT):
        clock.advance(0.001)
        assert t.admit("PutObject", f"model-{i}/") is None  # each new prefix gets its rate at once
        assert len(t._buckets) <= SWEEP_AT
    assert [t.admit("PutObject", "hot/") for _ in range(4)].count(None) == 3  # 3.5 tokens: the 4th is refused
    t._sweep()
    assert ("write", "hot/") in t._buckets and len(t._buckets) < 300  # only the last 0.29 s's prefixes are not full
    assert t.admit("PutObject", "hot/") is not None and t.throttles == 2  # the sweep gave it no new tokens
    clock.advance(0.3)
    assert t.admit("PutObject", "hot/") is None


def test_latency_distributions_have_their_quoted_median_p99_and_mean():
    """The sampled distribution itself: lognormal from a median and a p99 (the spec's PutItem: mean ~3.7 ms)."""
    rng = random.Random(5)
    put = PROFILES["aws-dynamodb"]["dynamodb"]["PutItem"]
    draws = sorted(put.sample_ms(rng) for _ in range(20_000))
    assert statistics.median(draws) == pytest.approx(3.2, rel=0.03)
    assert draws[int(0.99 * len(draws))] == pytest.approx(12, rel=0.1)
    assert statistics.fmean(draws) == pytest.approx(3.7, rel=0.03) and put.mean_ms == pytest.approx(3.7, abs=0.1)
    assert Dist(50).sample_ms(rng) == 50 and Dist(50).mean_ms == 50  # fixed
    s3_put = PROFILES["aws-s3-vpce"]["s3"]["PutObject"]
    assert s3_put.mean_ms == pytest.approx(300, rel=0.05)  # S3 through a VPC endpoint


def test_aws_dynamodb_profile_waits_its_sampled_latency_before_each_request(aws):
    """Each attempt asks the layer's clock for one wait, drawn from the operation's distribution."""
    ddb, _ = _clients()
    ddb.create_table(TableName="lat", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    clock = SleepLog()
    layer = FidelityLayer(FidelityConfig(enabled=True, latency="aws-dynamodb"), clock=clock, rng=random.Random(11))
    layer.install(ddb)
    for i in range(200):
        ddb.put_item(TableName="lat", Item={"pk": {"S": f"k{i}"}})
    ddb.get_item(TableName="lat", Key={"pk": {"S": "k0"}})
    twin = random.Random(11)  # the same draws, in the same order, from the profile's distributions
    expected = [PROFILES["aws-dynamodb"]["dynamodb"]["PutItem"].sample_ms(twin) / 1000 for _ in range(200)]
    expected.append(PROFILES["aws-dynamodb"]["dynamodb"]["GetItem"].sample_ms(twin) / 1000)
    assert clock.sleeps == pytest.approx(expected)
    assert statistics.median(clock.sleeps[:200]) * 1000 == pytest.approx(3.2, rel=0.15)
    assert layer.added_ms == pytest.approx(sum(expected) * 1000)
    assert clock.now() == pytest.approx(FakeClock().now() + sum(expected))  # the wait is on the layer's clock


def test_user_profile_file_for_s3(aws, tmp_path):
    _, s3 = _clients()
    s3.create_bucket(Bucket="lat")
    profile = tmp_path / "p.toml"
    profile.write_text('[s3.PutObject]\nmedian_ms = 25\np99_ms = 60\n[s3."*"]\nfixed_ms = 0\n')
    clock = SleepLog()
    FidelityLayer(FidelityConfig(enabled=True, latency=str(profile)), clock=clock, rng=random.Random(2)).install(s3)
    for i in range(100):
        s3.put_object(Bucket="lat", Key=f"k{i}", Body=b"x")
        s3.head_object(Bucket="lat", Key=f"k{i}")
    puts, heads = clock.sleeps[0::2], clock.sleeps[1::2]
    assert len(puts) == len(heads) == 100
    twin = random.Random(2)
    assert puts == pytest.approx([Dist(25, 60).sample_ms(twin) / 1000 for _ in range(100)])
    assert statistics.median(puts) * 1000 == pytest.approx(25, rel=0.2)
    assert set(heads) == {0.0}  # "*" is fixed at 0 ms
    assert load_profile(str(profile)) == {"s3": {"PutObject": Dist(25, 60), "*": Dist(0)}}
    with pytest.raises(HarnessError, match="needs fixed_ms, or median_ms and p99_ms"):
        bad = tmp_path / "bad.toml"
        bad.write_text("[s3.PutObject]\nmean = 3\n")
        load_profile(str(bad))
    with pytest.raises(HarnessError, match="unknown latency profile 'fast'"):
        load_profile("fast")


@pytest.mark.parametrize("kind,exc,waited", [("timeout", ReadTimeoutError, [2.5]), ("drop", ConnectionClosedError, [])])
def test_transport_faults(aws, kind, exc, waited):
    ddb, _ = _clients()
    clock = SleepLog()
    cfg = FidelityConfig(enabled=True, faults={"GetItem": FaultRates(**{kind: 1.0})}, timeout_after_s=2.5)
    FidelityLayer(cfg, clock=clock).install(ddb)
    ddb.list_tables()  # other operations untouched
    assert clock.sleeps == []
    with pytest.raises(exc):
        ddb.get_item(TableName="none", Key={"pk": {"S": "a"}})
    assert clock.sleeps == waited  # a timeout waits its full time first; a drop fails at once


def test_5xx_rate_is_retried_by_botocore(aws):
    ddb = instrument(SESSION.client("dynamodb", config=Config(retries={"total_max_attempts": 10, "mode": "standard"})))
    cfg = FidelityConfig(enabled=True, faults={"*": FaultRates(error_5xx=0.3)})
    FidelityLayer(cfg, rng=random.Random(4)).install(ddb)
    w = Work()
    with recording(w):
        for _ in range(40):
            ddb.list_tables()
    assert 40 < w.requests["ListTables"] < 40 * 2.2  # ~1/(1-0.3) attempts per call
    FidelityLayer(FidelityConfig(enabled=True, faults={"*": FaultRates(error_5xx=1.0)})).install(
        ddb2 := instrument(SESSION.client("dynamodb", config=NO_RETRY)))
    with pytest.raises(ClientError) as e:
        ddb2.list_tables()
    assert e.value.response["Error"]["Code"] == "InternalServerError"


def test_disabled_layer_installs_nothing(aws):
    ddb, _ = _clients()
    FidelityLayer(FidelityConfig(enabled=False, faults={"*": FaultRates(drop=1.0)})).install(ddb)
    ddb.list_tables()
