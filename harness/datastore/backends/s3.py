"""S3 backend: objects by key, a lock object, and a manifest index.

Lock: PutObject with ``If-None-Match: *`` (412 means held); a holder's record
carries ``expiresAtMs`` and is stale past it; heartbeat and release are
conditioned on the lock object's ETag after checking the nonce. The fencing
token is a counter object advanced by compare-and-swap (``If-Match``).

Index, per namespace:
- ``monolith``: ``.datastore-index.json`` holding every entry, rewritten whole
  on every commit (swamp measured ~98 MB and 26-35 s per rewrite at 250 K entries).
- ``sharded``: ``_index/<type>/<id>.json`` per partition plus ``_index/_meta.json``
  (``commitSeq``); only the shards a commit touches are rewritten.

S3 fencing is weaker than DynamoDB's: the commit checks the lock and the
sequence's fence before writing, then swaps ``_meta.json`` with ``If-Match``;
there is no multi-object transaction.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.instrument import recording
from harness.clock import Clock, SystemClock, now_ms
from harness.datastore.backends.base import FileMeta, PullResult, partition_of
from harness.datastore.errors import ConfigError, FencedError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_bucket_name
from harness.datastore.work import Work

INDEX_KINDS = ("monolith", "sharded")


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _precondition_failed(err: ClientError) -> bool:
    return _code(err) in ("PreconditionFailed", "412", "ConditionalRequestConflict")


def _not_found(err: ClientError) -> bool:
    return _code(err) in ("NoSuchKey", "404", "NotFound")


class S3Objects:
    """Small JSON/bytes object helpers that count their work."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client, self.bucket, self.prefix = client, bucket, prefix

    def key(self, rel: str) -> str:
        return self.prefix + rel

    def get(self, rel: str, work: Work) -> tuple[bytes, str] | None:
        try:
            with recording(work):
                out = self.client.get_object(Bucket=self.bucket, Key=self.key(rel))
                body = out["Body"].read()
        except ClientError as e:
            if _not_found(e):
                return None
            raise
        return body, out["ETag"]

    def get_json(self, rel: str, work: Work) -> tuple[dict, str] | None:
        got = self.get(rel, work)
        return (json.loads(got[0]), got[1]) if got else None

    def put(self, rel: str, data: bytes, work: Work, *, if_match: str | None = None,
            if_none_match: bool = False) -> str:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key(rel), "Body": data}
        if if_match:
            kwargs["IfMatch"] = if_match
        if if_none_match:
            kwargs["IfNoneMatch"] = "*"
        with recording(work):
            out = self.client.put_object(**kwargs)
        return out["ETag"]

    def delete(self, rel: str, work: Work) -> None:
        with recording(work):
            self.client.delete_object(Bucket=self.bucket, Key=self.key(rel))


class S3LockStore:
    def __init__(self, objects: S3Objects) -> None:
        self.o = objects

    def _next_fence(self, key: str, work: Work) -> int:
        rel = f"{key}.fence"
        while True:
            got = self.o.get(rel, work)
            n = int(got[0]) + 1 if got else 1
            try:
                self.o.put(rel, str(n).encode(), work, if_match=got[1] if got else None,
                           if_none_match=got is None)
                return n
            except ClientError as e:
                if not _precondition_failed(e):
                    raise

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        body = json.dumps(record).encode()
        for _ in range(2):
            try:
                self.o.put(key, body, work, if_none_match=True)
                return self._next_fence(key, work)
            except ClientError as e:
                if not _precondition_failed(e):
                    raise
            held = self.o.get(key, work)
            if held is None:
                continue  # released between our put and get: try once more
            if json.loads(held[0]).get("expiresAtMs", 0) >= now:
                return None
            try:  # stale: take it over only if nobody else did first
                self.o.put(key, body, work, if_match=held[1])
                return self._next_fence(key, work)
            except ClientError as e:
                if _precondition_failed(e):
                    return None
                raise
        return None

    def _swap_if_ours(self, key: str, nonce: str, work: Work, change: Callable[[dict], dict] | None) -> bool:
        """One read, then a write conditioned on that read's ETag: ``change`` the record, or delete it (None)."""
        held = self.o.get(key, work)
        if held is None:
            return False
        record = json.loads(held[0])
        if record.get("nonce") != nonce:
            return False
        if change is None:
            self.o.delete(key, work)
            return True
        try:
            self.o.put(key, json.dumps(change(record)).encode(), work, if_match=held[1])
            return True
        except ClientError as e:
            if _precondition_failed(e):
                return False
            raise

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._swap_if_ours(key, nonce, work, lambda r: {**r, "expiresAtMs": expires_at_ms})

    def release(self, key: str, nonce: str, work: Work) -> bool:
        return self._swap_if_ours(key, nonce, work, None)

    def holder_nonce(self, key: str, work: Work) -> tuple[str | None, int]:
        held = self.o.get(key, work)
        if held is None:
            return None, 0
        rec = json.loads(held[0])
        return rec.get("nonce"), int(rec.get("expiresAtMs", 0))


class S3Backend:
    name = "s3"

    def __init__(self, client: Any, bucket: str, index: str = "sharded", *, prefix: str = "",
                 clock: Clock | None = None, tags: dict[str, str] | None = None, create: bool = True) -> None:
        if index not in INDEX_KINDS:
            raise ConfigError(f"unknown S3 index kind {index!r}: choose one of {', '.join(INDEX_KINDS)}")
        self.client, self.bucket, self.index = client, check_bucket_name(bucket), index
        self.clock = clock or SystemClock()
        self.tags, self.create = tags or {}, create
        self.objects = S3Objects(client, bucket, prefix)
        self.lock_store = S3LockStore(self.objects)
        self._shard_etags: dict[str, str] = {}

    def datastore_lock_key(self) -> str:
        return ".datastore.lock"

    def ensure(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as e:
            if _code(e) not in ("404", "NoSuchBucket", "NotFound"):
                raise
        if not self.create:
            raise ConfigError(f"S3 bucket {self.bucket!r} does not exist; create it or allow creation")
        try:
            self.client.create_bucket(Bucket=self.bucket)
        except ClientError as e:
            if _code(e) not in ("BucketAlreadyOwnedByYou",):
                raise
        if self.tags:
            self.client.put_bucket_tagging(Bucket=self.bucket, Tagging={
                "TagSet": [{"Key": k, "Value": v} for k, v in self.tags.items()]})

    # ---- content ---------------------------------------------------------------
    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work) -> None:
        for rel, data in files.items():
            self.objects.put(rel, data, work)
            work.items_written += 1

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        got = self.objects.get(meta.rel_path, work)
        work.items_read += 1
        return got[0] if got else b""

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        self.objects.put(rel_path, data, work)

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        return {}  # S3 pushes upload in prepare; conflicts are caught by the index swap

    # ---- index ---------------------------------------------------------------
    @staticmethod
    def _root(namespace: str | None) -> str:
        return f"{namespace}/" if namespace else ""

    def _meta_rel(self, namespace: str | None) -> str:
        return self._root(namespace) + ("_index/_meta.json" if self.index == "sharded" else ".datastore-index.json")

    def _shard_rel(self, namespace: str | None, part: str) -> str:
        local = part[len(namespace) + 1:] if namespace else part
        return f"{self._root(namespace)}_index/{local}.json"

    @staticmethod
    def _entries_of(doc: dict) -> dict[str, FileMeta]:
        return {rel: FileMeta(rel, e[0], e[1], e[2], e[3]) for rel, e in doc.get("entries", {}).items()}

    @staticmethod
    def _doc(entries: dict[str, FileMeta], **extra: Any) -> bytes:
        return json.dumps({**extra, "entries": {
            r: [m.size, m.digest, m.updated_at_ms, m.version] for r, m in entries.items()}}).encode()

    def _check_fence(self, namespace: str | None, grant: LockGrant, work: Work) -> tuple[dict, str | None]:
        nonce, expires = self.lock_store.holder_nonce(grant.key, work)
        if nonce != grant.nonce or expires <= now_ms(self.clock):
            raise FencedError(f"commit rejected: lock {grant.key} (fence {grant.fence}) is no longer held")
        got = self.objects.get_json(self._meta_rel(namespace), work)
        doc, etag = got if got else ({}, None)
        if doc.get("fence", 0) > grant.fence:
            raise FencedError(f"commit rejected: a newer holder (fence {doc['fence']}) already committed")
        return doc, etag

    def _swap_meta(self, namespace: str | None, body: bytes, etag: str | None, grant: LockGrant,
                   work: Work) -> None:
        try:
            self.objects.put(self._meta_rel(namespace), body, work, if_match=etag, if_none_match=etag is None)
        except ClientError as e:
            if _precondition_failed(e):
                raise FencedError(f"commit rejected: index changed under lock {grant.key}") from e
            raise

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant,
               work: Work) -> int:
        return self._apply(namespace, {e.rel_path: e for e in entries}, set(), grant, work)

    def _apply(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str],
               grant: LockGrant, work: Work) -> int:
        doc, etag = self._check_fence(namespace, grant, work)
        seq = int(doc.get("commitSeq", 0)) + 1
        if self.index == "monolith":
            entries = self._entries_of(doc)
            work.items_read += len(entries)
            for r in removals:
                entries.pop(r, None)
            entries.update(upserts)
            self._swap_meta(namespace, self._doc(entries, commitSeq=seq, fence=grant.fence), etag, grant, work)
            work.index_entries_written += len(entries)
            work.items_written += 1
            return seq
        by_part: dict[str, dict[str, FileMeta]] = defaultdict(dict)
        for rel, m in upserts.items():
            by_part[partition_of(rel, namespace) or "_root"][rel] = m
        for rel in removals:
            by_part.setdefault(partition_of(rel, namespace) or "_root", {})
        for part, ups in by_part.items():
            rel_shard = self._shard_rel(namespace, part)
            got = self.objects.get_json(rel_shard, work)
            shard = self._entries_of(got[0]) if got else {}
            work.items_read += len(shard)
            for r in removals:
                shard.pop(r, None)
            shard.update(ups)
            if shard:
                self.objects.put(rel_shard, self._doc(shard, fence=grant.fence), work)
                work.index_entries_written += len(shard)
            else:
                self.objects.delete(rel_shard, work)
            work.items_written += 1
        self._swap_meta(namespace, json.dumps({"commitSeq": seq, "fence": grant.fence}).encode(),
                        etag, grant, work)
        return seq

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             last_seq: int | None, work: Work) -> PullResult:
        scoped = partitions is not None
        got = self.objects.get_json(self._meta_rel(namespace), work)
        doc = got[0] if got else {}
        seq = int(doc.get("commitSeq", 0))
        if not scoped and last_seq is not None and seq == last_seq:
            return PullResult([], seq, short_cut=True)
        if self.index == "monolith":
            entries = self._entries_of(doc)
            work.items_read += len(entries)
            wanted = set(partitions) if scoped else None
            changed = [m for m in entries.values() if m.updated_at_ms > since_ms
                       and (wanted is None or partition_of(m.rel_path, namespace) in wanted)]
            return PullResult(changed, seq)
        if scoped:
            shard_rels = [self._shard_rel(namespace, p) for p in partitions]
        else:
            shard_rels = self._list_changed_shards(namespace, work)
        changed: list[FileMeta] = []
        for rel in shard_rels:
            got = self.objects.get_json(rel, work)
            if got is None:
                continue
            self._shard_etags[rel] = got[1]
            entries = self._entries_of(got[0])
            work.items_read += len(entries)
            changed.extend(m for m in entries.values() if m.updated_at_ms > since_ms)
        return PullResult(changed, seq)

    def _list_changed_shards(self, namespace: str | None, work: Work) -> list[str]:
        """Shards whose ETag differs from the one this client last read."""
        prefix = self.objects.key(f"{self._root(namespace)}_index/")
        out_rels, token = [], None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            with recording(work):
                out = self.client.list_objects_v2(**kwargs)
            for obj in out.get("Contents", []):
                rel = obj["Key"][len(self.objects.prefix):]
                if rel.endswith(("_meta.json", "_watermark.json")):
                    continue
                work.items_read += 1
                if self._shard_etags.get(rel) != obj["ETag"]:
                    out_rels.append(rel)
            if not out.get("IsTruncated"):
                return out_rels
            token = out["NextContinuationToken"]

    def write_watermark(self, namespace: str | None, watermark_ms: int, work: Work) -> None:
        self.objects.put(f"{self._root(namespace)}_index/_watermark.json",
                         json.dumps({"lastPushedAt": watermark_ms}).encode(), work)

    def read_watermark(self, namespace: str | None, work: Work) -> int | None:
        got = self.objects.get_json(f"{self._root(namespace)}_index/_watermark.json", work)
        return int(got[0]["lastPushedAt"]) if got else None

    def forget_partitions(self, namespace: str | None, partitions: Sequence[str], work: Work) -> None:
        """Nothing to do: a shard emptied by a delete is removed with it."""

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant,
                     work: Work) -> None:
        keys = [{"Key": self.objects.key(m.rel_path)} for m in metas]
        for i in range(0, len(keys), 1000):
            with recording(work):
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys[i:i + 1000], "Quiet": True})
        self._apply(namespace, {}, {m.rel_path for m in metas}, grant, work)
