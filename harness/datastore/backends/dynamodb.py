"""DynamoDB backend: swamp's DynamoDB extension, with both GSI layouts, and fenced commits.

Items (pk / sk): lock ``LOCK#<key>`` / ``LOCK``; file metadata
``FILE#<relPath>`` / ``META`` (these are the index entries); content chunks
``FILE#<relPath>`` / ``CHUNK#v<N>#<digest>#<7-digit index>`` (256 KB; swamp's key plus the
content digest, so a version's content is immutable: see below); watermark
``SYNCSTATE#<ns>`` / ``STATE``; partition registry ``PARTITIONS#registry`` /
``LIST[#<ns>]``.

GSI ``gsi1``:
- ``legacy``: ``gsi1pk = "FILE"`` for every item, ``gsi1sk = relPath``; a pull
  reads the whole partition and filters on the client (swamp's queryAllFileMeta).
- ``per-model``: ``gsi1pk = "FILE#<partition>"``, ``gsi1sk = "<updatedAt>|<relPath>"``;
  changed-since is a key condition, an unscoped pull queries every registered
  partition concurrently and is short-cut when the commit sequence is unchanged.

Commits (beyond swamp). The commit sequence lives on the lock item, not in
swamp's ``SYNCSTATE#<ns>`` / ``SEQ``, so that sealing is conditioned on the
grant itself: once a newer holder is granted the lock, an older holder can no
longer seal anything (the lease is the fence). A fenced commit:

1. *claims* a commit id on the lock item (``ADD pending``, conditioned on the
   nonce and on the sequence the holder pulled at);
2. writes each entry with its own conditional ``PutItem`` (concurrently; no
   BatchWriteItem, which takes no conditions, and no TransactWriteItems, which
   moto runs at a cost that grows with the table and dynalite lacks): the
   write is conditioned on the entry it read, and refused if a newer fencing
   token wrote it. Each entry carries the id and sequence of the commit that
   wrote it and, in ``prev``, the version that was visible before;
3. *seals*: advances ``seq`` and removes the id from ``pending``, conditioned
   on the nonce and on the id still pending.

Readers take ``seq`` and ``pending`` from the lock item and see an entry's
version only if its sequence is sealed and its commit is not pending;
otherwise they see ``prev``. So a commit that is fenced, throttled or times out
half-way leaves nothing visible. It then undoes only its own writes
(conditioned on its id) and, once every one of them is known undone, drops its
id from ``pending``; an id whose writes may still land stays pending for good
(invisible). A commit of N entries costs N + 3 requests (the claim, one
BatchGetItem per 100 entries, the seal) whatever the table holds.

Content chunks are keyed by version *and* digest: a holder whose lease ran out
while it uploaded can then never overwrite the content a newer, sealed entry
points at (swamp's key, by version only, lets two writers of one path version
clobber each other's chunks).

``fencing = False`` is swamp's own commit: one unconditional BatchWriteItem, then
an unconditional sequence bump.

The lock item is kept after release (holder fields removed) so its fencing
counter and sequence only ever grow; release is still conditioned on the nonce.
"""

from __future__ import annotations

import contextvars
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.aws_errors import error_code, is_condition_failed, outcome_unknown
from harness.clock import Clock, SystemClock, now_ms
from harness.datastore.backends.base import CommitResult, FileMeta, PullResult, partition_of
from harness.datastore.errors import ConfigError, FencedError, LockLostError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_table_name
from harness.work import Work, recording

GSI_LAYOUTS = ("legacy", "per-model")
CHUNK_BYTES = 256 * 1024
GSI_NAME = "gsi1"
TABLE_KEYS = ("pk", "sk")
GSI_KEYS = {GSI_NAME: ("gsi1pk", "gsi1sk")}  # plain names: the load layer registers them for unit accounting
BATCH_GET_MAX = 100
BATCH_WRITE_MAX = 25
# What an endpoint answers for an operation it does not implement (dynalite: UnknownOperationException).
OWNER_ITEM_KEY = {"pk": {"S": "HARNESS#owner"}, "sk": {"S": "TAGS"}}
UNSUPPORTED = ("UnknownOperationException", "UnrecognizedOperationException", "NotImplementedException",
               "NotImplemented", "InvalidAction")
ENTRY_RETRIES = 5
VERSION_FIELDS = ("relPath", "size", "digest", "updatedAt", "version", "chunks", "cid", "s", "fence", "del")
_code = error_code  # the one classifier (harness.aws_errors)


def _s(v: str) -> dict:
    return {"S": v}


def _n(v: int | float) -> dict:
    return {"N": str(v)}


def chunk_key(version: int, digest: str, index: int) -> str:
    return f"CHUNK#v{version}#{digest}#{index:07d}"


def _chunk_keys(meta: FileMeta) -> list[dict]:
    return [{"pk": _s(f"FILE#{meta.rel_path}"), "sk": _s(chunk_key(meta.version, meta.digest, i))}
            for i in range(max(1, -(-meta.size // CHUNK_BYTES)))]


def _chunks(data: bytes) -> list[bytes]:
    return [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]


def _num(item: dict, name: str, default: int = 0) -> int:
    v = item.get(name)
    return int(v["N"]) if v else default


class DomainState:
    """A lock item's commit state, as one read saw it: the sealed sequence and the pending commit ids."""

    def __init__(self, seq: int = 0, pending: Iterable[str] = (), nonce: str | None = None, fence: int = 0) -> None:
        self.seq, self.pending, self.nonce, self.fence = seq, frozenset(pending), nonce, fence

    @staticmethod
    def of(item: dict | None) -> DomainState:
        item = item or {}
        return DomainState(_num(item, "seq"), item.get("pending", {}).get("SS", []),
                           item.get("nonce", {}).get("S"), _num(item, "fence"))

    def sealed(self, version: dict) -> bool:
        """Is this stamped version (an item's own fields, or its ``prev``) visible to a reader in this state?"""
        cid = version.get("cid")
        return cid is None or (_num(version, "s") <= self.seq and cid["S"] not in self.pending)


def visible_version(item: dict | None, state: DomainState) -> dict | None:
    """The version of an index item a reader in ``state`` sees (its fields), or None (absent or deleted)."""
    if item is None:
        return None
    version = item if state.sealed(item) else item.get("prev", {}).get("M")
    if version is None or "del" in version:
        return None
    return version


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
            if is_condition_failed(e):
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
            if is_condition_failed(e):
                return False
            raise
        return True

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._if_holder(key, nonce, "SET expiresAtMs = :e", {":e": _n(expires_at_ms)}, work)

    def release(self, key: str, nonce: str, work: Work) -> bool:
        """Holder fields removed, not the item: its fencing counter and sequence must only ever grow."""
        return self._if_holder(key, nonce, "REMOVE nonce, expiresAtMs, holder, hostname, pid, acquiredAt, ttlMs",
                               {}, work)

    def state(self, key: str, work: Work) -> DomainState:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self.key_of(key), ConsistentRead=True)
        work.items_read += 1 if "Item" in out else 0
        return DomainState.of(out.get("Item"))


class DynamoBackend:
    name = "dynamodb"

    def __init__(self, client: Any, table: str, gsi_layout: str = "per-model", *,
                 clock: Clock | None = None, billing: str = "on-demand",
                 provisioned: tuple[int, int] = (1000, 1000), tags: dict[str, str] | None = None,
                 create: bool = True, pull_concurrency: int = 8, executor: Executor | None = None) -> None:
        if gsi_layout not in GSI_LAYOUTS:
            raise ConfigError(f"unknown GSI layout {gsi_layout!r}: choose one of {', '.join(GSI_LAYOUTS)}")
        if billing not in ("on-demand", "provisioned"):
            raise ConfigError(f"unknown billing mode {billing!r}: choose on-demand or provisioned")
        self.client, self.table, self.gsi_layout = client, check_table_name(table), gsi_layout
        self.clock = clock or SystemClock()
        self.billing, self.provisioned, self.tags, self.create = billing, provisioned, tags or {}, create
        self.lock_store = DynamoLockStore(client, table)
        self._known_partitions: set[str] = set()
        # Concurrent reads and conditional writes run on ``executor``: threads by default; the caller passes a
        # greenlet pool where threads are gevent's (a killed Locust user must not corrupt a thread pool's locks).
        self._pool = executor or ThreadPoolExecutor(max_workers=pull_concurrency, thread_name_prefix="ddb-pool")
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

    @staticmethod
    def _file_key(rel: str) -> dict:
        return {"pk": _s(f"FILE#{rel}"), "sk": _s("META")}

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

    def _parallel(self, fn: Callable[[Any, Work], Any], items: Sequence[Any], work: Work) -> list[Any]:
        """``fn(item, work)`` for every item on the pool, each counting into its own Work (added to ``work``).

        Waits for every call before raising the first failure, so a caller that
        cleans up knows the outcome of everything it started.
        """
        def run(x: Any) -> tuple[Any, Work, BaseException | None]:
            w = Work()
            try:
                with recording(w):
                    return fn(x, w), w, None
            except Exception as e:  # noqa: BLE001 - re-raised below, after every call has finished
                return None, w, e

        if len(items) <= 1:
            outcomes = [run(x) for x in items]
        else:
            futures = [self._pool.submit(contextvars.copy_context().run, run, x) for x in items]
            outcomes = [f.result() for f in futures]
        errors = []
        for _, w, e in outcomes:
            work.add(w)
            if e is not None:
                errors.append(e)
        if errors:  # a fencing refusal says more than the throttles it may have caused
            raise next((e for e in errors if isinstance(e, FencedError)), errors[0])
        return [r for r, _, _ in outcomes]

    def _get_items(self, rels: Sequence[str], work: Work) -> dict[str, dict]:
        """The raw index items of ``rels`` (strongly consistent), 100 keys a BatchGetItem."""
        found: dict[str, dict] = {}
        for i in range(0, len(rels), BATCH_GET_MAX):
            keys = [self._file_key(p) for p in rels[i:i + BATCH_GET_MAX]]
            pending: dict = {self.table: {"Keys": keys, "ConsistentRead": True}}
            attempt = 0
            while pending:
                with recording(work):
                    out = self.client.batch_get_item(RequestItems=pending)
                items = out.get("Responses", {}).get(self.table, [])
                work.items_read += len(items)
                for x in items:
                    found[x["relPath"]["S"]] = x
                pending = out.get("UnprocessedKeys") or {}
                if pending:
                    attempt += 1
                    self.clock.sleep(self._rng.uniform(0, min(5.0, 0.05 * 2 ** attempt)))
        return found

    def _get_item(self, rel: str, work: Work) -> dict | None:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self._file_key(rel), ConsistentRead=True)
        work.items_read += 1 if "Item" in out else 0
        return out.get("Item")

    def _resolve(self, items: Iterable[dict], work: Work, states: dict[str, DomainState] | None = None
                 ) -> list[FileMeta]:
        """The versions readers see of these index items (each judged by its own lock item's state)."""
        states = {} if states is None else states
        out = []
        for item in items:
            dom = item.get("dom", {}).get("S")
            if dom is not None and dom not in states:
                states[dom] = self.lock_store.state(dom, work)
            version = visible_version(item, states.get(dom) if dom else DomainState())
            if version is not None:
                out.append(self.meta_of(version))
        return out

    # ---- content ---------------------------------------------------------------
    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work) -> None:
        reqs = []
        for rel, data in files.items():
            for i, chunk in enumerate(_chunks(data)):
                m = metas[rel]
                item = {"pk": _s(f"FILE#{rel}"), "sk": _s(chunk_key(m.version, m.digest, i)), "data": {"B": chunk}}
                work.items_written += 1
                reqs.append({"PutRequest": {"Item": item}})
        self._batch_write(reqs, work)

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        """The file's chunks by key (their count follows from its size): a GetItem, or BatchGetItems."""
        keys = _chunk_keys(meta)
        with recording(work):
            if len(keys) == 1:
                out = self.client.get_item(TableName=self.table, Key=keys[0], ConsistentRead=True)
                work.items_read += 1 if "Item" in out else 0
                return out["Item"]["data"]["B"] if "Item" in out else b""
            parts: dict[str, bytes] = {}
            for i in range(0, len(keys), BATCH_GET_MAX):
                pending: dict = {self.table: {"Keys": keys[i:i + BATCH_GET_MAX], "ConsistentRead": True}}
                attempt = 0
                while pending:
                    out = self.client.batch_get_item(RequestItems=pending)
                    got = out.get("Responses", {}).get(self.table, [])
                    work.items_read += len(got)
                    parts.update({x["sk"]["S"]: x["data"]["B"] for x in got})
                    pending = out.get("UnprocessedKeys") or {}
                    if pending:
                        attempt += 1
                        self.clock.sleep(self._rng.uniform(0, min(5.0, 0.05 * 2 ** attempt)))
            return b"".join(parts[k] for k in sorted(parts))

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        meta = FileMeta(rel_path, len(data), FileMeta.digest_of(data), now_ms(self.clock), 1)
        self.put_content({rel_path: data}, {rel_path: meta}, work)
        item = self.meta_item(None, meta, indexed=False)
        self._batch_write([{"PutRequest": {"Item": item}}], work)

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        """The visible index entries of ``paths`` (one BatchGetItem per 100, one read of their lock item)."""
        return {m.rel_path: m for m in self._resolve(self._get_items(list(paths), work).values(), work)}

    # ---- index ---------------------------------------------------------------
    def _state_key(self, namespace: str | None, sk: str) -> dict:
        return {"pk": _s(f"SYNCSTATE#{namespace or 'global'}"), "sk": _s(sk)}

    def _registry_key(self, namespace: str | None) -> dict:
        return {"pk": _s("PARTITIONS#registry"), "sk": _s(f"LIST#{namespace}" if namespace else "LIST")}

    def default_lock_key(self, namespace: str | None) -> str:
        """The key a namespace's commits are sequenced on when the caller does not say (namespace scope)."""
        return f".locks/{namespace}.lock" if namespace else self.datastore_lock_key()

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

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, fencing: bool = True, cid: str | None = None) -> CommitResult:
        with recording(work):
            self._register(namespace, entries, work)
            if not fencing:
                return self._commit_unfenced(namespace, entries, [], grant, work, cid)
            return _FencedCommit(self, namespace, grant, cid, base_seq, work).run(entries, [])

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     fencing: bool = True, cid: str | None = None) -> CommitResult:
        """Remove entries (a fenced commit of tombstones, then the tombstones go), then their content."""
        with recording(work):
            if not fencing:
                return self._commit_unfenced(namespace, [], metas, grant, work, cid)
            return _FencedCommit(self, namespace, grant, cid, None, work).run([], metas)

    def _commit_unfenced(self, namespace: str | None, entries: Sequence[FileMeta], removals: Sequence[FileMeta],
                         grant: LockGrant, work: Work, cid: str | None) -> CommitResult:
        """swamp's commit: the entries (or deletions) in one unconditional batch, then the sequence bumped."""
        reqs = [{"PutRequest": {"Item": self.meta_item(namespace, e)}} for e in entries]
        reqs += [{"DeleteRequest": {"Key": self._file_key(m.rel_path)}} for m in removals]
        reqs += [{"DeleteRequest": {"Key": k}} for m in removals for k in _chunk_keys(m)]
        self._batch_write(reqs, work)
        work.index_entries_written += len(entries)
        work.items_written += len(entries)
        out = self.client.update_item(
            TableName=self.table, Key=DynamoLockStore.key_of(grant.key),
            UpdateExpression="SET #s = if_not_exists(#s, :zero) + :one", ExpressionAttributeNames={"#s": "seq"},
            ExpressionAttributeValues={":zero": _n(0), ":one": _n(1)}, ReturnValues="UPDATED_NEW")
        seq = int(out["Attributes"]["seq"]["N"])
        return CommitResult(seq, seq - 1, cid or uuid.uuid4().hex[:16], grant.key)

    def commit_seq(self, lock_key: str, work: Work) -> int:
        """The sealed commit sequence of the commits made under ``lock_key``."""
        return self.lock_store.state(lock_key, work).seq

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

    def _query(self, kwargs: dict, work: Work) -> list[dict]:
        """Run a paginated GSI query; every item returned counts as read."""
        items: list[dict] = []
        kwargs = dict(kwargs, TableName=self.table, IndexName=GSI_NAME)
        while True:
            with recording(work):
                out = self.client.query(**kwargs)
            work.queries += 1
            got = out.get("Items", [])
            work.items_read += len(got)
            items.extend(got)
            if "LastEvaluatedKey" not in out:
                return items
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def _query_partition(self, part: str, since_ms: int, work: Work) -> list[dict]:
        return self._query({
            "KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :s",
            "ExpressionAttributeValues": {":p": _s(f"FILE#{part}"), ":s": _s(f"{since_ms + 1:013d}")},
        }, work)

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             last_seq: int | None, work: Work, *, lock_key: str | None = None,
             cursor: dict | None = None) -> PullResult:
        """Entries changed after ``since_ms`` as readers see them (sealed versions only)."""
        with recording(work):
            scoped = partitions is not None
            key = lock_key or self.default_lock_key(namespace)
            state = self.lock_store.state(key, work)
            if not scoped and last_seq is not None and state.seq == last_seq:
                return PullResult([], state.seq, short_cut=True)
            if self.gsi_layout == "legacy":
                # swamp's queryAllFileMeta: read every file item, filter on the client.
                everything = self._query({"KeyConditionExpression": "gsi1pk = :p",
                                          "ExpressionAttributeValues": {":p": _s("FILE")}}, work)
                prefixes = tuple(f"{p}/" for p in partitions) if scoped else None
                root = f"{namespace}/" if namespace else ""
                items = [i for i in everything if i["relPath"]["S"].startswith(root)
                         and (prefixes is None or _in_partitions(i["relPath"]["S"], namespace, prefixes))]
            else:
                parts = list(partitions) if scoped else self.partitions(namespace, work)
                items = [i for got in self._parallel(lambda p, w: self._query_partition(p, since_ms, w), parts, work)
                         for i in got]
            metas = self._resolve(items, work, {key: state})
            return PullResult([m for m in metas if m.updated_at_ms > since_ms], state.seq)

    def index_snapshot(self, work: Work) -> dict:
        """Every visible index entry with the digest of the content it points at (a full Scan)."""
        locks: dict[str, DomainState] = {}
        metas: list[dict] = []
        chunks: dict[tuple[str, int], list[tuple[str, bytes]]] = {}
        kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        with recording(work):
            while True:
                out = self.client.scan(**kwargs)
                for item in out.get("Items", []):
                    pk, sk = item["pk"]["S"], item["sk"]["S"]
                    if pk.startswith("LOCK#"):
                        locks[pk[5:]] = DomainState.of(item)
                    elif pk.startswith("FILE#") and sk == "META" and "gsi1pk" in item:
                        metas.append(item)
                    elif pk.startswith("FILE#") and sk.startswith("CHUNK#v"):
                        ver, digest, idx = sk[7:].split("#", 2)
                        chunks.setdefault((pk[5:], int(ver), digest), []).append((idx, item["data"]["B"]))
                work.items_read += len(out.get("Items", []))
                if "LastEvaluatedKey" not in out:
                    break
                kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
        entries = []
        for item in metas:
            dom = item.get("dom", {}).get("S")
            version = visible_version(item, locks.get(dom, DomainState()) if dom else DomainState())
            if version is None:
                continue
            m = self.meta_of(version)
            parts = chunks.get((m.rel_path, m.version, m.digest))
            content = b"".join(b for _, b in sorted(parts)) if parts is not None else None
            entries.append({"path": m.rel_path, "version": m.version, "digest": m.digest, "size": m.size,
                            "content_digest": FileMeta.digest_of(content) if content is not None else None,
                            "cid": version.get("cid", {}).get("S"), "fence": _num(version, "fence") or None})
        domains = {k: {"seq": d.seq, "pending": sorted(d.pending), "fence": d.fence} for k, d in locks.items()}
        return {"backend": self.name, "table": self.table, "domains": domains, "entries": entries}

    def count_items(self) -> int:
        """Every item in the table (tests and stand-in checks only: a full Scan)."""
        n, kwargs = 0, {"TableName": self.table, "Select": "COUNT"}
        while True:
            out = self.client.scan(**kwargs)
            n += out["Count"]
            if "LastEvaluatedKey" not in out:
                return n
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


class _FencedCommit:
    """One fenced commit: claim, conditional entry writes, seal; on failure, undo only its own writes.

    Every write it may have made is registered (with what it replaced) before
    it is sent, so a failure at any point knows exactly what to undo.
    """

    def __init__(self, be: DynamoBackend, namespace: str | None, grant: LockGrant, cid: str | None,
                 base_seq: int | None, work: Work) -> None:
        self.be, self.ns, self.grant, self.base_seq, self.work = be, namespace, grant, base_seq, work
        self.cid = cid or uuid.uuid4().hex[:16]
        self.lock_key = DynamoLockStore.key_of(grant.key)
        self.state = DomainState()
        self.sent: dict[str, dict | None] = {}  # path -> the version visible before our write (None: none)
        self.unknown: set[str] = set()  # paths whose write may have landed although we saw an error
        self.replaced: dict[str, dict] = {}  # removals: path -> the version our tombstone hid
        self.claimed = False
        self.abandoned = False  # interrupted mid-write: calls it started may still land after the undo

    def _fenced(self, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {self.grant.key} (fence {self.grant.fence}) {why}")

    def _check_live(self) -> None:
        if self.grant.lost:
            raise LockLostError(f"commit refused: lock {self.grant.key} (fence {self.grant.fence}) was lost")

    def run(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta]) -> CommitResult:
        self._check_live()
        self._claim()
        try:
            rels = [m.rel_path for m in upserts] + [m.rel_path for m in removals]
            current = self.be._get_items(rels, self.work)
            jobs = [(m, False) for m in upserts] + [(m, True) for m in removals]
            self.be._parallel(lambda job, w: self._write(job[0], job[1], current.get(job[0].rel_path), w),
                              jobs, self.work)
            self.work.index_entries_written += len(upserts)
            self.work.items_written += len(self.sent)
            self._check_live()
        except BaseException as e:
            if not isinstance(e, Exception):  # interrupted (a killed Locust user): writes it started may still
                self.abandoned = True  # land, so its id stays pending and they stay invisible
            self._undo()
            raise
        try:
            seq = self._seal()
        except BaseException as e:
            # Undo only a seal known not to have landed; if it may have (a lost answer, an interrupted call),
            # leave everything: sealed, it is whole; not sealed, our id stays pending and it stays invisible.
            if isinstance(e, Exception) and not outcome_unknown(e):
                self._undo()
            raise
        if self.replaced:
            self._drop_tombstones()
        return CommitResult(seq, self.state.seq, self.cid, self.grant.key)

    def _claim(self) -> None:
        cond, values = "nonce = :n", {":n": _s(self.grant.nonce), ":c": {"SS": [self.cid]}}
        if self.base_seq is not None:
            cond += " AND attribute_not_exists(seq)" if self.base_seq == 0 else " AND seq = :b"
            if self.base_seq:
                values[":b"] = _n(self.base_seq)
        try:
            out = self.be.client.update_item(TableName=self.be.table, Key=self.lock_key,
                                             UpdateExpression="ADD pending :c", ConditionExpression=cond,
                                             ExpressionAttributeValues=values, ReturnValues="ALL_NEW")
        except ClientError as e:
            if not is_condition_failed(e):
                raise
            now = self.be.lock_store.state(self.grant.key, self.work)
            if now.nonce != self.grant.nonce:
                raise self._fenced("is no longer held") from e
            raise self._fenced(f"was held, but the index moved since this holder pulled it "
                               f"(sequence {now.seq}, pulled at {self.base_seq})") from e
        self.claimed = True
        self.state = DomainState.of(out["Attributes"])

    def _write(self, meta: FileMeta, remove: bool, observed: dict | None, work: Work) -> None:
        """Write one entry (or its tombstone), conditioned on what we read; re-read and retry on a race."""
        rel = meta.rel_path
        for _ in range(ENTRY_RETRIES):
            if observed is not None and observed.get("cid", {}).get("S") == self.cid:
                return  # our own write landed (a retried request): done
            if observed is not None and _num(observed, "fence") > self.grant.fence:
                raise self._fenced(f"is stale: fence {_num(observed, 'fence')} already wrote {rel}")
            before = visible_version(observed, self.state)
            if remove and before is None:
                return  # nothing visible to delete
            item = self._item(self.be.meta_of(before) if remove else meta, before, remove)
            if observed is None:
                cond, values = "attribute_not_exists(pk)", None
            elif "cid" in observed:
                cond, values = "cid = :oc", {":oc": observed["cid"]}
            else:
                cond, values = "attribute_not_exists(cid)", None
            self.sent[rel] = before
            kwargs: dict[str, Any] = {"TableName": self.be.table, "Item": item, "ConditionExpression": cond}
            if values:
                kwargs["ExpressionAttributeValues"] = values
            try:
                self.be.client.put_item(**kwargs)
            except ClientError as e:
                if not is_condition_failed(e):
                    if outcome_unknown(e):
                        self.unknown.add(rel)
                    raise
                observed = self.be._get_item(rel, work)
                continue
            except Exception as e:
                if outcome_unknown(e):
                    self.unknown.add(rel)
                raise
            if remove:
                self.replaced[rel] = before  # type: ignore[assignment]
            return
        raise self._fenced(f"could not write {rel}: it kept changing under the commit")

    def _item(self, meta: FileMeta, before: dict | None, remove: bool) -> dict:
        item = self.be.meta_item(self.ns, meta, self.grant.fence)
        item.update(cid=_s(self.cid), s=_n(self.state.seq + 1), dom=_s(self.grant.key))
        if remove:
            item["del"] = {"BOOL": True}
        if before is not None:
            item["prev"] = {"M": {k: v for k, v in before.items() if k in VERSION_FIELDS}}
        return item

    def _seal(self) -> int:
        try:
            out = self.be.client.update_item(
                TableName=self.be.table, Key=self.lock_key,
                UpdateExpression="SET #s = if_not_exists(#s, :zero) + :one DELETE pending :c",
                ConditionExpression="nonce = :n AND contains(pending, :cs)", ExpressionAttributeNames={"#s": "seq"},
                ExpressionAttributeValues={":n": _s(self.grant.nonce), ":c": {"SS": [self.cid]}, ":cs": _s(self.cid),
                                           ":zero": _n(0), ":one": _n(1)},
                ReturnValues="UPDATED_NEW")
        except ClientError as e:
            if not is_condition_failed(e):
                raise
            now = self.be.lock_store.state(self.grant.key, self.work)
            if now.nonce == self.grant.nonce and self.cid not in now.pending:  # a retried seal that had landed
                return now.seq
            raise self._fenced("is no longer held: the commit was not sealed") from e
        return int(out["Attributes"]["seq"]["N"])

    def _undo(self) -> None:
        """Put back what our writes replaced (only where our write is still there); then drop our claim."""
        if not self.claimed:
            return
        undo_work = Work()
        try:
            self.be._parallel(lambda rel, w: self._restore(rel, w), list(self.sent), undo_work)
            if not self.unknown and not self.abandoned:  # nothing of ours can still land: drop the pending id
                self.be.client.update_item(TableName=self.be.table, Key=self.lock_key,
                                           UpdateExpression="DELETE pending :c",
                                           ExpressionAttributeValues={":c": {"SS": [self.cid]}})
        except Exception:  # noqa: BLE001 - what is left stays invisible (our id is still pending)
            pass
        finally:
            self.work.add(undo_work)

    def _restore(self, rel: str, work: Work) -> None:
        before = self.sent[rel]
        mine = {":mine": _s(self.cid)}
        try:
            if before is None:
                self.be.client.delete_item(TableName=self.be.table, Key=self.be._file_key(rel),
                                           ConditionExpression="cid = :mine", ExpressionAttributeValues=mine)
            else:
                item = self.be.meta_item(self.ns, self.be.meta_of(before))
                item.update({k: v for k, v in before.items() if k in VERSION_FIELDS})
                if "cid" in before:
                    item["dom"] = _s(self.grant.key)
                self.be.client.put_item(TableName=self.be.table, Item=item, ConditionExpression="cid = :mine",
                                        ExpressionAttributeValues=mine)
        except ClientError as e:
            if not is_condition_failed(e):  # refused: a newer write replaced ours, nothing to undo
                self.unknown.add(rel)
                raise

    def _drop_tombstones(self) -> None:
        """After the seal: remove our tombstones and the content of what they deleted (best effort)."""
        w = Work()
        try:
            def drop(rel: str, work: Work) -> None:
                try:
                    self.be.client.delete_item(TableName=self.be.table, Key=self.be._file_key(rel),
                                               ConditionExpression="cid = :mine",
                                               ExpressionAttributeValues={":mine": _s(self.cid)})
                except ClientError as e:
                    if not is_condition_failed(e):
                        raise
            self.be._parallel(drop, list(self.replaced), w)
            gone = [self.be.meta_of(v) for v in self.replaced.values()]
            self.be._batch_write([{"DeleteRequest": {"Key": k}} for m in gone for k in _chunk_keys(m)], w)
        except Exception:  # noqa: BLE001 - a tombstone left behind reads as deleted; content left is unreferenced
            pass
        finally:
            self.work.add(w)


def _in_partitions(rel: str, namespace: str | None, prefixes: tuple[str, ...]) -> bool:
    part = partition_of(rel, namespace)
    return part is not None and f"{part}/" in prefixes
