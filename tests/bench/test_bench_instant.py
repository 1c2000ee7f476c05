"""The benchmarks' instant DynamoDB answers what DynamoDB (here: moto) answers, request for request."""

from __future__ import annotations

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from bench.instant import install
from bench.instant_store import InstantDynamo
from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.lock import Lock, LockConfig

NO_RETRY = Config(retries={"total_max_attempts": 1})


def _s(v):
    return {"S": v}


def _n(v):
    return {"N": str(v)}


def _script(c) -> list:
    """Requests of every shape the harness sends (and a few more), with their answers."""
    out: list = []

    def call(name, **kw):
        try:
            r = getattr(c, name)(**kw)
            for unasked in ("ResponseMetadata", "ConsumedCapacity", "ItemCollectionMetrics"):  # moto adds these
                r.pop(unasked, None)
            out.append((name, kw.get("ReturnValues"), r))
        except ClientError as e:
            reasons = [x.get("Code") for x in e.response.get("CancellationReasons", [])]
            out.append((name, "error", e.response["Error"]["Code"], reasons))

    c.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                   KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                   AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"}
                                         for a in ("pk", "sk", "gsi1pk", "gsi1sk")],
                   GlobalSecondaryIndexes=[{"IndexName": "gsi1", "Projection": {"ProjectionType": "ALL"},
                                            "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                                                          {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}])
    t = {"TableName": "t"}
    key = {"pk": _s("SYNCSTATE#ns"), "sk": _s("SEQ")}
    seal = dict(t, Key=key, UpdateExpression="SET #f = :t, #u = :u ADD #s :one",
                ConditionExpression="attribute_not_exists(#f) OR #f <= :t",
                ExpressionAttributeNames={"#f": "fence", "#u": "updatedAt", "#s": "seq"}, ReturnValues="UPDATED_NEW")
    call("update_item", **seal, ExpressionAttributeValues={":t": _n(3), ":one": _n(1), ":u": _n(100)})
    call("update_item", **seal, ExpressionAttributeValues={":t": _n(3), ":one": _n(1), ":u": _n(101)})
    call("update_item", **seal, ExpressionAttributeValues={":t": _n(2), ":one": _n(1), ":u": _n(102)})  # fenced
    call("get_item", **t, Key=key, ConsistentRead=True)

    lock = {"pk": _s("LOCK#k"), "sk": _s("LOCK")}
    acquire = dict(t, Key=lock, UpdateExpression="SET #nonce = :nonce, #expiresAtMs = :expiresAtMs ADD #fence :one",
                   ConditionExpression="attribute_not_exists(nonce) OR expiresAtMs < :now",
                   ExpressionAttributeNames={"#nonce": "nonce", "#expiresAtMs": "expiresAtMs", "#fence": "fence"},
                   ReturnValues="UPDATED_NEW")
    call("update_item", **acquire, ExpressionAttributeValues={":nonce": _s("a"), ":expiresAtMs": _n(5000),
                                                              ":now": _n(1000), ":one": _n(1)})
    call("update_item", **acquire, ExpressionAttributeValues={":nonce": _s("b"), ":expiresAtMs": _n(6000),
                                                              ":now": _n(2000), ":one": _n(1)})  # held
    call("update_item", **t, Key=lock, UpdateExpression="SET expiresAtMs = :e", ConditionExpression="nonce = :n",
         ExpressionAttributeValues={":n": _s("b"), ":e": _n(9)})  # not the holder
    call("update_item", **t, Key=lock, UpdateExpression="REMOVE nonce, expiresAtMs", ConditionExpression="nonce = :n",
         ExpressionAttributeValues={":n": _s("a")}, ReturnValues="ALL_NEW")
    call("update_item", **acquire, ExpressionAttributeValues={":nonce": _s("b"), ":expiresAtMs": _n(6000),
                                                              ":now": _n(2000), ":one": _n(1)})  # free: fence 2

    reg = {"pk": _s("PARTITIONS#registry"), "sk": _s("LIST")}
    call("update_item", **t, Key=reg, UpdateExpression="ADD #p :p", ExpressionAttributeNames={"#p": "partitions"},
         ExpressionAttributeValues={":p": {"SS": ["a", "b"]}}, ReturnValues="ALL_NEW")
    call("update_item", **t, Key=reg, UpdateExpression="DELETE #p :p", ExpressionAttributeNames={"#p": "partitions"},
         ExpressionAttributeValues={":p": {"SS": ["a", "b"]}}, ReturnValues="ALL_NEW")  # an emptied set vanishes

    for i in range(7):
        call("put_item", **t, Item={"pk": _s("FILE#m"), "sk": _s(f"CHUNK#v1#{i:07d}"), "d": {"B": bytes([i])}})
    for i in range(5):
        call("put_item", **t, Item={"pk": _s(f"FILE#f{i}"), "sk": _s("META"), "size": _n(10 * i), "fence": _n(2),
                                    "gsi1pk": _s("FILE#ns/m"), "gsi1sk": _s(f"{1000 + i:013d}|f{i}"),
                                    "tags": {"SS": ["x", f"t{i}"]}},
             ConditionExpression="attribute_not_exists(pk)")
    call("put_item", **t, Item={"pk": _s("FILE#f0"), "sk": _s("META")}, ConditionExpression="attribute_not_exists(pk)")
    call("query", **t, KeyConditionExpression="pk = :p AND begins_with(sk, :c)",
         ExpressionAttributeValues={":p": _s("FILE#m"), ":c": _s("CHUNK#v1#")}, ConsistentRead=True, Limit=3)
    call("query", **t, KeyConditionExpression="pk = :p AND begins_with(sk, :c)",
         ExpressionAttributeValues={":p": _s("FILE#m"), ":c": _s("CHUNK#v1#")}, ScanIndexForward=False,
         ExclusiveStartKey={"pk": _s("FILE#m"), "sk": _s("CHUNK#v1#0000005")})
    call("query", **t, IndexName="gsi1", KeyConditionExpression="gsi1pk = :p AND gsi1sk >= :s",
         ExpressionAttributeValues={":p": _s("FILE#ns/m"), ":s": _s(f"{1002:013d}")})
    call("query", **t, IndexName="gsi1", KeyConditionExpression="gsi1pk = :p AND gsi1sk BETWEEN :a AND :b",
         FilterExpression="#sz > :z AND NOT contains(tags, :t) AND fence IN (:f, :g)",
         ExpressionAttributeNames={"#sz": "size"},
         ExpressionAttributeValues={":p": _s("FILE#ns/m"), ":a": _s(f"{1000:013d}"), ":b": _s(f"{1003:013d}"),
                                    ":z": _n(0), ":t": _s("t2"), ":f": _n(2), ":g": _n(9)})
    call("batch_get_item", RequestItems={"t": {"Keys": [{"pk": _s(f"FILE#f{i}"), "sk": _s("META")} for i in (0, 3, 9)],
                                               "ProjectionExpression": "pk, #s", "ExpressionAttributeNames":
                                               {"#s": "size"}}})
    call("batch_write_item", RequestItems={"t": [{"DeleteRequest": {"Key": {"pk": _s("FILE#f4"), "sk": _s("META")}}},
                                                 {"PutRequest": {"Item": {"pk": _s("X"), "sk": _s("1")}}}]})
    call("delete_item", **t, Key={"pk": _s("FILE#f1"), "sk": _s("META")}, ConditionExpression="#f = :t",
         ExpressionAttributeNames={"#f": "fence"}, ExpressionAttributeValues={":t": _n(7)})  # another fence's
    call("delete_item", **t, Key={"pk": _s("FILE#f1"), "sk": _s("META")}, ConditionExpression="#f = :t",
         ExpressionAttributeNames={"#f": "fence"}, ExpressionAttributeValues={":t": _n(2)}, ReturnValues="ALL_OLD")
    call("update_item", **t, Key={"pk": _s("C"), "sk": _s("1")},
         UpdateExpression="SET n = if_not_exists(n, :zero) + :two, l = list_append(if_not_exists(l, :e), :l)",
         ExpressionAttributeValues={":zero": _n(0), ":two": _n(2), ":e": {"L": []}, ":l": {"L": [_s("a")]}},
         ReturnValues="UPDATED_OLD")
    call("update_item", **t, Key={"pk": _s("C"), "sk": _s("1")}, UpdateExpression="SET n = n - :one REMOVE l",
         ExpressionAttributeValues={":one": _n(1)}, ReturnValues="ALL_NEW")
    call("transact_write_items", TransactItems=[
        {"Put": {**t, "Item": {"pk": _s("T"), "sk": _s("1")}}},
        {"ConditionCheck": {**t, "Key": lock, "ConditionExpression": "nonce = :n",
                            "ExpressionAttributeValues": {":n": _s("zzz")}}}])
    call("transact_write_items", TransactItems=[
        {"Put": {**t, "Item": {"pk": _s("T"), "sk": _s("2")}}},
        {"Update": {**t, "Key": key, "UpdateExpression": "ADD seq :one", "ExpressionAttributeValues": {":one": _n(1)}}},
        {"ConditionCheck": {**t, "Key": lock, "ConditionExpression": "nonce = :n",
                            "ExpressionAttributeValues": {":n": _s("b")}}}])
    call("get_item", **t, Key={"pk": _s("T"), "sk": _s("1")})
    call("get_item", **t, Key=key, ProjectionExpression="seq")
    call("scan", **t, Select="COUNT")
    call("scan", **t, FilterExpression="attribute_exists(gsi1pk) AND size(tags) = :two",
         ExpressionAttributeValues={":two": _n(2)}, ProjectionExpression="pk")
    call("get_item", TableName="missing", Key=key)
    return out


def _same(expected, got) -> bool:
    """Equal answers, where DynamoDB's own answer is pinned down.

    A Scan's order is the store's own (hash order on DynamoDB): its items compare as a set. ``UPDATED_NEW``
    and ``UPDATED_OLD`` return the attributes the update expression names; moto adds the key attributes
    when the update creates the item and leaves out attributes SET to the value they had, so there the
    instant store's answer must contain moto's, value for value, and may name the rest of the expression.
    """
    if expected[0] == "scan" and expected[1] is None and "Items" in expected[2]:
        expected = (*expected[:2], dict(expected[2], Items=sorted(expected[2]["Items"], key=repr)))
        got = (*got[:2], dict(got[2], Items=sorted(got[2].get("Items", []), key=repr)))
    if expected[:2] == got[:2] and expected[1] in ("UPDATED_NEW", "UPDATED_OLD"):
        want = {k: v for k, v in expected[2].get("Attributes", {}).items() if k not in ("pk", "sk")}
        have = got[2].get("Attributes", {})
        return all(have.get(k) == v for k, v in want.items())
    return expected == got


def test_instant_store_answers_like_dynamodb_request_for_request():
    with mock_aws():
        expected = _script(boto3.client("dynamodb", config=NO_RETRY))
    instant = boto3.client("dynamodb", config=NO_RETRY, endpoint_url="http://127.0.0.1:9")
    install(instant)
    got = _script(instant)
    assert len(got) == len(expected) > 40
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert _same(e, g), f"request {i}: moto {e}, instant {g}"


def test_the_datastore_commits_through_the_instant_store():
    """The bench crash (``KeyError: 'seq'``): the sealing UpdateItem returns the new sequence, 1, 2, ..."""
    client = boto3.client("dynamodb", config=NO_RETRY, endpoint_url="http://127.0.0.1:9")
    store = install(client, InstantDynamo())
    clock = FakeClock()
    be = DynamoBackend(client, "instant", "per-model", clock=clock)
    be.ensure()
    grant = Lock(be.lock_store, ".locks/ns.lock", clock, LockConfig()).acquire(Work())
    entries = [FileMeta(f"ns/data/system/m{i}/r/1/raw", 10, "d", 1_700_000_000_000 + i, 1) for i in range(30)]
    assert [be.commit("ns", entries, grant, Work()).seq for _ in range(3)] == [1, 2, 3]
    assert be.commit_seq(".locks/ns.lock", Work()) == 3
    w = Work()
    pulled = be.pull("ns", 0, None, w)
    assert len(pulled.changed) == 30 and pulled.seq == 3
    assert store.requests["UpdateItem"] >= 3 and store.cpu_s > 0
