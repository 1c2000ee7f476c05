"""GSI lag in the fidelity layer: an item written by this process shows in a GSI some time after its write.

Deterministic: in-process moto, a FakeClock as the layer's notion of now (and the datastore's).
"""

from __future__ import annotations

import random

import pytest

from harness.aws.fidelity.gsilag import GsiLag, item_key
from harness.aws.fidelity.latency import PROFILES, Dist, load_profile, parse_dist
from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer
from harness.config import scenario as scenarios
from harness.core.clock import FakeClock
from harness.core.errors import HarnessError
from harness.datastore.backends.dynamodb.pull import GsiBehindError
from harness.datastore.errors import ConflictError
from harness.datastore.variant import Variant
from harness.safety.checker import check
from harness.safety.state import snapshot
from tests.conftest import make_backend, second_clients, sync_store

TABLE = "lag"


def _s(v: str) -> dict:
    return {"S": v}


def _table(ddb) -> None:
    ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "g")],
                     GlobalSecondaryIndexes=[{"IndexName": "gix", "Projection": {"ProjectionType": "ALL"},
                                              "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                                            {"AttributeName": "sk", "KeyType": "RANGE"}]}])


def _layer(ddb, lag: str, clock: FakeClock, **cfg) -> FidelityLayer:
    layer = FidelityLayer(FidelityConfig(enabled=True, gsi_lag=lag, **cfg), clock=clock, rng=random.Random(1))
    layer.install(ddb)
    return layer


def _gsi(ddb) -> list[str]:
    out = ddb.query(TableName=TABLE, IndexName="gix", KeyConditionExpression="g = :g",
                    ExpressionAttributeValues={":g": _s("G")})
    assert out["Count"] == len(out["Items"])
    return sorted(i["sk"]["S"] for i in out["Items"])


def _item(sk: str) -> dict:
    return {"pk": _s("p"), "sk": _s(sk), "g": _s("G")}


# ---- the scenario key ---------------------------------------------------------------------


def test_the_key_accepts_distributions_and_off_and_rejects_anything_else_in_one_line():
    parse = lambda v: scenarios.parse({"fidelity": {"gsi_lag": v}}, "x.toml")  # noqa: E731
    assert parse("lognormal(50ms, 200ms)").fidelity.config.gsi_lag == "lognormal(50ms, 200ms)"
    assert parse("fixed(20ms)").fidelity.config.gsi_lag == "fixed(20ms)"
    assert parse("off").fidelity.config.gsi_lag == "off"
    assert scenarios.parse({}).fidelity.config.gsi_lag == ""  # the latency profile's
    assert parse_dist("lognormal(50ms, 200ms)") == Dist(50, 200) and parse_dist("fixed(1s)") == Dist(1000)
    assert [str(Dist(50, 200)), str(Dist(1000))] == ["lognormal(50ms, 200ms)", "fixed(1000ms)"]
    for bad, why in [("lognormal(50ms)", 'must be "off", "lognormal(<median>, <p99>)"'),
                     ("fixed(1s, 2s)", "must be"), ("50ms", "must be"), ("lognormal(200ms, 50ms)", "0 < median <= p99"),
                     ("lognormal(5x, 9ms)", "not a duration: '5x'"), (50, "must be a string")]:
        with pytest.raises(HarnessError, match=r"^x\.toml: fidelity\.gsi_lag ") as e:
            parse(bad)
        assert why in str(e.value) and "\n" not in str(e.value)


def test_off_on_the_stand_ins_by_default_on_in_the_aws_profiles(tmp_path):
    spec = scenarios.parse({}).fidelity
    local = FidelityLayer(spec.resolve("embedded"))
    assert local.cfg.enabled and local.gsi_lag is None  # the stand-ins: the layer is on, without lag
    for profile in ("aws-dynamodb", "aws"):
        layer = FidelityLayer(spec.resolve("embedded", latency=profile))
        assert layer.gsi_lag is not None and layer.gsi_lag.dist == PROFILES[profile]["dynamodb"]["gsi_lag"]
    assert FidelityLayer(spec.resolve("embedded", latency="aws-s3-vpce")).gsi_lag is None
    off = scenarios.parse({"fidelity": {"gsi_lag": "off", "latency": "aws"}}).fidelity
    assert FidelityLayer(off.resolve("embedded")).gsi_lag is None
    own = scenarios.parse({"fidelity": {"gsi_lag": "fixed(70ms)"}}).fidelity
    assert FidelityLayer(own.resolve("embedded")).gsi_lag.dist == Dist(70)
    assert not spec.resolve("aws", latency="aws").enabled  # real AWS: the real GSI lags
    profile = tmp_path / "p.toml"
    profile.write_text("[dynamodb.gsi_lag]\nmedian_ms = 30\np99_ms = 90\n")
    assert load_profile(str(profile))["dynamodb"]["gsi_lag"] == Dist(30, 90)


# ---- the layer on moto ----------------------------------------------------------------------


def test_a_gsi_query_right_after_a_write_omits_the_item_and_shows_it_after_the_lag(aws):
    ddb, _ = aws
    _table(ddb)
    clock = FakeClock()
    layer = _layer(ddb, "fixed(100ms)", clock)
    ddb.put_item(TableName=TABLE, Item=_item("a"))
    ddb.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": _item("b")}}]})
    ddb.update_item(TableName=TABLE, Key={"pk": _s("p"), "sk": _s("c")}, UpdateExpression="SET g = :g",
                    ExpressionAttributeValues={":g": _s("G")})
    assert _gsi(ddb) == []
    # base-table reads are never delayed
    assert ddb.get_item(TableName=TABLE, Key={"pk": _s("p"), "sk": _s("a")}, ConsistentRead=True).get("Item")
    assert ddb.query(TableName=TABLE, KeyConditionExpression="pk = :p",
                     ExpressionAttributeValues={":p": _s("p")})["Count"] == 3
    clock.advance(0.099)
    assert _gsi(ddb) == []
    clock.advance(0.001)
    assert _gsi(ddb) == ["a", "b", "c"]
    lag = layer.gsi_lag
    assert (lag.writes, lag.hidden, lag.delayed, lag.answers) == (3, 6, 2, 3)
    ddb.put_item(TableName=TABLE, Item=_item("d"))
    scan = ddb.scan(TableName=TABLE, IndexName="gix")
    assert scan["Count"] == 3 and scan["ScannedCount"] == 3  # a GSI scan lags too
    assert ddb.scan(TableName=TABLE)["Count"] == 4  # the table's does not


def test_each_write_draws_its_own_lag_from_the_distribution(aws):
    ddb, _ = aws
    _table(ddb)
    clock = FakeClock()
    layer = _layer(ddb, "lognormal(50ms, 200ms)", clock)
    twin = random.Random(repr(random.Random(1).getstate()))  # the layer's own draws
    lags = [min(layer.gsi_lag.horizon_s, Dist(50, 200).sample_ms(twin) / 1000) for _ in range(20)]
    for i in range(20):
        ddb.put_item(TableName=TABLE, Item=_item(f"{i:02d}"))
    t0 = clock.now()
    for _ in range(40):  # 10 ms at a time: exactly the items past their lag show
        now = clock.now() - t0
        assert _gsi(ddb) == [f"{i:02d}" for i, lag in enumerate(lags) if lag <= now + 1e-9]
        clock.advance(0.01)
    assert layer.gsi_lag.horizon_s == pytest.approx(Dist(50, 200).quantile_ms(3.0902) / 1000, rel=1e-3)


class _Scripted:
    """A lag distribution that answers the lags it is given, in order (and a p99.9 of 1 s)."""

    def __init__(self, *ms: float) -> None:
        self.ms = list(ms)

    def sample_ms(self, rng) -> float:
        return self.ms.pop(0)

    def quantile_ms(self, z: float) -> float:
        return 1000.0


def test_a_gsi_answer_can_show_a_newer_write_of_another_key_before_an_older_one():
    """Each write's lag is its own, so an answer may hold items out of write order: an older tombstone still
    hidden while a newer item of another key shows (issue 43's hole 5; DynamoDB's documentation does not rule it
    out). The fenced pull's digest check is what makes that safe (tests/unit/safety/test_holes.py, hole 5)."""
    clock = FakeClock()
    lag = GsiLag(_Scripted(300, 10), clock, random.Random(0))
    old, new = {**_item("old"), "del": {"BOOL": True}}, _item("new")
    lag.wrote(item_key(TABLE, old))
    clock.advance(0.05)
    lag.wrote(item_key(TABLE, new))
    clock.advance(0.02)  # the newer write's lag is over, the older one's is not
    answer = {"Items": [old, new], "Count": 2}
    lag.on_read({"TableName": TABLE, "IndexName": "gix"}, answer)
    assert [i["sk"]["S"] for i in answer["Items"]] == ["new"] and answer["Count"] == 1
    clock.advance(0.3)
    answer = {"Items": [old, new], "Count": 2}
    lag.on_read({"TableName": TABLE, "IndexName": "gix"}, answer)
    assert answer["Count"] == 2


def test_writes_by_another_client_are_not_delayed_and_deletes_are_gone_at_once(aws):
    ddb, _ = aws
    _table(ddb)
    clock = FakeClock()
    layer = _layer(ddb, "fixed(1s)", clock)
    other, _ = second_clients()  # another process: its writes' times are not this layer's to know
    other.put_item(TableName=TABLE, Item=_item("theirs"))
    ddb.put_item(TableName=TABLE, Item=_item("mine"))
    ddb.put_item(TableName=TABLE, Item=_item("gone"))
    assert _gsi(ddb) == ["theirs"]
    ddb.delete_item(TableName=TABLE, Key={"pk": _s("p"), "sk": _s("gone")})
    ddb.batch_write_item(RequestItems={TABLE: [{"DeleteRequest": {"Key": {"pk": _s("p"), "sk": _s("mine")}}}]})
    assert len(layer.gsi_lag) == 0
    ddb.put_item(TableName=TABLE, Item=_item("failed"), ConditionExpression="attribute_not_exists(pk)")
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.put_item(TableName=TABLE, Item=_item("theirs"), ConditionExpression="attribute_not_exists(pk)")
    assert len(layer.gsi_lag) == 1  # a refused write wrote nothing: its item keeps showing
    assert _gsi(ddb) == ["theirs"]


def test_memory_stays_bounded():
    clock = FakeClock()
    lag = GsiLag(Dist(50, 200), clock, random.Random(3))
    assert 0.3 < lag.horizon_s < 0.33  # the p99.9 of lognormal(50 ms, 200 ms)
    for i in range(20_000):  # 10,000 writes a second for 2 s
        lag.wrote(item_key(TABLE, {"pk": _s("p"), "sk": _s(str(i))}))
        clock.advance(0.0001)
    assert len(lag) <= lag.horizon_s * 10_000 * 1.01  # the last horizon's writes (the clock rounds)
    capped = GsiLag(Dist(20_000), clock, random.Random(3), max_keys=100)
    assert capped.horizon_s == 10.0  # no lag is longer than MAX_LAG_S
    for i in range(1000):
        capped.wrote(item_key(TABLE, {"pk": _s("p"), "sk": _s(str(i))}))
    assert len(capped) == 100
    assert not capped._shows_at.get(item_key(TABLE, {"pk": _s("p"), "sk": _s("0")}))  # the oldest shows early


# ---- what the datastore makes of it -------------------------------------------------------------


def _pair(aws, clock, lag: str, fencing: bool):
    """Two workers of one process (one client, one layer), two-phase, on the same model."""
    events: list[dict] = []
    layer = _layer(aws[0], lag, clock)
    be = make_backend("per-model", aws, clock=clock, variant=Variant(fenced=fencing))
    a = sync_store(be, clock=clock, holder="a", events=events, sync="two-phase")
    b = sync_store(be, clock=clock, holder="b", events=events, sync="two-phase")
    return a, b, events, layer


def test_a_fenced_pull_waits_for_the_lagging_gsi(aws, clock):
    a, b, events, layer = _pair(aws, clock, "fixed(120ms)", fencing=True)
    a.sync_run("m0", "get_uptime", 100, [])
    b.sync_run("m0", "get_uptime", 100, [])  # at once: the GSI does not show a's commit yet
    assert layer.gsi_lag.hidden > 0
    latest = next(p for p in b.local if p.endswith("/uptime/latest"))
    assert b.local[latest].version == 2  # it waited (50 + 100 ms) and saw version 1
    report = check(events, snapshot(a.backend))
    assert report["violations"] == 0, report["details"]


def test_a_fenced_pull_fails_when_the_gsi_never_catches_up(aws, clock):
    a, b, events, _ = _pair(aws, clock, "fixed(2s)", fencing=True)
    a.sync_run("m0", "get_uptime", 100, [])
    with pytest.raises(GsiBehindError, match="never showed"):
        b.sync_run("m0", "get_uptime", 100, [])
    assert check(events, snapshot(a.backend))["violations"] == 0


def test_swamps_own_pull_takes_the_lagging_answer(aws, clock):
    """Unfenced, b's pull takes the GSI's answer as the model's state: its recorded view is empty though a's five
    entries were sealed (swamp's push then looks its dirty paths up in the table, consistently, and refuses to
    write over version 1). The checker does not judge unfenced views (swamp's entries change in place before its
    sequence moves: no sealed state to measure them against), so nothing else is flagged."""
    a, b, events, layer = _pair(aws, clock, "fixed(120ms)", fencing=False)
    a.sync_run("m0", "get_uptime", 100, [])
    with pytest.raises(ConflictError, match="remote version 1 is newer than ours"):
        b.sync_run("m0", "get_uptime", 100, [])
    assert layer.gsi_lag.hidden == 5 and [e["view_size"] for e in events if e["type"] == "pull"] == [0, 0]
    report = check(events, snapshot(a.backend))
    assert report["torn_reads"] == 0 and report["violations"] == 0, report["details"]
    assert all(e["fencing"] is False for e in events if e["type"] == "pull")


def test_each_process_says_in_locust_log_what_the_lag_did(caplog):
    from types import SimpleNamespace

    from harness.load.process import HarnessProcess

    lag = GsiLag(Dist(50, 200), FakeClock(), random.Random(1))
    lag.wrote(item_key(TABLE, {"pk": _s("p"), "sk": _s("a")}))
    proc = SimpleNamespace(load=SimpleNamespace(layer=SimpleNamespace(gsi_lag=lag)), name="worker-1")
    with caplog.at_level("INFO", logger="harness"):
        HarnessProcess.note_gsi_lag(proc)  # type: ignore[arg-type]
        HarnessProcess.note_gsi_lag(SimpleNamespace(load=None, name="local"))  # type: ignore[arg-type]
    assert caplog.messages == ["harness: worker-1: gsi_lag lognormal(50ms, 200ms): 1 write(s) recorded, 0 item(s) "
                               "held back from 0 of 0 GSI answers"]
