"""DynamoDB backend: swamp's DynamoDB extension, with both GSI layouts.

Items (pk / sk): lock ``LOCK#<key>`` / ``LOCK``; file metadata
``FILE#<relPath>`` / ``META`` (these are the index entries); content chunks
``FILE#<relPath>`` / ``CHUNK#v<N>#<7-digit index>`` (256 KB); watermark
``SYNCSTATE#<ns>`` / ``STATE``; commit sequence ``SYNCSTATE#<ns>`` / ``SEQ``;
partition registry ``PARTITIONS#registry`` / ``LIST[#<ns>]``.

GSI ``gsi1``:
- ``legacy``: ``gsi1pk = "FILE"`` for every item, ``gsi1sk = relPath``; a pull
  reads the whole partition and filters on the client (swamp's queryAllFileMeta).
- ``per-model``: ``gsi1pk = "FILE#<partition>"``, ``gsi1sk = "<updatedAt>|<relPath>"``;
  changed-since is a key condition, an unscoped pull queries every registered
  partition concurrently and is short-cut when the commit sequence is unchanged.

The lock item is kept after release (holder fields removed) so its fencing
counter only ever grows; release is still conditioned on the nonce.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.capacity import Index, TableShape
from harness.aws.instrument import recording, register_shape
from harness.clock import Clock, SystemClock, now_ms
from harness.datastore.backends.base import FileMeta, PullResult, partition_of
from harness.datastore.errors import ConfigError, FencedError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_table_name
from harness.datastore.work import Work

GSI_LAYOUTS = ("legacy", "per-model")
CHUNK_BYTES = 256 * 1024
GSI_NAME = "gsi1"
SHAPE_GSI = Index(GSI_NAME, "gsi1pk", "gsi1sk")
BATCH_GET_MAX = 100
BATCH_WRITE_MAX = 25
# What an endpoint answers for an operation it does not implement (dynalite: UnknownOperationException).
OWNER_ITEM_KEY = {"pk": {"S": "HARNESS#owner"}, "sk": {"S": "TAGS"}}
UNSUPPORTED = ("UnknownOperationException", "UnrecognizedOperationException", "NotImplementedException",
               "NotImplemented", "InvalidAction")


def _s(v: str) -> dict:
    return {"S": v}


def _n(v: int | float) -> dict:
    return {"N": str(v)}


def chunk_key(version: int, index: int) -> str:
    return f"CHUNK#v{version}#{index:07d}"


def _chunks(data: bytes) -> list[bytes]:
    return [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]


def _code(err: ClientError) -> str:
    return err.response.get("Error", {}).get("Code", "")


class DynamoLockStore:
    """Lock item writes: acquire, heartbeat and release, all conditional."""

    def __init__(self, client: Any, table: str) -> None:
        self.client, self.table = client, table

    @staticmethod
    def key_of(key: str) -> dict:
        return {"pk": _s(f"LOCK#{key}"), "sk": _s("LOCK")}

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        names = {f"#{k}": k for k in record} | {"#fence": "fence"}
        values = {f":{k}": (_n(v) if isinstance(v, int) else _s(str(v))) for k, v in record.items()}
        sets = ", ".join(f"#{k} = :{k}" for k in record)
        values.update({":now": _n(now), ":one": _n(1)})
        try:
            with recording(work):
                out = self.client.update_item(
                    TableName=self.table, Key=self.key_of(key),
                    UpdateExpression=f"SET {sets} ADD #fence :one",
                    ConditionExpression="attribute_not_exists(nonce) OR expiresAtMs < :now",
                    ExpressionAttributeNames=names, ExpressionAttributeValues=values,
                    ReturnValues="UPDATED_NEW",
                )
        except ClientError as e:
            if _code(e) == "ConditionalCheckFailedException":
                return None
            raise
        return int(out["Attributes"]["fence"]["N"])

    def _if_holder(self, key: str, nonce: str, update: str, values: dict, work: Work) -> bool:
        """An update of the lock item that only happens while ``nonce`` still holds it."""
        try:
            with recording(work):
                self.client.update_item(TableName=self.table, Key=self.key_of(key), UpdateExpression=update,
                                        ConditionExpression="nonce = :n",
                                        ExpressionAttributeValues={":n": _s(nonce), **values})
        except ClientError as e:
            if _code(e) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._if_holder(key, nonce, "SET expiresAtMs = :e", {":e": _n(expires_at_ms)}, work)

    def release(self, key: str, nonce: str, work: Work) -> bool:
        """Holder fields removed, not the item: its fencing counter must only ever grow."""
        return self._if_holder(key, nonce, "REMOVE nonce, expiresAtMs, holder, hostname, pid, acquiredAt, ttlMs",
                               {}, work)


class DynamoBackend:
    name = "dynamodb"

    def __init__(self, client: Any, table: str, gsi_layout: str = "per-model", *,
                 clock: Clock | None = None, billing: str = "on-demand",
                 provisioned: tuple[int, int] = (1000, 1000), tags: dict[str, str] | None = None,
                 create: bool = True, pull_concurrency: int = 8) -> None:
        if gsi_layout not in GSI_LAYOUTS:
            raise ConfigError(f"unknown GSI layout {gsi_layout!r}: choose one of {', '.join(GSI_LAYOUTS)}")
        if billing not in ("on-demand", "provisioned"):
            raise ConfigError(f"unknown billing mode {billing!r}: choose on-demand or provisioned")
        self.client, self.table, self.gsi_layout = client, check_table_name(table), gsi_layout
        self.clock = clock or SystemClock()
        self.billing, self.provisioned, self.tags, self.create = billing, provisioned, tags or {}, create
        self.lock_store = DynamoLockStore(client, table)
        register_shape(TableShape(self.table, "pk", "sk", [SHAPE_GSI]))  # so units count its GSI from the start
        self._known_partitions: set[str] = set()
        self._pool = ThreadPoolExecutor(max_workers=pull_concurrency, thread_name_prefix="ddb-pull")
        self._rng = random.Random()
        self.notes: list[str] = []  # what the endpoint lacks that the harness can do without (said once, by the caller)

    # ---- table ---------------------------------------------------------------
    def datastore_lock_key(self) -> str:
        return f"dynamodb://{self.table}"

    def describe(self) -> dict | None:
        try:
            return self.client.describe_table(TableName=self.table)["Table"]
        except ClientError as e:
            if _code(e) == "ResourceNotFoundException":
                return None
            raise

    @staticmethod
    def _schema_problem(t: dict) -> str | None:
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
                raise ConfigError(f"DynamoDB table {self.table!r} does not exist; create it or allow creation")
            t = self._create()
        problem = self._schema_problem(t)
        if problem:
            raise ConfigError(
                f"DynamoDB table {self.table!r} exists but {problem}; use another table name or delete it"
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
            "TableName": self.table,
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
            if _code(e) != "ResourceInUseException":  # another process created it first
                raise
        self.client.get_waiter("table_exists").wait(TableName=self.table, WaiterConfig={"Delay": 1})
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
            if _code(e) not in UNSUPPORTED:
                raise
            self.client.put_item(TableName=self.table, Item={
                **OWNER_ITEM_KEY, "tags": {"M": {k: _s(v) for k, v in self.tags.items()}}})
            self.notes.append("this endpoint does not implement TagResource: ownership is marked by an item")

    def owner_marker(self) -> dict[str, str]:
        """The ownership tags kept in an item where the endpoint cannot tag tables ({} when absent)."""
        out = self.client.get_item(TableName=self.table, Key=OWNER_ITEM_KEY, ConsistentRead=True)
        return {k: v["S"] for k, v in out.get("Item", {}).get("tags", {}).get("M", {}).items()}

    def _enable_ttl(self) -> None:
        """TTL lets AWS expire stale items; the harness works without it, so a stand-in lacking it is a note."""
        try:
            self.client.update_time_to_live(
                TableName=self.table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
        except ClientError as e:
            if _code(e) in UNSUPPORTED:
                self.notes.append("this endpoint does not implement UpdateTimeToLive: items will not expire "
                                  "(the harness does not need it)")
            elif "already enabled" not in str(e).lower() and _code(e) != "ValidationException":
                raise

    # ---- items ---------------------------------------------------------------
    def _gsi_attrs(self, namespace: str | None, meta: FileMeta) -> dict:
        if self.gsi_layout == "legacy":
            return {"gsi1pk": _s("FILE"), "gsi1sk": _s(meta.rel_path)}
        part = partition_of(meta.rel_path, namespace) or "_"
        return {"gsi1pk": _s(f"FILE#{part}"), "gsi1sk": _s(f"{meta.updated_at_ms:013d}|{meta.rel_path}")}

    def meta_item(self, namespace: str | None, meta: FileMeta, fence: int | None = None,
                  indexed: bool = True) -> dict:
        item = {
            "pk": _s(f"FILE#{meta.rel_path}"), "sk": _s("META"), "relPath": _s(meta.rel_path),
            "size": _n(meta.size), "digest": _s(meta.digest), "updatedAt": _n(meta.updated_at_ms),
            "version": _n(meta.version), "chunks": _n(max(1, -(-meta.size // CHUNK_BYTES))),
        }
        if fence is not None:
            item["fence"] = _n(fence)
        if indexed:
            item.update(self._gsi_attrs(namespace, meta))
        return item

    @staticmethod
    def meta_of(item: dict) -> FileMeta:
        return FileMeta(item["relPath"]["S"], int(item["size"]["N"]), item["digest"]["S"],
                        int(item["updatedAt"]["N"]), int(item["version"]["N"]))

    def _batch_write(self, requests: list[dict], work: Work) -> None:
        for i in range(0, len(requests), BATCH_WRITE_MAX):
            pending = {self.table: requests[i:i + BATCH_WRITE_MAX]}
            attempt = 0
            while pending:
                with recording(work):
                    out = self.client.batch_write_item(RequestItems=pending)
                pending = out.get("UnprocessedItems") or {}
                if pending:
                    attempt += 1
                    self.clock.sleep(self._rng.uniform(0, min(5.0, 0.05 * 2 ** attempt)))

    # ---- content ---------------------------------------------------------------
    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work) -> None:
        reqs = []
        for rel, data in files.items():
            for i, chunk in enumerate(_chunks(data)):
                item = {"pk": _s(f"FILE#{rel}"), "sk": _s(chunk_key(metas[rel].version, i)), "data": {"B": chunk}}
                work.items_written += 1
                reqs.append({"PutRequest": {"Item": item}})
        self._batch_write(reqs, work)

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        parts: list[bytes] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :p AND begins_with(sk, :c)",
            "ExpressionAttributeValues": {":p": _s(f"FILE#{meta.rel_path}"), ":c": _s(f"CHUNK#v{meta.version}#")},
        }
        while True:
            with recording(work):
                out = self.client.query(**kwargs)
            items = out.get("Items", [])
            work.items_read += len(items)
            parts.extend(i["data"]["B"] for i in items)
            if "LastEvaluatedKey" not in out:
                return b"".join(parts)
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        meta = FileMeta(rel_path, len(data), FileMeta.digest_of(data), now_ms(self.clock), 1)
        self.put_content({rel_path: data}, {rel_path: meta}, work)
        item = self.meta_item(None, meta, indexed=False)
        self._batch_write([{"PutRequest": {"Item": item}}], work)

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        found: dict[str, FileMeta] = {}
        for i in range(0, len(paths), BATCH_GET_MAX):
            keys = [{"pk": _s(f"FILE#{p}"), "sk": _s("META")} for p in paths[i:i + BATCH_GET_MAX]]
            pending: dict = {self.table: {"Keys": keys, "ConsistentRead": True}}
            attempt = 0
            while pending:
                with recording(work):
                    out = self.client.batch_get_item(RequestItems=pending)
                items = out.get("Responses", {}).get(self.table, [])
                work.items_read += len(items)
                for x in items:
                    m = self.meta_of(x)
                    found[m.rel_path] = m
                pending = out.get("UnprocessedKeys") or {}
                if pending:
                    attempt += 1
                    self.clock.sleep(self._rng.uniform(0, min(5.0, 0.05 * 2 ** attempt)))
        return found

    # ---- index ---------------------------------------------------------------
    def _state_key(self, namespace: str | None, sk: str) -> dict:
        return {"pk": _s(f"SYNCSTATE#{namespace or 'global'}"), "sk": _s(sk)}

    def _registry_key(self, namespace: str | None) -> dict:
        return {"pk": _s("PARTITIONS#registry"), "sk": _s(f"LIST#{namespace}" if namespace else "LIST")}

    def _register(self, namespace: str | None, entries: Sequence[FileMeta], work: Work) -> None:
        """Grow the partition registry atomically (UpdateItem ADD on a string set)."""
        if self.gsi_layout != "per-model":
            return
        new = {p for e in entries if (p := partition_of(e.rel_path, namespace))} - self._known_partitions
        if not new:
            return
        with recording(work):
            self.client.update_item(
                TableName=self.table, Key=self._registry_key(namespace),
                UpdateExpression="ADD #p :p", ExpressionAttributeNames={"#p": "partitions"},
                ExpressionAttributeValues={":p": {"SS": sorted(new)}},
            )
        self._known_partitions |= new

    def forget_partitions(self, namespace: str | None, partitions: Sequence[str], work: Work) -> None:
        """Prune: drop the partitions of pruned models from the registry (atomic DELETE on the string set)."""
        if self.gsi_layout != "per-model" or not partitions:
            return
        with recording(work):
            self.client.update_item(
                TableName=self.table, Key=self._registry_key(namespace),
                UpdateExpression="DELETE #p :p", ExpressionAttributeNames={"#p": "partitions"},
                ExpressionAttributeValues={":p": {"SS": sorted(set(partitions))}},
            )
        self._known_partitions -= set(partitions)

    def _gate(self, grant: LockGrant, work: Work) -> None:
        """A conditional write on the lock item: proceed only while this grant still holds it."""
        try:
            with recording(work):
                self.client.update_item(
                    TableName=self.table, Key=DynamoLockStore.key_of(grant.key),
                    UpdateExpression="SET #c = :t",
                    ConditionExpression="nonce = :n AND expiresAtMs > :now",
                    ExpressionAttributeNames={"#c": "commitFence"},
                    ExpressionAttributeValues={":t": _n(grant.fence), ":n": _s(grant.nonce),
                                               ":now": _n(now_ms(self.clock))})
        except ClientError as e:
            if _code(e) == "ConditionalCheckFailedException":
                raise FencedError(f"commit rejected: lock {grant.key} (fence {grant.fence}) is no longer held") from e
            raise

    def _seal(self, namespace: str | None, grant: LockGrant, work: Work) -> int:
        """Advance the commit sequence, refused if a newer fencing token already committed; returns it."""
        try:
            with recording(work):
                out = self.client.update_item(
                    TableName=self.table, Key=self._state_key(namespace, "SEQ"),
                    UpdateExpression="SET #f = :t, #u = :u ADD #s :one",
                    ConditionExpression="attribute_not_exists(#f) OR #f <= :t",
                    ExpressionAttributeNames={"#f": "fence", "#u": "updatedAt", "#s": "seq"},
                    ExpressionAttributeValues={":t": _n(grant.fence), ":one": _n(1), ":u": _n(now_ms(self.clock))},
                    ReturnValues="UPDATED_NEW")
        except ClientError as e:
            if _code(e) == "ConditionalCheckFailedException":
                raise FencedError(f"commit rejected: a newer lock holder committed after fence {grant.fence}") from e
            raise
        return int(out["Attributes"]["seq"]["N"])

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant,
               work: Work) -> int:
        """Gate on the lock, batch-write the entries stamped with the fence, re-check, seal.

        Not TransactWriteItems: that caps at 100 items, costs double, and moto
        deep-copies the whole table per item in a transaction, which would
        make a local commit's cost grow with the table rather than the commit.
        A commit fenced after its entries went out deletes them again.
        """
        self._register(namespace, entries, work)
        self._gate(grant, work)
        reqs = []
        for e in entries:
            item = self.meta_item(namespace, e, grant.fence)
            reqs.append({"PutRequest": {"Item": item}})
        try:
            self._batch_write(reqs, work)
            work.index_entries_written += len(entries)
            work.items_written += len(entries)
            self._gate(grant, work)
            return self._seal(namespace, grant, work)
        except FencedError:
            self._rollback(entries, grant, work)
            raise

    def _rollback(self, written: Sequence[FileMeta], grant: LockGrant, work: Work) -> None:
        """Delete entries this (fenced) commit wrote, unless a newer holder overwrote them since."""
        for e in written:
            try:
                with recording(work):
                    self.client.delete_item(
                        TableName=self.table, Key={"pk": _s(f"FILE#{e.rel_path}"), "sk": _s("META")},
                        ConditionExpression="#f = :t", ExpressionAttributeNames={"#f": "fence"},
                        ExpressionAttributeValues={":t": _n(grant.fence)})
            except ClientError as err:
                if _code(err) != "ConditionalCheckFailedException":
                    raise

    def commit_seq(self, namespace: str | None, work: Work) -> int:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self._state_key(namespace, "SEQ"),
                                       ConsistentRead=True)
        work.items_read += 1 if "Item" in out else 0
        return int(out.get("Item", {}).get("seq", {}).get("N", 0))

    def write_watermark(self, namespace: str | None, watermark_ms: int, work: Work) -> None:
        with recording(work):
            self.client.put_item(TableName=self.table, Item={
                **self._state_key(namespace, "STATE"), "lastPushedAt": _n(watermark_ms)})

    def read_watermark(self, namespace: str | None, work: Work) -> int | None:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self._state_key(namespace, "STATE"),
                                       ConsistentRead=True)
        item = out.get("Item")
        return int(item["lastPushedAt"]["N"]) if item else None

    def partitions(self, namespace: str | None, work: Work) -> list[str]:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self._registry_key(namespace),
                                       ConsistentRead=True)
        item = out.get("Item")
        work.items_read += 1 if item else 0
        parts = sorted(item.get("partitions", {}).get("SS", [])) if item else []  # an emptied set vanishes
        self._known_partitions |= set(parts)
        return parts

    def _query(self, kwargs: dict, work: Work) -> list[FileMeta]:
        """Run a paginated GSI query; every item returned counts as read."""
        metas: list[FileMeta] = []
        kwargs = dict(kwargs, TableName=self.table, IndexName=GSI_NAME)
        while True:
            with recording(work):
                out = self.client.query(**kwargs)
            items = out.get("Items", [])
            work.items_read += len(items)
            metas.extend(self.meta_of(i) for i in items)
            if "LastEvaluatedKey" not in out:
                return metas
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def _query_partition(self, part: str, since_ms: int) -> tuple[list[FileMeta], Work]:
        w = Work()
        metas = self._query({
            "KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :s",
            "ExpressionAttributeValues": {":p": _s(f"FILE#{part}"), ":s": _s(f"{since_ms + 1:013d}")},
        }, w)
        return metas, w

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             last_seq: int | None, work: Work) -> PullResult:
        scoped = partitions is not None
        seq = self.commit_seq(namespace, work)
        if not scoped and last_seq is not None and seq == last_seq:
            return PullResult([], seq, short_cut=True)
        if self.gsi_layout == "legacy":
            # swamp's queryAllFileMeta: read every file item, filter on the client.
            everything = self._query({"KeyConditionExpression": "gsi1pk = :p",
                                      "ExpressionAttributeValues": {":p": _s("FILE")}}, work)
            prefixes = tuple(f"{p}/" for p in partitions) if scoped else None
            root = f"{namespace}/" if namespace else ""
            changed = [m for m in everything if m.updated_at_ms > since_ms and m.rel_path.startswith(root)
                       and (prefixes is None or _in_partitions(m.rel_path, namespace, prefixes))]
            return PullResult(changed, seq)
        parts = list(partitions) if scoped else self.partitions(namespace, work)
        changed = []
        futures = [self._pool.submit(contextvars.copy_context().run, self._query_partition, p, since_ms)
                   for p in parts]
        for f in futures:
            metas, w = f.result()
            work.add(w)
            changed.extend(metas)
        return PullResult(changed, seq)

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant,
                     work: Work) -> None:
        reqs = []
        for m in metas:
            reqs.append({"DeleteRequest": {"Key": {"pk": _s(f"FILE#{m.rel_path}"), "sk": _s("META")}}})
            for i in range(max(1, -(-m.size // CHUNK_BYTES))):
                reqs.append({"DeleteRequest": {"Key": {"pk": _s(f"FILE#{m.rel_path}"),
                                                       "sk": _s(chunk_key(m.version, i))}}})
        self._batch_write(reqs, work)

    def count_items(self) -> int:
        """Every item in the table (tests and stand-in checks only: a full Scan)."""
        n, kwargs = 0, {"TableName": self.table, "Select": "COUNT"}
        while True:
            out = self.client.scan(**kwargs)
            n += out["Count"]
            if "LastEvaluatedKey" not in out:
                return n
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def _in_partitions(rel: str, namespace: str | None, prefixes: tuple[str, ...]) -> bool:
    part = partition_of(rel, namespace)
    return part is not None and f"{part}/" in prefixes

