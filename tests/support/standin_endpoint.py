"""Point the unit tests' DynamoDB at an external endpoint: ``HARNESS_TEST_DYNAMODB_ENDPOINT=http://...``.

Without the variable the tests use in-process moto (``mock_aws``). With it,
the ``aws`` fixture's DynamoDB client talks to that endpoint (dynalite,
DynamoDB Local, a moto server...) while S3 stays on in-process moto; each test
deletes the tables it created (never one that existed before it). Tests that
need a feature an endpoint lacks are marked ``@pytest.mark.needs("feature")``
and skipped there, with the reason; features are probed once per session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.exceptions import ClientError

ENDPOINT_ENV = "HARNESS_TEST_DYNAMODB_ENDPOINT"
UNSUPPORTED = ("UnknownOperationException", "UnrecognizedOperationException", "NotImplementedException")
# feature -> what the suite calls to use it
FEATURES = ("transactions", "ttl", "table-counts")
_lacks: dict[str, str] | None = None


def endpoint() -> str | None:
    return os.environ.get(ENDPOINT_ENV) or None


def _wait_active(parsed: dict, **_: Any) -> None:
    """Tests create a table and use it at once (moto is instant); real endpoints need a moment."""
    if "TableDescription" not in parsed:  # the call failed: botocore raises it after this hook
        return
    _wait_client.get_waiter("table_exists").wait(TableName=parsed["TableDescription"]["TableName"],
                                                 WaiterConfig={"Delay": 0.1, "MaxAttempts": 300})


_wait_client: Any = None


def client() -> Any:
    global _wait_client
    url = endpoint()
    c = boto3.client("dynamodb", endpoint_url=url)
    _wait_client = _wait_client or boto3.client("dynamodb", endpoint_url=url)
    c.meta.events.register("after-call.dynamodb.CreateTable", _wait_active)
    return c


@contextmanager
def scratch_tables(c: Any) -> Iterator[None]:
    """Delete the tables a test created on the external endpoint, and only those."""
    before = set(_all_tables(c))
    try:
        yield
    finally:
        gone = set(_all_tables(c)) - before
        for name in gone:
            try:
                c.delete_table(TableName=name)
            except ClientError:
                pass
        for name in gone:  # the next test may reuse the name
            c.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 300})


def _all_tables(c: Any) -> list[str]:
    names, kwargs = [], {}
    while True:
        out = c.list_tables(**kwargs)
        names += out.get("TableNames", [])
        if "LastEvaluatedTableName" not in out:
            return names
        kwargs = {"ExclusiveStartTableName": out["LastEvaluatedTableName"]}


def lacks() -> dict[str, str]:
    """Features the external endpoint lacks, with why (probed once: an unknown operation, or zero counts)."""
    global _lacks
    if _lacks is not None:
        return _lacks
    _lacks = {}
    if endpoint() is None:
        return _lacks
    c = client()
    name = f"probe-{uuid.uuid4().hex[:8]}"
    c.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                   KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                   AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    try:
        checks = {
            "transactions": lambda: c.transact_write_items(TransactItems=[
                {"Put": {"TableName": name, "Item": {"pk": {"S": "t"}}}}]),
            "ttl": lambda: c.update_time_to_live(TableName=name, TimeToLiveSpecification={
                "Enabled": True, "AttributeName": "ttl"}),
        }
        for feature, call in checks.items():
            try:
                call()
            except ClientError as e:
                code = e.response.get("Error", {}).get("Code", "")
                if code in UNSUPPORTED:
                    _lacks[feature] = f"{endpoint()} answers {code} to {e.operation_name}"
        c.put_item(TableName=name, Item={"pk": {"S": "x"}})
        if c.describe_table(TableName=name)["Table"].get("ItemCount", 0) == 0:
            _lacks["table-counts"] = f"{endpoint()} reports ItemCount 0 for a table holding an item"
    finally:
        c.delete_table(TableName=name)
    return _lacks
