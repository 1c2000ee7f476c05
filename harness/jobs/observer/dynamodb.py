"""The observer's reads of a DynamoDB datastore, one group at a time (``layout.py`` says where things are).

Groups, each sampled on its own cadence (a costly one less often):

- ``locks``: every commit domain's lock item (held, by whom), each namespace's catalog export
  (``FILE#<path>`` / ``BLOB``, its ``size``), and registries no namespace owns (swamp's one);
- ``FILE`` (``gsi = "legacy"``): the items under the one GSI key, a ``Select=COUNT`` Query, paged;
- ``ns:<namespace>`` (per-model layouts): the namespace's registry item (its size, the partitions it
  lists), then every GSI key those partitions land on, read whole: items per key, and the index
  entries (paths whose newest version is no tombstone) in the namespace. Reading the items instead
  of counting them bills the same read units (DynamoDB bills what a Query reads, whatever it returns)
  and tells entries (paths) from items (versions).

Everything is read eventually consistently (a GSI can be read no other way; the base table at half
the units), so a sample may miss the newest writes by a moment.
"""

from __future__ import annotations

from typing import Any

from harness.aws.capacity import read_units
from harness.core.item_size import item_size
from harness.jobs.observer.layout import (
    LEGACY_KEY,
    Layout,
    export_rel,
    holder_of,
    live_paths,
    lock_item,
    lock_keys,
    namespace_registry,
    partitions_listed,
    registered,
    registry_items,
    registry_key,
    registry_name,
)
from harness.jobs.observer.reads import Obs, Sender
from harness.jobs.observer.reads import response_length as _length

INDEX = "gsi1"
SIZE_SAMPLE = 25  # items read whole to learn the mean item size a COUNT is billed by
SIZE_EVERY = 10  # ... again every so many samples of the key


def _plain(item: dict) -> dict[str, Any]:
    return {k: next(iter(v.values())) for k, v in item.items()}


class DynamoReader:
    def __init__(self, client: Any, layout: Layout, send: Sender, clock: Any, *,
                 billed_by_answer: bool = False) -> None:
        self.client, self.layout, self.send, self.clock = client, layout, send, clock
        self.table = layout.table
        self.billed_by_answer = billed_by_answer  # AWS: take DynamoDB's ConsumedCapacity for a COUNT
        self.mean_size: dict[str, float] = {}
        self._counted: dict[str, int] = {}

    def groups(self) -> list[str]:
        if self.layout.gsi == "legacy":
            return ["locks", LEGACY_KEY]
        return ["locks", *[f"ns:{ns or ''}" for ns in self.layout.scopes]]

    def read(self, group: str) -> list[Obs]:
        if group == "locks":
            return self._locks()
        if group == LEGACY_KEY:
            return [("gsi_items", LEGACY_KEY, self._count(LEGACY_KEY))]
        return self._namespace(group[3:] or None)

    # ---- requests -----------------------------------------------------------------------
    def _get(self, key: dict) -> dict | None:
        out = self.send.send(lambda: self.client.get_item(TableName=self.table, Key=key),
                             lambda o: read_units([item_size(o["Item"]) if "Item" in o else 0]), _length)
        return out.get("Item")

    def _query(self, **kw: Any) -> list[dict]:
        """Every item a Query returns, paged; billed by the items it read (summed, then rounded)."""
        items: list[dict] = []
        kw = dict(kw, TableName=self.table)
        while True:
            out = self.send.send(lambda kw=kw: self.client.query(**kw),
                                 lambda o: read_units([item_size(i) for i in o.get("Items", [])], summed=True,
                                                      consistent=bool(kw.get("ConsistentRead"))), _length)
            items += out.get("Items", [])
            if "LastEvaluatedKey" not in out or kw.get("Limit"):
                return items
            kw["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def _gsi(self, key: str, **kw: Any) -> list[dict]:
        return self._query(IndexName=INDEX, KeyConditionExpression="gsi1pk = :p",
                           ExpressionAttributeValues={":p": {"S": key}}, **kw)

    def _count(self, key: str) -> int:
        """Items under one GSI key: ``Select=COUNT``, paged. Billed as it reads them: their count times their
        mean size (learned from a few items read whole, now and then), or DynamoDB's own figure on AWS."""
        n = self._counted.get(key, 0)
        self._counted[key] = n + 1
        if key not in self.mean_size or n % SIZE_EVERY == 0:
            sample = self._gsi(key, Limit=SIZE_SAMPLE)
            if sample:
                self.mean_size[key] = sum(item_size(i) for i in sample) / len(sample)
        mean = self.mean_size.get(key, 0.0)
        total = 0
        kw: dict[str, Any] = {"TableName": self.table, "IndexName": INDEX, "Select": "COUNT",
                              "KeyConditionExpression": "gsi1pk = :p",
                              "ExpressionAttributeValues": {":p": {"S": key}}, "ReturnConsumedCapacity": "TOTAL"}

        def units(o: dict) -> float:
            told = (o.get("ConsumedCapacity") or {}).get("CapacityUnits")
            if self.billed_by_answer and told is not None:
                return float(told)
            return read_units([int(o.get("ScannedCount", o.get("Count", 0)) * mean)], summed=True)

        while True:
            out = self.send.send(lambda kw=kw: self.client.query(**kw), units, _length)
            total += int(out.get("Count", 0))
            if "LastEvaluatedKey" not in out:
                return total
            kw["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    # ---- groups ---------------------------------------------------------------------------
    def _locks(self) -> list[Obs]:
        out: list[Obs] = []
        now = int(self.clock.now() * 1000)
        for key in lock_keys(self.layout):
            record = _plain(self._get(lock_item(key)) or {})
            holder = holder_of(record, now)
            out.append(("lock_held", key, int(holder is not None)))
            if holder is not None:
                out.append(("lock_holder", key, holder))
        for ns in self.layout.scopes:
            size = self._export_size(export_rel(ns))
            if size is not None:
                out.append(("export_bytes", export_rel(ns), size))
        # the registries no namespace group reads (legacy has none; swamp's bookkeeping may write one anyway)
        owned = [] if self.layout.gsi == "legacy" else [namespace_registry(ns) for ns in self.layout.scopes]
        for pk in registry_items(self.layout):
            if pk not in owned:
                out += self._registry(pk)[0]
        return out

    def _export_size(self, rel: str) -> int | None:
        """The export's size: its ``BLOB`` head, or (swamp's two-phase export, an indexed file) its entry."""
        head = self._get({"pk": {"S": f"FILE#{rel}"}, "sk": {"S": "BLOB"}})
        if head is not None:
            return int(head.get("size", {}).get("N", 0))
        versions = self._query(KeyConditionExpression="pk = :p AND sk >= :m",
                               ExpressionAttributeValues={":p": {"S": f"FILE#{rel}"}, ":m": {"S": "META"}})
        versions = [v for v in versions if "size" in v and "del" not in v]
        if not versions:
            return None
        return int(max(versions, key=lambda v: int(v.get("s", {}).get("N", 0)))["size"]["N"])

    def _registry(self, pk: str) -> tuple[list[Obs], dict]:
        item = self._get(registry_key(pk)) or {}
        if not item:
            return [], {}
        return [("registry_bytes", registry_name(pk), item_size(item)),
                ("partitions", registry_name(pk), partitions_listed(item))], item

    def _namespace(self, ns: str | None) -> list[Obs]:
        out, item = self._registry(namespace_registry(ns))
        if not item:
            return out  # nothing committed in this namespace yet (or it is not one of this run's)
        keys = [f"FILE#{k}" for k in registered(item, self.layout)]
        items: list[dict] = []
        for key in keys:
            got = self._gsi(key)
            out.append(("gsi_items", key, len(got)))
            items += got
        out.append(("index_entries", ns or "", live_paths(items, ns)))
        return out
