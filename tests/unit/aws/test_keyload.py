"""keys.csv on its own: units per partition key from the accounting's charges, throttles per key, top keys.

The accumulator (``harness.aws.keyload``) sees the same charges the row's read/write units are summed from,
so its per-key sums add up to the rows' units; on the legacy GSI one key ("FILE") takes every index write.
"""

from __future__ import annotations

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from harness.aws.capacity import Charge
from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer
from harness.aws.fidelity.throttle import DynamoCapacity
from harness.aws.instrument import instrument
from harness.aws.keyload import KeyLoad, install
from harness.core.clock import FakeClock
from harness.core.work import Work, recording
from harness.record.keys import KeysLog
from harness.report.load import _keys
from tests.conftest import SESSION, make_backend, make_store


def _synced(aws, layout: str, n: int = 6) -> tuple[KeyLoad, float, float]:
    ddb, _ = aws
    load = KeyLoad()
    install(ddb, load)
    be = make_backend(layout, aws)
    store = make_store(be, "ns", holder="w1")
    steps: list = []
    for i in range(n):
        store.sync_run(f"m{i % 3}", "get_uptime", 100, steps)
    read = sum(s.work.read_units for s in steps)
    write = sum(s.work.write_units for s in steps)
    return load, read, write


def test_per_key_units_add_up_to_the_rows_units_and_the_legacy_gsi_has_one_hot_key(aws):
    load, read, write = _synced(aws, "legacy")
    rows = load.drain(1.0)
    assert sum(r["write_units"] for r in rows) == pytest.approx(write) and write > 0
    assert sum(r["read_units"] for r in rows) == pytest.approx(read)
    gsi = [r for r in rows if r["index"] == "gsi1"]
    assert [r["key"] for r in gsi] == ["FILE"]  # every file item lands on the one GSI key
    assert load.drain(2.0) == []  # drained: the next interval starts from nothing


def test_per_model_gsi_spreads_its_writes_over_one_key_per_model(aws):
    load, _, _ = _synced(aws, "per-model")
    gsi = [r for r in load.drain(1.0) if r["index"] == "gsi1" and r["write_units"] > 0]
    assert len({r["key"] for r in gsi}) == 3 and all(r["key"].startswith("FILE#") for r in gsi)


def test_throttled_attempts_are_counted_on_the_key_they_would_have_charged(aws):
    ddb = instrument(SESSION.client("dynamodb", config=Config(retries={"total_max_attempts": 3,
                                                                       "mode": "standard"})))
    cap = DynamoCapacity(mode="provisioned", read=1000, write=1000, scale=0.001)  # 1 WCU a second
    FidelityLayer(FidelityConfig(enabled=True, dynamodb=cap), clock=FakeClock()).install(ddb)
    load = KeyLoad()
    install(ddb, load)
    ddb.create_table(TableName="r", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="r", Item={"pk": {"S": "a"}})
    with recording(Work()), pytest.raises(ClientError):
        ddb.put_item(TableName="r", Item={"pk": {"S": "b"}})
    by_key = {r["key"]: r for r in load.drain(1.0)}
    assert by_key["a"]["write_units"] == 1 and by_key["a"]["throttles"] == 0
    assert by_key["b"]["throttles"] == 3 and by_key["b"]["write_units"] == 0  # three attempts, none written


def test_only_the_top_keys_are_kept_and_the_rest_is_summed_under_an_empty_key():
    load = KeyLoad(top=2)
    load.charge([Charge("t", None, f"k{i}", "write", float(i)) for i in range(1, 6)])
    load.charge([Charge("t", "gsi1", "FILE", "write", 9.0), Charge("t", None, "k5", "read", 0.5)])
    rows = load.drain(10.0)
    base = [(r["key"], r["write_units"], r["read_units"]) for r in rows if r["index"] == ""]
    assert base == [("k5", 5.0, 0.5), ("k4", 4.0, 0.0), ("", 6.0, 0.0)]  # k1 + k2 + k3 under ""
    assert [(r["key"], r["write_units"]) for r in rows if r["index"] == "gsi1"] == [("FILE", 9.0)]


def test_keys_csv_round_trips_into_the_report(tmp_path):
    load = KeyLoad()
    log = KeysLog(tmp_path)
    for ts in (1_750_000_005.0, 1_750_000_010.0):
        load.charge([Charge("t", "gsi1", "FILE", "write", 4500.0), Charge("t", None, "LOCK#x", "read", 2.5)])
        load.throttled([("t", "gsi1", "FILE")])
        log.add("worker-0", load.drain(ts))
    log.add("worker-0", load.drain(1_750_000_015.0))  # an empty interval writes nothing
    df = _keys(tmp_path)
    assert log.rows == len(df) == 4
    assert list(df.columns[:8]) == ["ts", "process", "table", "index", "key", "read_units", "write_units",
                                    "throttles"]
    hot = df[df["key"] == "FILE"]
    assert hot["write_units"].sum() == 9000 and hot["throttles"].sum() == 2 and set(hot["index"]) == {"gsi1"}
    assert set(df.loc[df["key"] == "LOCK#x", "index"]) == {""}  # the base table: an empty index
