"""What jobs do, item by item: fill a table, pre-age a datastore, delete a run's items.

Every source regenerates its items from the job's parameters alone, so a
resumed job rebuilds exactly the items it had, and every item is idempotent.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.capacity import item_size, write_units_for_size
from harness.core.clock import FakeClock, SystemClock
from harness.core.work import Work, recording
from harness.datastore.backends.base import Backend
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.catalog import Catalog
from harness.datastore.lock import Heartbeat, Lock, LockConfig, LockGrant
from harness.datastore.seed_state import write_state
from harness.datastore.sync import Datastore, SyncConfig


def fill_body(idx: int, size: int) -> str:
    """The content of fill item ``idx``: checkable after the fact."""
    seed = hashlib.sha256(str(idx).encode()).hexdigest()
    return (seed * (size // len(seed) + 1))[:size]


class FillSource:
    """``total`` items of ``item_bytes``, written once each (a conditional PutItem)."""

    def __init__(self, client: Any, table: str, total: int, item_bytes: int = 1000, prefix: str = "FILL",
                 hot_key: bool = False) -> None:
        self.client, self.table, self.total = client, table, total
        self.item_bytes, self.prefix, self.hot_key = item_bytes, prefix, hot_key
        self._cost = write_units_for_size(item_size(self.item(0)))
        self.already = 0  # items found written by an earlier (crashed) run

    def item(self, idx: int) -> dict:
        pk = f"{self.prefix}#hot" if self.hot_key else f"{self.prefix}#{idx:09d}"
        return {"pk": {"S": pk}, "sk": {"S": f"{idx:09d}"}, "body": {"S": fill_body(idx, self.item_bytes)}}

    def cost(self, idx: int) -> float:
        return self._cost

    def run(self, idx: int, work: Work) -> None:
        try:
            with recording(work):
                self.client.put_item(TableName=self.table, Item=self.item(idx),
                                     ConditionExpression="attribute_not_exists(pk)")
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self.already += 1  # landed before a crash, journal not yet written: done, not duplicated


class PreAgeSource:
    """Pre-age a datastore to hour N, through the datastore code the workers use.

    For each namespace: ``models`` models of the scenario's model type, each run
    ``versions`` times; the last ``orphans`` models are then deleted, leaving
    their data and catalog rows behind. Items: content uploads (a few files
    each), then index commits (50 entries each) under the namespace's lock.
    Each namespace's catalog and local view go to ``state_dir`` for the run's
    workers to start from.
    """

    FILES_PER_ITEM = 20
    ENTRIES_PER_COMMIT = 50

    def __init__(self, backend: Backend, namespaces: list[str | None], models: int, versions: int, orphans: int,
                 state_dir: str | Path, epoch: float, payload_bytes: int = 100) -> None:
        self.backend, self.state_dir = backend, Path(state_dir)
        self.items: list[tuple[str, Any]] = []
        self.stores: dict[str | None, Datastore] = {}
        self._grants: dict[str | None, tuple[Lock, LockGrant, Heartbeat]] = {}
        self._grants_lock = threading.Lock()  # the engine runs items in parallel: one grant per namespace
        for ns in namespaces:
            store = Datastore(backend, Catalog(), SyncConfig(namespace=ns, heartbeat=False), clock=FakeClock(epoch),
                              holder="harness-seed", rng=random.Random(f"{ns}-{epoch}"))
            for _ in range(versions):
                for m in range(models):
                    store.run_method_locally("system", f"seed-m{m:04d}", "get_uptime", payload_bytes, Work())
            for m in range(models - orphans, models):
                store.catalog.remove_model(store.ns, "system", f"seed-m{m:04d}")
                store.staged.pop(store.paths.definition("system", f"seed-m{m:04d}"), None)
            for meta in store.staged.values():
                meta.updated_at_ms = int(epoch * 1000)
            self.stores[ns] = store
            rels = sorted(store.staged)
            for i in range(0, len(rels), self.FILES_PER_ITEM):
                self.items.append(("content", (ns, rels[i:i + self.FILES_PER_ITEM])))
        for ns, store in self.stores.items():
            rels = sorted(store.staged)
            for i in range(0, len(rels), self.ENTRIES_PER_COMMIT):
                self.items.append(("commit", (ns, rels[i:i + self.ENTRIES_PER_COMMIT])))
        self.total = len(self.items)

    def files(self) -> int:
        return sum(len(s.staged) for s in self.stores.values())

    def cost(self, idx: int) -> float:
        kind, (ns, rels) = self.items[idx]
        store = self.stores[ns]
        per_file = 2.0 if kind == "commit" and isinstance(self.backend, DynamoBackend) else 1.0  # table + GSI
        return sum(per_file * write_units_for_size(store.staged[r].size + 200) for r in rels)

    def _grant(self, ns: str | None) -> LockGrant:
        with self._grants_lock:
            return self._take(ns)

    def _take(self, ns: str | None) -> LockGrant:
        if ns not in self._grants:
            store = self.stores[ns]
            # generation runs on a fixed clock (so a resume rebuilds the same items); the lock needs real time
            lock = Lock(self.backend.lock_store, store.lock_key(), SystemClock(), LockConfig(ttl_s=60, wait_s=120),
                        holder="harness-seed")
            grant = lock.acquire(Work())
            beat = Heartbeat(lock, grant, Work())
            beat.__enter__()
            self._grants[ns] = (lock, grant, beat)
        return self._grants[ns][1]

    def run(self, idx: int, work: Work) -> None:
        kind, (ns, rels) = self.items[idx]
        store = self.stores[ns]
        if kind == "content":
            self.backend.put_content({r: store.dirty[r] for r in rels}, {r: store.staged[r] for r in rels}, work)
        else:
            # (the namespace's cursor: a fenced commit then knows the partitions it writes without reading them)
            self.backend.commit(store.ns, [store.staged[r] for r in rels], self._grant(ns), work,
                                cursor=store._cursor)

    def finish(self) -> None:
        """Release the locks and write each namespace's catalog and local view for the workers."""
        with self._grants_lock:
            for lock, grant, beat in self._grants.values():
                beat.__exit__(None, None, None)
                lock.release(grant, Work())
            self._grants.clear()
        for ns, store in self.stores.items():
            write_state(self.state_dir, ns, store)


class CleanupSource:
    """Delete a table's items, 25 keys an item, from a snapshot of its keys taken when the job starts."""

    def __init__(self, client: Any, table: str, keys_path: str | Path) -> None:
        self.client, self.table = client, table
        keys = json.loads(Path(keys_path).read_text())
        self.batches = [keys[i:i + 25] for i in range(0, len(keys), 25)]
        self.total = len(self.batches)

    def cost(self, idx: int) -> float:
        return float(len(self.batches[idx]))

    def run(self, idx: int, work: Work) -> None:
        reqs = [{"DeleteRequest": {"Key": {"pk": {"S": pk}, "sk": {"S": sk}}}} for pk, sk in self.batches[idx]]
        with recording(work):
            out = self.client.batch_write_item(RequestItems={self.table: reqs})
        if out.get("UnprocessedItems"):  # deletes are idempotent: the engine backs off and redoes the batch
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                         "Message": "unprocessed deletes"}}, "BatchWriteItem")


def snapshot_keys(client: Any, table: str, path: str | Path, read_ceiling: float, prefix: str = "") -> int:
    """Every (pk, sk) of the table (under ``prefix``), read at no more than ``read_ceiling`` units a second."""
    from harness.aws.fidelity.buckets import TokenBucket

    bucket = TokenBucket(read_ceiling, SystemClock(), burst_s=1.0)
    keys: list[list[str]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ProjectionExpression": "pk, sk", "Limit": 1000}
    while True:
        work = Work()
        with recording(work):
            out = client.scan(**kwargs)
        keys += [[i["pk"]["S"], i["sk"]["S"]] for i in out.get("Items", []) if i["pk"]["S"].startswith(prefix)]
        bucket.charge(work.read_units)
        while bucket.level() < 0:
            SystemClock().sleep(min(1.0, -bucket.level() / read_ceiling))
        if "LastEvaluatedKey" not in out:
            break
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(keys))
    return len(keys)
