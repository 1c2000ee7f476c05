"""Capacity units by DynamoDB's rules, counted by the client hook from the real request and response."""

from __future__ import annotations

import math

import pytest

from harness.aws.capacity import item_size
from harness.core.work import Work, recording

KB = 1024
SIZES = [512, 1024, 1126, 4096, 9216]  # 0.5 KB, 1 KB, 1.1 KB, 4 KB, 9 KB


def _table(ddb, name, gsis=0):
    attrs = [{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "g1", "g2")[: 2 + gsis]]
    kwargs = {}
    if gsis:
        kwargs["GlobalSecondaryIndexes"] = [
            {"IndexName": f"idx{i}", "KeySchema": [{"AttributeName": f"g{i}", "KeyType": "HASH"}],
             "Projection": {"ProjectionType": "ALL"}} for i in range(1, gsis + 1)]
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST", **kwargs)


def _item(size, pk="p", sk="s", gsis=0):
    """A wire-format item of exactly ``size`` billed bytes."""
    item = {"pk": {"S": pk}, "sk": {"S": sk}}
    for i in range(1, gsis + 1):
        item[f"g{i}"] = {"S": "k"}
    pad = size - item_size(item) - len("d")
    item["d"] = {"S": "x" * pad}
    assert item_size(item) == size
    return item


def _units(call):
    w = Work()
    with recording(w):
        call()
    return w.read_units, w.write_units


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("gsis", [0, 1, 2])
def test_put_get_units(aws, size, gsis):
    ddb = aws[0]
    _table(ddb, "units", gsis)
    ddb.describe_table(TableName="units")  # the hook learns the GSIs from the description
    item = _item(size, gsis=gsis)
    r, w = _units(lambda: ddb.put_item(TableName="units", Item=item))
    assert (r, w) == (0, math.ceil(size / KB) * (1 + gsis))
    key = {"pk": item["pk"], "sk": item["sk"]}
    r, _ = _units(lambda: ddb.get_item(TableName="units", Key=key, ConsistentRead=True))
    assert r == math.ceil(size / (4 * KB))
    r, _ = _units(lambda: ddb.get_item(TableName="units", Key=key))
    assert r == math.ceil(size / (4 * KB)) / 2


@pytest.mark.parametrize("size", SIZES)
def test_query_sums_before_rounding_batch_get_rounds_per_item(aws, size):
    ddb = aws[0]
    _table(ddb, "qry", 1)
    ddb.describe_table(TableName="qry")
    items = [_item(size, sk=f"s{i}", gsis=1) for i in range(3)]
    for it in items:
        ddb.put_item(TableName="qry", Item=it)
    r, _ = _units(lambda: ddb.query(TableName="qry", KeyConditionExpression="pk = :p",
                                    ExpressionAttributeValues={":p": {"S": "p"}}, ConsistentRead=True))
    assert r == math.ceil(3 * size / (4 * KB))
    r, _ = _units(lambda: ddb.query(TableName="qry", IndexName="idx1", KeyConditionExpression="g1 = :k",
                                    ExpressionAttributeValues={":k": {"S": "k"}}))
    assert r == math.ceil(3 * size / (4 * KB)) / 2  # a GSI query is always eventually consistent
    keys = [{"pk": it["pk"], "sk": it["sk"]} for it in items]
    r, _ = _units(lambda: ddb.batch_get_item(RequestItems={"qry": {"Keys": keys, "ConsistentRead": True}}))
    assert r == 3 * math.ceil(size / (4 * KB))
    r, _ = _units(lambda: ddb.batch_get_item(RequestItems={"qry": {"Keys": keys}}))
    assert r == 3 * math.ceil(size / (4 * KB)) / 2


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("gsis", [0, 1, 2])
def test_batch_write_units(aws, size, gsis):
    ddb = aws[0]
    _table(ddb, "bwr", gsis)
    ddb.describe_table(TableName="bwr")
    reqs = [{"PutRequest": {"Item": _item(size, sk=f"s{i}", gsis=gsis)}} for i in range(4)]
    reqs.append({"DeleteRequest": {"Key": {"pk": {"S": "p"}, "sk": {"S": "gone"}}}})
    _, w = _units(lambda: ddb.batch_write_item(RequestItems={"bwr": reqs}))
    assert w == 4 * math.ceil(size / KB) * (1 + gsis) + 1


def test_item_without_gsi_keys_does_not_pay_for_the_gsi(aws):
    ddb = aws[0]
    _table(ddb, "sparse", 2)
    ddb.describe_table(TableName="sparse")
    item = _item(1126, gsis=0)  # carries neither g1 nor g2
    assert _units(lambda: ddb.put_item(TableName="sparse", Item=item)) == (0, 2)


@pytest.mark.needs("transactions")
def test_failed_conditional_write_still_costs_and_transactions_cost_double(aws):
    from botocore.exceptions import ClientError

    ddb = aws[0]
    _table(ddb, "cond", 1)
    ddb.describe_table(TableName="cond")
    item = _item(1126, gsis=1)
    ddb.put_item(TableName="cond", Item=item)
    w = Work()
    with recording(w), pytest.raises(ClientError):
        ddb.put_item(TableName="cond", Item=item, ConditionExpression="attribute_not_exists(pk)")
    assert w.write_units == 2  # base table only: nothing reached the index
    other = _item(1126, sk="t", gsis=1)
    _, units = _units(lambda: ddb.transact_write_items(TransactItems=[{"Put": {"TableName": "cond", "Item": other}}]))
    assert units == 2 * 2 * 2  # 2 KB, table + GSI, doubled
