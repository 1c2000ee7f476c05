"""DynamoDB backend: swamp's DynamoDB extension with both GSI layouts, on the items of ``items.py``.

The data path: content chunks, the catalog export, lookups, and the commits of
``commit.py``. Pulls are ``pull.py``; table provisioning is ``table.py``; lock
writes are ``locks.py``.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed
from harness.core.clock import Clock, SystemClock, now_ms
from harness.core.work import Work, for_fencing, recording
from harness.datastore.backends.base import AfterRelease, CommitResult, FileMeta, PullResult, partition_of
from harness.datastore.backends.dynamodb.choose import bookkeeping, choose
from harness.datastore.backends.dynamodb.claims import Claims
from harness.datastore.backends.dynamodb.commit import registry_update
from harness.datastore.backends.dynamodb.cursor import DynamoCursor
from harness.datastore.backends.dynamodb.items import (
    BATCH_GET_MAX,
    BATCH_WRITE_MAX,
    BLOB_SK,
    GSI_LAYOUTS,
    META_SK,
    MODEL_FENCE,
    PER_MODEL,
    DomainState,
    blob_chunk_sk,
    chunk_count,
    chunk_key,
    chunk_keys,
    chunk_owner,
    chunks,
    file_key,
    lock_item_key,
    meta_of,
    n_,
    registry_key,
    resolve,
    s_,
)
from harness.datastore.backends.dynamodb.pull import DynamoReads
from harness.datastore.backends.dynamodb.swamp_pull import fetch_chunks, read_all
from harness.datastore.backends.dynamodb.table import DynamoTable
from harness.datastore.errors import ConfigError, ContentMissingError, FencedError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import Paths, check_table_name
from harness.datastore.variant import Variant


class DynamoBackend(DynamoReads, AfterRelease):
    name = "dynamodb"

    def __init__(self, client: Any, table: str, gsi_layout: str = "per-model", *,
                 clock: Clock | None = None, billing: str = "on-demand",
                 provisioned: tuple[int, int] = (1000, 1000), tags: dict[str, str] | None = None,
                 create: bool = True, pull_concurrency: int = 8, executor: Executor | None = None,
                 variant: Variant | None = None) -> None:
        if gsi_layout not in GSI_LAYOUTS:
            raise ConfigError(f"unknown GSI layout {gsi_layout!r}: choose one of {', '.join(GSI_LAYOUTS)}")
        self.variant = variant = variant or Variant()
        modes = choose(variant)  # the one choice of this backend's system (choose.py)
        self.table, self.gsi_layout = check_table_name(table), gsi_layout
        self.registry_adds = variant.registry_adds
        self.clock = clock or SystemClock()
        self._rng = random.Random()
        # swamp's retryable wraps its data path; its lock calls the client directly (retry.py)
        self.retrying = modes.retries
        self.client = modes.retries.client(client, self.clock, self._rng)
        self.provisioning = DynamoTable(client, table, billing=billing, provisioned=provisioned, tags=tags,
                                        create=create)
        # a run that is swamp's own (fencing = false, bookkeeping = "swamp"): swamp's lock, commit and reads, none of
        # the harness's own writes, nothing read strongly consistently (swamp_lock.py, swamp_commit.py, swamp_pull.py)
        self.own = modes.own
        self.committer, self.pulling = modes.committer, modes.pulling
        self.lock_store = modes.lock_store(client, table)
        self.claims = Claims()
        self.claims.keep = self.lock_store.keep  # ids the release must leave pending: one set for both
        self.bookkeeping = bookkeeping(variant, self)
        # Concurrent reads and writes run on ``executor``: threads by default; the caller passes a greenlet pool
        # where threads are gevent's (a killed Locust user must not corrupt a thread pool's locks).
        self._pool = executor or ThreadPoolExecutor(max_workers=pull_concurrency, thread_name_prefix="ddb-pool")

    # ---- the table (provisioning lives in table.py) ----------------------------
    @property
    def notes(self) -> list[str]:
        return self.provisioning.notes

    def describe(self) -> dict | None:
        return self.provisioning.describe()

    def ensure(self) -> None:
        self.provisioning.ensure()

    def owner_marker(self) -> dict[str, str]:
        return self.provisioning.owner_marker()

    def count_items(self) -> int:
        return self.provisioning.count_items()

    def datastore_lock_key(self) -> str:
        return f"dynamodb://{self.table}"

    def global_lock_key(self, namespace: str | None) -> str:
        """The global lock of ``global_lock = "one-item"`` (a stored copy of core, 68a1128, in no branch): the
        datastore path alone; with a namespace ``.datastore.lock``, since the extension's ``createDynamoLock`` takes
        ``lockKey`` alone: every namespace's global lock is this one item. (swamp-club/swamp 06b6147 passes
        ``.locks/<ns>.lock``: ``profiles/two_phase.py: commit_lock_key``.)"""
        return ".datastore.lock" if namespace else self.datastore_lock_key()

    def default_lock_key(self, namespace: str | None) -> str:
        """The key a namespace's commits are sequenced on when the caller does not say (namespace scope)."""
        return f".locks/{namespace}.lock" if namespace else self.datastore_lock_key()

    # ---- request helpers ---------------------------------------------------------
    def _backoff(self, attempt: int, left: int) -> None:
        """Before resending a batch's unprocessed items: the harness's jittered schedule, or swamp's (no jitter,
        8 tries in all, then the batch fails with ``left`` items unsent): ``retry.py``."""
        self.retrying.backoff(self.clock, self._rng, attempt, left)

    def batch_write(self, requests: list[dict], work: Work) -> None:
        """BatchWriteItem, 25 a call; unprocessed items are sent again after a jittered backoff."""
        for i in range(0, len(requests), BATCH_WRITE_MAX):
            pending = {self.table: requests[i:i + BATCH_WRITE_MAX]}
            attempt = 0
            while pending:
                with recording(work):
                    out = self.client.batch_write_item(RequestItems=pending)
                pending = out.get("UnprocessedItems") or {}
                if pending:
                    attempt += 1
                    self._backoff(attempt, len(pending.get(self.table, [])))

    def batch_get(self, keys: list[dict], work: Work) -> list[dict]:
        """BatchGetItem, 100 keys a call, strongly consistent (a swamp-own run's: eventually, as swamp's)."""
        found: list[dict] = []
        for i in range(0, len(keys), BATCH_GET_MAX):
            pending: dict = {self.table: {"Keys": keys[i:i + BATCH_GET_MAX], "ConsistentRead": not self.own}}
            attempt = 0
            while pending:
                with recording(work):
                    out = self.client.batch_get_item(RequestItems=pending)
                got = out.get("Responses", {}).get(self.table, [])
                work.items_read += len(got)
                found += got
                pending = out.get("UnprocessedKeys") or {}
                if pending:
                    attempt += 1
                    self._backoff(attempt, len(pending.get(self.table, {}).get("Keys", [])))
        return found

    def parallel(self, fn: Callable[[Any, Work], Any], items: Sequence[Any], work: Work) -> list[Any]:
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

    def collect(self, cursor: DynamoCursor, work: Work, *, content: bool = False,
                keep: set[tuple[str, str]] | frozenset = frozenset()) -> None:
        """Delete the index items (and with ``content`` the chunks) the cursor knows are garbage, but ``keep``,
        in shared batches. Best effort: what fails is kept for next time."""
        index = DynamoCursor.take(cursor.garbage)
        chunks_ = [k for k in DynamoCursor.take(cursor.content_garbage) if (k["pk"]["S"], k["sk"]["S"]) not in keep] \
            if content else []
        if not index and not chunks_:
            return
        try:
            self.batch_write([{"DeleteRequest": {"Key": k}} for k in [*index, *chunks_]], work)
        except Exception:  # noqa: BLE001 - superseded items are invisible; they only take space until next time
            DynamoCursor.add(cursor.garbage, index)
            DynamoCursor.add(cursor.content_garbage, chunks_)

    def fence_model(self, namespace: str | None, partition: str, grant: LockGrant, cursor: dict | None,
                    work: Work, *, lock_key: str | None = None) -> None:
        """A per-model lock's grant (two-phase, fenced) records its fence on the commit domain's lock item
        (``m:<partition>``): from here on the seal of a commit of that model by an older holder is refused, in
        the same conditional write that seals it (a check made earlier, at the registry write, let a holder
        frozen between the two seal after a newer holder of its model had pulled)."""
        key = lock_key or self.global_lock_key(namespace)
        try:
            with for_fencing(work):  # (swamp's model lock fences nothing)
                self.client.update_item(TableName=self.table, Key=lock_item_key(key),
                                        UpdateExpression="SET #m = :f",
                                        ConditionExpression="attribute_not_exists(#m) OR #m < :f",
                                        ExpressionAttributeNames={"#m": f"{MODEL_FENCE}{partition}"},
                                        ExpressionAttributeValues={":f": n_(grant.fence)})
        except ClientError as e:
            if is_condition_failed(e):
                raise FencedError(f"lock {grant.key} (fence {grant.fence}) is stale: a newer holder of the model "
                                  f"was granted first") from e
            raise

    def partition_items(self, namespace: str | None, partitions: Sequence[str], removals: Sequence[FileMeta],
                        work: Work) -> list[dict]:
        """The keys of every index item in these partitions (a prune deletes them all after its seal).

        ``per-model``: one GSI Query per partition. ``legacy`` has no partition of its own in the GSI: one
        base-table Query per pruned path.
        """
        if not partitions:
            return []
        if self.gsi_layout in PER_MODEL:
            got = self.parallel(lambda p, w: self._query_partition(p, -1, True, w), list(partitions), work)
        else:  # the pruned paths, and each model's definition (its tombstone is left from the model's delete)
            gone = set(partitions)
            rels = {m.rel_path for m in removals if partition_of(m.rel_path, namespace) in gone}
            rels |= {Paths(namespace).definition(*p.split("/")[-2:]) for p in gone}
            got = self.parallel(lambda r, w: self._versions_of(r, w), sorted(rels), work)
        return [{"pk": i["pk"], "sk": i["sk"]} for items in got for i in items]

    def forget(self, namespace: str | None, partitions: Sequence[str], seq: int, work: Work, *,
               remove: dict[str, list[str]] | None = None) -> bool:
        """Remove pruned partitions from the registry (after their prune sealed), with ``remove``, their records;
        False if that failed (their prune's sealed record says they are gone: readers drop them all the same)."""
        if self.gsi_layout not in PER_MODEL:
            return True  # legacy readers read everything: a path they knew that is gone is gone
        try:
            for update, cond, names, values in registry_update(set(), partitions, seq, conditional=True,
                                                               remove=remove):
                with recording(work):
                    self.client.update_item(TableName=self.table, Key=registry_key(namespace), UpdateExpression=update,
                                            ConditionExpression=cond, ExpressionAttributeNames=names,
                                            ExpressionAttributeValues=values)
        except Exception:  # noqa: BLE001 - the partitions stay listed: readers still see their tombstones
            return False
        return True

    def bury(self, doomed: list[dict], tombstones: list[dict], work: Work) -> None:
        """Delete a pruned partition's items, then (only if every one went) the prune's own tombstones."""
        try:
            self.batch_write([{"DeleteRequest": {"Key": k}} for k in doomed], work)
            if tombstones:
                self.batch_write([{"DeleteRequest": {"Key": k}} for k in tombstones], work)
        except Exception:  # noqa: BLE001 - a tombstone left behind hides what is left; it only takes space
            pass

    # ---- content ---------------------------------------------------------------
    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work, *,
                    cursor: dict | None = None, concurrency: int = 1) -> None:
        """Upload the files' chunks, and delete the chunks the worker's earlier commits superseded.

        One file after another, their chunks and the garbage in shared batches of
        25; with ``concurrency`` > 1 (swamp writes 10 files at a time) that many
        files at once, each in batches of its own. A swamp-own run writes nothing here: swamp's commit writes each
        file's chunks beside its entry (``swamp_commit.py``), so the content is held for it.
        """
        if self.own:  # (its runs are unfenced: the datastore refuses a fenced one on it)
            cur_ = DynamoCursor.of(cursor)
            cur_.own_content, cur_.own_at = dict(files), max(1, concurrency)
            return
        per_file = []
        for rel, data in files.items():
            m = metas[rel]
            reqs = [{"PutRequest": {"Item": {"pk": s_(f"FILE#{rel}"),
                                             "sk": s_(chunk_key(m.version, m.digest, i, m.content_id)),
                                             "data": {"B": chunk}}}} for i, chunk in enumerate(chunks(data))]
            work.items_written += len(reqs)
            per_file.append(reqs)
        cur = DynamoCursor.of(cursor) if cursor is not None else None
        garbage = DynamoCursor.take(cur.content_garbage) if cur else []
        mine = {(r["PutRequest"]["Item"]["pk"]["S"], r["PutRequest"]["Item"]["sk"]["S"]) for f in per_file for r in f}
        dels = [{"DeleteRequest": {"Key": k}} for k in garbage if (k["pk"]["S"], k["sk"]["S"]) not in mine]
        try:
            if concurrency <= 1:
                self.batch_write([r for f in per_file for r in f] + dels, work)
            else:
                for i in range(0, len(per_file), concurrency):
                    self.parallel(lambda reqs, w: self.batch_write(reqs, w), per_file[i:i + concurrency], work)
                self.batch_write(dels, work)
        except Exception:
            if cur is not None:
                DynamoCursor.add(cur.content_garbage, garbage)
            raise

    def get_contents(self, metas: Sequence[FileMeta], work: Work, *, concurrency: int = 1) -> None:
        """Download these files' content: one after another, or ``concurrency`` at a time (in fixed batches)."""
        for i in range(0, len(metas), max(1, concurrency)):
            self.parallel(lambda m, w: self.get_content(m, w), list(metas[i:i + max(1, concurrency)]), work)

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        """The file's chunks by key (their count follows from its size): a GetItem, or BatchGetItems (a swamp-own
        run: a Query of the chunks' prefix, ``swamp_pull.fetch_chunks``)."""
        if self.own:
            return fetch_chunks(self, meta, work)
        keys = chunk_keys(meta)
        with recording(work):
            if len(keys) == 1:
                out = self.client.get_item(TableName=self.table, Key=keys[0], ConsistentRead=True)
                if "Item" not in out:
                    raise ContentMissingError(f"content of {meta.rel_path} (version {meta.version}) is missing")
                work.items_read += 1
                return out["Item"]["data"]["B"]
            parts = {x["sk"]["S"]: x["data"]["B"] for x in self.batch_get(keys, work)}
            if len(parts) < len(keys):
                raise ContentMissingError(f"content of {meta.rel_path} (version {meta.version}) is missing "
                                          f"{len(keys) - len(parts)} of its {len(keys)} chunks")
            return b"".join(parts[k] for k in sorted(parts))

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        """A file outside the index (the catalog export), rewritten in place: its chunks, then its head.

        The head's old value says how many chunks the previous version had, so
        a shrinking blob leaves none behind.
        """
        parts = chunks(data)
        with recording(work):
            self.batch_write([{"PutRequest": {"Item": {**file_key(rel_path, blob_chunk_sk(i)), "data": {"B": c}}}}
                              for i, c in enumerate(parts)], work)
            out = self.client.put_item(TableName=self.table, ReturnValues="ALL_OLD", Item={
                **file_key(rel_path, BLOB_SK), "size": n_(len(data)), "chunks": n_(len(parts)),
                "digest": s_(FileMeta.digest_of(data)), "updatedAt": n_(now_ms(self.clock))})
            before = int(out.get("Attributes", {}).get("chunks", {}).get("N", 0))
            if before > len(parts):
                self.batch_write([{"DeleteRequest": {"Key": file_key(rel_path, blob_chunk_sk(i))}}
                                  for i in range(len(parts), before)], work)
        work.items_written += len(parts) + 1

    # ---- reading the index ----------------------------------------------------------
    def _states(self, items: Iterable[dict], states: dict[str, DomainState], work: Work) -> dict[str, DomainState]:
        """The lock-item state of every commit domain these items belong to (read once each)."""
        for item in items:
            dom = item.get("dom", {}).get("S")
            if dom is not None and dom not in states:
                states[dom] = self.lock_store.state(dom, work)
        return states

    def _versions_of(self, rel: str, work: Work) -> list[dict]:
        """Every index item of one path (its ``META`` and ``V#...`` items; content chunks sort before them)."""
        items: list[dict] = []
        kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True,
                                  "KeyConditionExpression": "pk = :p AND sk >= :m",
                                  "ExpressionAttributeValues": {":p": s_(f"FILE#{rel}"), ":m": s_(META_SK)}}
        while True:
            with recording(work):
                out = self.client.query(**kwargs)
            items += out.get("Items", [])
            work.items_read += len(out.get("Items", []))
            if "LastEvaluatedKey" not in out:
                return items
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        """The entries of ``paths`` as readers see them (fenced: a Query per path; swamp's scoped push: its
        in-place entries, one BatchGetItem per 100 paths): the backend's pull rules say which."""
        with recording(work):
            items = self.pulling.lookup_items(self, paths, work)
            res = resolve(items, self._states(items, {}, work))
        return {rel: v.meta for rel, v in res.visible.items()}

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
             lock_key: str | None = None, cursor: dict | None = None,
             grant: LockGrant | None = None) -> PullResult:
        """What changed since the worker's cursor (``pull.py``; a swamp-own run's pull: ``swamp_pull.py``)."""
        return self.pulling.pull(self, namespace, since_ms, partitions, work, lock_key=lock_key, cursor=cursor,
                                 grant=grant)

    def commit_seq(self, lock_key: str, work: Work) -> int:
        """The sealed commit sequence of the commits made under ``lock_key``."""
        return self.lock_store.state(lock_key, work).seq

    def index_snapshot(self, work: Work) -> dict:
        """Every visible index entry with the digest of the content it points at (a full Scan)."""
        locks: dict[str, DomainState] = {}
        entries_items: list[dict] = []
        parts: dict[tuple[str, int, str, str], list[tuple[str, bytes]]] = {}
        kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        with recording(work):
            while True:
                out = self.client.scan(**kwargs)
                for item in out.get("Items", []):
                    pk, sk = item["pk"]["S"], item["sk"]["S"]
                    if pk.startswith("LOCK#"):
                        locks[pk[5:]] = DomainState.of(item)
                    elif pk.startswith("FILE#") and (sk == META_SK or sk.startswith("V#")) and "gsi1pk" in item:
                        entries_items.append(item)
                    elif pk.startswith("FILE#") and sk.startswith("CHUNK#v"):
                        ver, digest, content_id, idx = chunk_owner(sk)
                        parts.setdefault((pk[5:], ver, digest, content_id), []).append((idx, item["data"]["B"]))
                work.items_read += len(out.get("Items", []))
                if "LastEvaluatedKey" not in out:
                    break
                kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
        res = resolve(entries_items, locks)
        entries = []
        for v in res.visible.values():
            m = v.meta
            got = parts.get((m.rel_path, m.version, m.digest, m.content_id))
            content = b"".join(b for _, b in sorted(got)) if got is not None else None
            entries.append({"path": m.rel_path, "version": m.version, "digest": m.digest, "size": m.size,
                            "content_digest": FileMeta.digest_of(content) if content is not None else None,
                            "cid": v.ref[2:] if v.ref != META_SK else None, "fence": v.fence or None})
        domains = {k: {"seq": d.seq, "pending": sorted(d.pending), "fence": d.fence} for k, d in locks.items()}
        return {"backend": self.name, "table": self.table, "domains": domains, "entries": entries,
                "superseded": len(res.superseded), "dead": len(res.dead)}

    # ---- writing the index ----------------------------------------------------------
    def on_grant(self, namespace: str | None, grant: LockGrant, cursor: dict | None, work: Work) -> None:
        """Nothing to do: the grant claimed its commit id when it was made, and the lease fences the seal."""

    def release_grant(self, grant: LockGrant) -> None:
        """The grant is over: its bookkeeping goes (its claim stays pending if something of it may still land)."""
        self.claims.forget(grant)

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, cid: str | None = None,
               cursor: dict | None = None, model_fence: tuple[str, int] | None = None) -> CommitResult:
        """The backend's committer (``modes.py``), then what its bookkeeping writes beside it."""
        cursor = cursor if cursor is not None else {}
        with recording(work):
            res = self.committer.commit(self, namespace, entries, [], [], grant, cursor, cid, work,
                                        base_seq=base_seq, model_fence=model_fence)
            self.bookkeeping.after_push(namespace, entries, work)
            return res

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     cid: str | None = None, cursor: dict | None = None,
                     base_seq: int | None = None, forget: Sequence[str] = ()) -> CommitResult:
        """Remove entries: a commit of tombstones (fenced like any commit); ``forget`` prunes whole partitions."""
        cursor = cursor if cursor is not None else {}
        with recording(work):
            res = self.committer.commit(self, namespace, [], metas, list(forget), grant, cursor, cid, work,
                                        base_seq=base_seq, model_fence=None)
            self.bookkeeping.after_push(namespace, metas, work)
            return res

    def read_index(self, namespace: str | None, work: Work, *, lock_key: str | None = None) -> int:
        """Everything the namespace's index holds, read whole (a push past swamp's dirty-path cap walks it all);
        the number of items read."""
        if self.own:
            return len(read_all(self, namespace, -1, work))
        with recording(work):
            if self.gsi_layout == "legacy":
                items = self._query({"KeyConditionExpression": "gsi1pk = :p",
                                     "ExpressionAttributeValues": {":p": s_("FILE")}}, work)
            else:
                parts = list(self.registry(namespace, work))
                got = self.parallel(lambda p, w: self._query_partition(p, -1, False, w), parts, work)
                items = [i for g in got for i in g]
        return len(items)


__all__ = ["DynamoBackend", "chunk_count", "meta_of"]
