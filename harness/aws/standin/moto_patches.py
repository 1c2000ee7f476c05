"""Patches to moto, applied only inside the embedded server process (never in tests' ``mock_aws``).

1. ``untrack_models``: every moto model object (a DynamoDB ``Item``, an S3
   ``FakeKey``...) appends itself to a class-level ``instances_tracked`` list on
   creation, for moto's dashboard, and nothing ever removes it. moto creates
   such objects on every request (PutItem builds an ``Item``, UpdateItem
   deep-copies the old one, Query deep-copies its results), so a long-running
   server keeps every item it ever saw: ~0.85 KB per request whatever the
   table holds. The embedded server has no dashboard; creating models without
   tracking them makes memory follow the data instead of the request count.

2. ``index_queries``: moto's ``Table.query`` builds its candidates from
   ``all_items()``, which collects and sorts every item of the table, so a
   Query on a 5-item partition of a 20k-item table costs ~0.4 s. This keeps,
   per table, the items of every GSI partition (maintained on put, delete and
   update; rebuilt after anything else that swaps table state, such as a
   failed transaction) and hands ``query`` only the candidates of the queried
   partition (base table: ``items[hash_key]``, already a dict in moto). The
   rest of moto's query (sorting, ExclusiveStartKey, Limit, key conditions,
   filters, projections) runs unchanged, so results are moto's own.

Pinned to the moto version the patches were written against
(``PATCHED_MOTO``): another version fails loudly instead of misbehaving.
"""

from __future__ import annotations

import inspect
from importlib import metadata
from typing import Any

PATCHED_MOTO = ("5.2.",)


def _check_version() -> str:
    version = metadata.version("moto")
    if not version.startswith(PATCHED_MOTO):
        raise RuntimeError(f"moto {version} is not the version these patches were written for "
                           f"({', '.join(v + 'x' for v in PATCHED_MOTO)}): pin moto or use --stand-in moto")
    return version


def untrack_models() -> None:
    """Create moto model objects without appending them to ``instances_tracked`` (the leak)."""
    from moto.core import model_instances
    from moto.core.common_models import BaseModel

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - replaces BaseModel.__new__
        return super(BaseModel, cls).__new__(cls)

    BaseModel.__new__ = __new__  # type: ignore[method-assign]
    model_instances.reset_model_data()  # drop whatever was tracked while importing


# ---- per-partition indexes -------------------------------------------------------

def _key(item: Any) -> tuple:
    return (item.hash_key, item.range_key)


class PartitionIndex:
    """For one table: GSI name -> partition value -> {table key: item}, and the reverse map."""

    def __init__(self) -> None:
        self.parts: dict[str, dict[Any, dict[tuple, Any]]] = {}
        self.where: dict[tuple, dict[str, Any]] = {}
        self.dirty = True

    @staticmethod
    def _gsi_hash_attrs(table: Any) -> dict[str, str]:
        """GSIs keyed by one HASH attribute (multi-attribute keys are left to moto's scan)."""
        out = {}
        for gsi in table.global_indexes or []:
            hashes = [k["AttributeName"] for k in gsi.schema if k["KeyType"] == "HASH"]
            if len(hashes) == 1:
                out[gsi.name] = hashes[0]
        return out

    def rebuild(self, table: Any) -> None:
        self.parts, self.where = {}, {}
        for rows in table.items.values():
            for item in (rows.values() if table.range_key_attr else [rows]):
                self.add(table, item)
        self.dirty = False

    def remove(self, key: tuple) -> None:
        for name, value in self.where.pop(key, {}).items():
            bucket = self.parts.get(name, {}).get(value)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self.parts[name][value]

    def add(self, table: Any, item: Any) -> None:
        key = _key(item)
        self.remove(key)
        placed = {}
        for name, attr in self._gsi_hash_attrs(table).items():
            value = item.attrs.get(attr)
            if value is not None:
                self.parts.setdefault(name, {}).setdefault(value, {})[key] = item
                placed[name] = value
        if placed:
            self.where[key] = placed

    def candidates(self, table: Any, index_name: str, value: Any) -> list | None:
        if index_name not in self._gsi_hash_attrs(table):
            return None
        if self.dirty:
            self.rebuild(table)
        return list(self.parts.get(index_name, {}).get(value, {}).values())


def _index_of(table: Any) -> PartitionIndex:
    idx = table.__dict__.get("_harness_index")
    if idx is None:
        idx = table.__dict__["_harness_index"] = PartitionIndex()
    return idx


def _candidates(table: Any, hash_key: Any, index_name: str | None, hash_key_conditions: list | None) -> list | None:
    """The items moto's query may consider, or None to let moto scan (shapes the index does not cover)."""
    conds = hash_key_conditions or []
    if index_name is None:
        if hash_key is None:
            return None
        rows = table.items.get(hash_key)
        if rows is None:
            return []
        return list(rows.values()) if table.range_key_attr else [rows]
    if len(conds) != 1:
        return None
    return _index_of(table).candidates(table, index_name, conds[0][1])


def index_queries() -> None:
    """Serve Query from per-partition candidates; keep the GSI partitions current on every write."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    orig_query, orig_all_items = Table.query, Table.all_items
    orig_put, orig_delete = Table.put_item, Table.delete_item
    orig_update = DynamoDBBackend.update_item

    signature = inspect.signature(orig_query)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        a = signature.bind(self, *args, **kwargs).arguments
        self.__dict__["_harness_candidates"] = _candidates(self, a.get("hash_key"), a.get("index_name"),
                                                           a.get("hash_key_conditions"))
        try:
            return orig_query(self, *args, **kwargs)
        finally:
            self.__dict__["_harness_candidates"] = None

    def all_items(self: Any) -> list:
        found = self.__dict__.get("_harness_candidates")
        if found is None:
            return orig_all_items(self)
        return sorted(found, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)

    def put_item(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = orig_put(self, *args, **kwargs)
        idx = _index_of(self)
        if not idx.dirty:
            idx.add(self, item)
        return item

    def delete_item(self: Any, hash_key: Any, range_key: Any) -> Any:
        item = orig_delete(self, hash_key, range_key)
        if item is not None:
            _index_of(self).remove(_key(item))
        return item

    def update_item(self: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        item = orig_update(self, table_name, *args, **kwargs)  # mutates the stored item in place
        idx = _index_of(self.get_table(table_name))
        if not idx.dirty:
            idx.add(self.get_table(table_name), item)
        return item

    def mark_all_dirty(name: str) -> None:
        orig = getattr(DynamoDBBackend, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return orig(self, *args, **kwargs)
            finally:
                for table in self.tables.values():
                    _index_of(table).dirty = True

        setattr(DynamoDBBackend, name, wrapped)

    Table.query, Table.all_items = query, all_items  # type: ignore[method-assign]
    Table.put_item, Table.delete_item = put_item, delete_item  # type: ignore[method-assign]
    DynamoDBBackend.update_item = update_item  # type: ignore[method-assign]
    for name in ("transact_write_items", "restore_table_from_backup", "restore_table_to_point_in_time",
                 "update_table", "import_table", "execute_statement", "batch_execute_statement",
                 "execute_transaction"):
        if hasattr(DynamoDBBackend, name):
            mark_all_dirty(name)


def apply(indexed: bool) -> str:
    """Apply the patches for the embedded server; returns the moto version."""
    version = metadata.version("moto")
    untrack_models()
    if indexed:
        version = _check_version()
        index_queries()
    return version
