"""DynamoDB's capacity-unit rules as pure functions on wire-format requests and responses.

Write: 1 unit per started KB of an item, for the table and again for every GSI
the item lands in; transactional writes cost double; a failed conditional write
still costs its units. Read: 1 unit per started 4 KB strongly consistent, half
that eventually consistent (GSI queries always are); a Query or Scan sums item
sizes before rounding, BatchGetItem rounds per item.

A ``Charge`` says what a request costs and where: table, index (None for the
base table), partition key value, read or write. The throttling model spends
them against partition and table budgets; the accountant adds them to the
step's Work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from harness.core.item_size import item_size, value_size

KB = 1024


def write_units_for_size(size: int) -> float:
    return float(max(1, math.ceil(size / KB)))


def write_units(item: Mapping[str, Mapping[str, Any]], gsi_keys: Iterable[tuple[str, str]] = ()) -> float:
    """Units to write ``item``: table plus every GSI whose key attributes it carries."""
    per = write_units_for_size(item_size(item))
    lands = sum(1 for pk, sk in gsi_keys if pk in item and (not sk or sk in item))
    return per * (1 + lands)


def read_units(sizes: Iterable[int], consistent: bool = False, summed: bool = False) -> float:
    """Units to read items of ``sizes``; ``summed`` for Query/Scan (one rounding)."""
    sizes = list(sizes)
    if summed:
        units = max(1, math.ceil(sum(sizes) / (4 * KB)))
    else:
        units = sum(max(1, math.ceil(s / (4 * KB))) for s in sizes) or 1
    return float(units if consistent else units / 2)


@dataclass(frozen=True)
class Index:
    name: str
    pk: str
    sk: str | None


@dataclass
class TableShape:
    """What accounting needs to know of a table: its keys and its GSIs."""

    name: str
    pk: str = "pk"
    sk: str | None = "sk"
    gsis: list[Index] = field(default_factory=list)

    @staticmethod
    def from_description(t: Mapping[str, Any]) -> TableShape:
        def keys(schema: list) -> tuple[str, str | None]:
            k = {x["KeyType"]: x["AttributeName"] for x in schema}
            return k["HASH"], k.get("RANGE")

        pk, sk = keys(t["KeySchema"])
        gsis = [Index(g["IndexName"], *keys(g["KeySchema"])) for g in t.get("GlobalSecondaryIndexes", [])]
        return TableShape(t["TableName"], pk, sk, gsis)


class Charge(NamedTuple):
    """A NamedTuple, not a dataclass: one is made per item written, on every write's hot path."""

    table: str
    index: str | None
    key: str  # the partition key value the units land on ("" when unknown)
    kind: str  # "read" | "write"
    units: float


def _key_value(v: Mapping[str, Any] | None) -> str:
    if not v:
        return ""
    x = v.get("S")
    return x if x is not None else str(next(iter(v.values())))


def _item_writes(shape: TableShape, item: Mapping[str, Any], factor: float = 1.0) -> list[Charge]:
    units = float(max(1, -(-item_size(item) // KB))) * factor
    name = shape.name
    out = [Charge(name, None, _key_value(item.get(shape.pk)), "write", units)]
    for g in shape.gsis:
        gk = item.get(g.pk)
        if gk is not None and (g.sk is None or g.sk in item):
            out.append(Charge(name, g.name, _key_value(gk), "write", units))
    return out


def _update_writes(shape: TableShape, p: Mapping[str, Any], factor: float = 1.0,
                   known: Mapping[tuple[str, str, str], int] | None = None) -> list[Charge]:
    """UpdateItem: billed on the item's size, which the request alone does not tell: key + new values, or
    the item's size as an earlier update of it returned it (``known``: an item that only grows, the registry)."""
    key = p.get("Key", {})
    values = p.get("ExpressionAttributeValues", {})
    size = item_size(key) + sum(value_size(v) + 8 for v in values.values())
    if known:
        size = max(size, known.get(item_id(shape, p.get("TableName", shape.name), key), 0))
    units = write_units_for_size(size) * factor
    out = [Charge(shape.name, None, _key_value(key.get(shape.pk)), "write", units)]
    expr = p.get("UpdateExpression", "")
    names = p.get("ExpressionAttributeNames", {})
    for g in shape.gsis:  # an update that sets a GSI key writes that index too
        if re.search(rf"(^|[\s,]){re.escape(g.pk)}\s*=", expr) or any(
                n == g.pk and re.search(rf"{re.escape(alias)}\s*=", expr) for alias, n in names.items()):
            out.append(Charge(shape.name, g.name, "", "write", units))
    return out


def item_id(shape: TableShape, table: str, key: Mapping[str, Any]) -> tuple[str, str, str]:
    """(table, partition key, sort key) of an item, as strings."""
    return table, _key_value(key.get(shape.pk)), _key_value(key.get(shape.sk)) if shape.sk else ""


def write_charges(op: str, p: Mapping[str, Any], shapes: Mapping[str, TableShape],
                  known: Mapping[tuple[str, str, str], int] | None = None) -> list[Charge]:
    """What a write costs, known before it is sent (from the request, and the sizes of items updated before)."""
    def shape(name: str) -> TableShape:
        return shapes.get(name) or TableShape(name)

    if op == "PutItem":
        return _item_writes(shape(p["TableName"]), p["Item"])
    if op == "UpdateItem":
        return _update_writes(shape(p["TableName"]), p, known=known)
    if op == "DeleteItem":
        s = shape(p["TableName"])
        return [Charge(s.name, None, _key_value(p["Key"].get(s.pk)), "write", 1.0)]
    if op == "BatchWriteItem":
        out: list[Charge] = []
        for table, reqs in p.get("RequestItems", {}).items():
            s = shape(table)
            for r in reqs:
                if "PutRequest" in r:
                    out += _item_writes(s, r["PutRequest"]["Item"])
                else:
                    out.append(Charge(s.name, None, _key_value(r["DeleteRequest"]["Key"].get(s.pk)), "write", 1.0))
        return out
    if op == "TransactWriteItems":
        out = []
        for t in p.get("TransactItems", []):
            ((kind, x),) = t.items()
            s = shape(x["TableName"])
            if kind == "Put":
                out += _item_writes(s, x["Item"], 2.0)
            elif kind == "Update":
                out += _update_writes(s, x, 2.0)
            else:  # Delete, ConditionCheck
                out.append(Charge(s.name, None, _key_value(x["Key"].get(s.pk)), "write", 2.0))
        return out
    return []


_HASH_EQ = re.compile(r"^\s*\(?\s*(#?[\w.]+)\s*=\s*(:[\w]+)")


def query_key(p: Mapping[str, Any]) -> str:
    """The partition key value a Query targets (``pk = :v`` is always its first condition)."""
    m = _HASH_EQ.match(p.get("KeyConditionExpression", ""))
    if not m:
        return ""
    return _key_value(p.get("ExpressionAttributeValues", {}).get(m.group(2)))


def read_charges(op: str, p: Mapping[str, Any], parsed: Mapping[str, Any],
                 shapes: Mapping[str, TableShape]) -> list[Charge]:
    """What a read cost, known once the response is in."""
    if op == "GetItem":
        item = parsed.get("Item")
        size = item_size(item) if item else 0
        s = shapes.get(p["TableName"]) or TableShape(p["TableName"])
        return [Charge(s.name, None, _key_value(p["Key"].get(s.pk)), "read",
                       read_units([size], consistent=bool(p.get("ConsistentRead"))))]
    if op in ("Query", "Scan"):
        sizes = [item_size(i) for i in parsed.get("Items", [])]
        index = p.get("IndexName")
        consistent = bool(p.get("ConsistentRead")) and index is None
        key = query_key(p) if op == "Query" else ""
        return [Charge(p["TableName"], index, key, "read", read_units(sizes, consistent=consistent, summed=True))]
    if op == "BatchGetItem":
        out = []
        for table, items in parsed.get("Responses", {}).items():
            req = p.get("RequestItems", {}).get(table, {})
            s = shapes.get(table) or TableShape(table)
            consistent = bool(req.get("ConsistentRead"))
            for i in items:
                out.append(Charge(table, None, _key_value(i.get(s.pk)), "read",
                                  read_units([item_size(i)], consistent=consistent)))
        return out
    return []


def conditional_failure_charges(op: str, p: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> list[Charge]:
    """A write whose condition failed still costs the base table's write units (not the GSIs')."""
    return [c for c in write_charges(op, p, shapes) if c.index is None]
