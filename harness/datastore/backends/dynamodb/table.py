"""The backend's table: create it with the keys and GSI the backend needs, or refuse one that does not fit.

Provisioning only (no data path): create with ownership tags (tagged again
after create, since some endpoints accept CreateTable's ``Tags`` and drop
them; where TagResource is missing an owner item marks it), enable TTL where
the endpoint has it, and describe/count for the harness's own checks.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import error_code
from harness.datastore.backends.dynamodb.items import GSI_NAME, OWNER_ITEM_KEY, s_
from harness.datastore.errors import ConfigError

# What an endpoint answers for an operation it does not implement (dynalite: UnknownOperationException).
UNSUPPORTED = ("UnknownOperationException", "UnrecognizedOperationException", "NotImplementedException",
               "NotImplemented", "InvalidAction")


class DynamoTable:
    """One table, as the backend needs it: ``pk``/``sk`` keys and GSI ``gsi1`` (``gsi1pk``/``gsi1sk``)."""

    def __init__(self, client: Any, name: str, *, billing: str = "on-demand",
                 provisioned: tuple[int, int] = (1000, 1000), tags: dict[str, str] | None = None,
                 create: bool = True) -> None:
        if billing not in ("on-demand", "provisioned"):
            raise ConfigError(f"unknown billing mode {billing!r}: choose on-demand or provisioned")
        self.client, self.name = client, name
        self.billing, self.provisioned, self.tags, self.create = billing, provisioned, tags or {}, create
        self.notes: list[str] = []  # what the endpoint lacks that the harness can do without (said once, by the caller)

    def describe(self) -> dict | None:
        try:
            return self.client.describe_table(TableName=self.name)["Table"]
        except ClientError as e:
            if error_code(e) == "ResourceNotFoundException":
                return None
            raise

    @staticmethod
    def schema_problem(t: dict) -> str | None:
        keys = {k["AttributeName"]: k["KeyType"] for k in t.get("KeySchema", [])}
        if keys != {"pk": "HASH", "sk": "RANGE"}:
            got = ", ".join(f"{k} ({v})" for k, v in keys.items())
            return f"its key schema is {got}; expected pk (HASH) + sk (RANGE)"
        gsis = {g["IndexName"]: g for g in t.get("GlobalSecondaryIndexes", [])}
        g = gsis.get(GSI_NAME)
        if g is None:
            return f"it has no GSI {GSI_NAME!r}"
        gkeys = {k["AttributeName"]: k["KeyType"] for k in g["KeySchema"]}
        if gkeys != {"gsi1pk": "HASH", "gsi1sk": "RANGE"}:
            return f"its GSI {GSI_NAME!r} is not keyed gsi1pk (HASH) + gsi1sk (RANGE)"
        return None

    def ensure(self) -> None:
        t = self.describe()
        if t is None:
            if not self.create:
                raise ConfigError(f"DynamoDB table {self.name!r} does not exist; create it or allow creation")
            t = self._create()
        problem = self.schema_problem(t)
        if problem:
            raise ConfigError(
                f"DynamoDB table {self.name!r} exists but {problem}; use another table name or delete it"
            )

    def _create(self) -> dict:
        attrs = [{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "gsi1pk", "gsi1sk")]
        gsi: dict[str, Any] = {
            "IndexName": GSI_NAME,
            "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                          {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": attrs,
        }
        if self.billing == "provisioned":
            rcu, wcu = self.provisioned
            tp = {"ReadCapacityUnits": rcu, "WriteCapacityUnits": wcu}
            kwargs["BillingMode"] = "PROVISIONED"
            kwargs["ProvisionedThroughput"] = tp
            gsi["ProvisionedThroughput"] = tp
        else:
            kwargs["BillingMode"] = "PAY_PER_REQUEST"
        kwargs["GlobalSecondaryIndexes"] = [gsi]
        if self.tags:
            kwargs["Tags"] = [{"Key": k, "Value": v} for k, v in self.tags.items()]
        try:
            self.client.create_table(**kwargs)
        except ClientError as e:
            if error_code(e) != "ResourceInUseException":  # another process created it first
                raise
        self.client.get_waiter("table_exists").wait(TableName=self.name, WaiterConfig={"Delay": 1})
        t = self.describe() or {}
        if self.tags:
            self._tag(t.get("TableArn", ""))
        self._enable_ttl()
        return t

    def _tag(self, arn: str) -> None:
        """Tag again after create: some endpoints (dynalite) accept CreateTable's Tags and drop them."""
        try:
            self.client.tag_resource(ResourceArn=arn, Tags=[{"Key": k, "Value": v} for k, v in self.tags.items()])
        except ClientError as e:
            if error_code(e) not in UNSUPPORTED:
                raise
            self.client.put_item(TableName=self.name, Item={
                **OWNER_ITEM_KEY, "tags": {"M": {k: s_(v) for k, v in self.tags.items()}}})
            self.notes.append("this endpoint does not implement TagResource: ownership is marked by an item")

    def owner_marker(self) -> dict[str, str]:
        """The ownership tags kept in an item where the endpoint cannot tag tables ({} when absent)."""
        out = self.client.get_item(TableName=self.name, Key=OWNER_ITEM_KEY, ConsistentRead=True)
        return {k: v["S"] for k, v in out.get("Item", {}).get("tags", {}).get("M", {}).items()}

    def _enable_ttl(self) -> None:
        """TTL lets AWS expire stale items; the harness works without it, so a stand-in lacking it is a note."""
        try:
            self.client.update_time_to_live(
                TableName=self.name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
        except ClientError as e:
            if error_code(e) in UNSUPPORTED:
                self.notes.append("this endpoint does not implement UpdateTimeToLive: items will not expire "
                                  "(the harness does not need it)")
            elif "already enabled" not in str(e).lower() and error_code(e) != "ValidationException":
                raise

    def count_items(self) -> int:
        """Every item in the table (tests and stand-in checks only: a full Scan)."""
        n, kwargs = 0, {"TableName": self.name, "Select": "COUNT"}
        while True:
            out = self.client.scan(**kwargs)
            n += out["Count"]
            if "LastEvaluatedKey" not in out:
                return n
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
