"""S3 backend: objects by key, a lock object, and a manifest index.

Lock: one object per key holds the holder's record *and* its fencing counter,
changed only by compare-and-swap (``If-None-Match: *`` to create it,
``If-Match`` on its ETag afterwards). A grant's fence is therefore taken in
the same atomic write as the lock itself. Release writes a released record
with ``If-Match`` (it cannot delete the object: the counter must survive), so a
stale holder can neither renew nor release a lock someone else took over; the
holder keeps the ETag of its last write, so heartbeat and release are one
request each. (moto 5.2.5 honours ``If-Match`` on DeleteObject too; this
design does not need it.)

Index, per namespace:
- ``monolith``: ``.datastore-index.json`` holding every entry, rewritten whole
  on every commit (swamp measured ~98 MB and 26-35 s per rewrite at 250 K entries).
- ``sharded``: one shard object per partition plus ``_index/_meta.json``
  (``commitSeq``, ``fence`` and the key of every partition's current shard).
  Shards are copy-on-write: a commit writes the shards it changes under new
  keys, then swaps ``_meta.json`` with ``If-Match``; so a commit becomes
  visible at once or not at all, a stale holder's shards are never
  referenced (and it deletes them), and superseded shards are deleted after
  the swap.

A fenced commit checks the lock object's nonce, refuses a ``_meta.json`` written
by a newer fence or moved since this holder pulled it, and swaps with
``If-Match``. ``delete_files`` is such a commit of removals: content objects are
deleted only after it is sealed. Without fencing (swamp's behaviour) the same
writes are made unconditionally.

Content: a file's content lives at ``<path>@v<version>.<digest>``, not at the
path itself as in swamp, so it is immutable: a holder whose lease ran out while
it uploaded cannot overwrite the content a newer, sealed entry points at
(measured: with in-place content, a fenced lock-safety run still ended with
entries whose content another writer had replaced). Content a commit
supersedes or removes is deleted after its swap.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.aws_errors import error_code, is_condition_failed, is_not_found, outcome_unknown
from harness.clock import Clock, SystemClock
from harness.datastore.backends.base import CommitResult, FileMeta, PullResult, partition_of
from harness.datastore.errors import ConfigError, FencedError, LockLostError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_bucket_name
from harness.work import Work, recording

INDEX_KINDS = ("monolith", "sharded")
META_RETRIES = 3
_code = error_code  # the one classifier (harness.aws_errors)


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
            if is_not_found(e):
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

    def delete(self, rels: Iterable[str], work: Work) -> None:
        keys = [{"Key": self.key(r)} for r in rels]
        for i in range(0, len(keys), 1000):
            with recording(work):
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys[i:i + 1000], "Quiet": True})

    def list(self, rel_prefix: str, work: Work) -> list[tuple[str, str]]:
        """(relative key, ETag) of every object under ``rel_prefix``."""
        found, token = [], None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.key(rel_prefix)}
            if token:
                kwargs["ContinuationToken"] = token
            with recording(work):
                out = self.client.list_objects_v2(**kwargs)
            found += [(o["Key"][len(self.prefix):], o["ETag"]) for o in out.get("Contents", [])]
            if not out.get("IsTruncated"):
                return found
            token = out["NextContinuationToken"]


class S3LockStore:
    """The lock object: holder record plus fencing counter, changed only by compare-and-swap."""

    def __init__(self, objects: S3Objects) -> None:
        self.o = objects
        self._mine: dict[tuple[str, str], tuple[dict, str]] = {}  # (key, nonce) -> (record, ETag) we last wrote

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        held = self.o.get(key, work)
        if held is not None:
            current = json.loads(held[0])
            if current.get("nonce") and int(current.get("expiresAtMs", 0)) >= now:
                return None  # held and live
        fence = (int(json.loads(held[0]).get("fence", 0)) if held else 0) + 1
        body = {**record, "fence": fence}
        try:
            etag = self.o.put(key, json.dumps(body).encode(), work, if_match=held[1] if held else None,
                              if_none_match=held is None)
        except ClientError as e:
            if is_condition_failed(e):
                return None  # someone else took it first
            raise
        self._mine[(key, record["nonce"])] = (body, etag)
        return fence

    def _read_mine(self, key: str, nonce: str, work: Work) -> tuple[dict, str] | None:
        held = self.o.get(key, work)
        if held is None or json.loads(held[0]).get("nonce") != nonce:
            return None
        return json.loads(held[0]), held[1]

    def _swap(self, key: str, nonce: str, work: Work, release: bool, expires_at_ms: int = 0) -> bool:
        """Renew or release with ``If-Match`` on the ETag of our last write.

        If that ETag is stale, the object is read once: still ours (our own
        renewal raced this call) means retry on the fresh ETag; anyone else's
        means we lost it.
        """
        mine = self._mine.get((key, nonce)) or self._read_mine(key, nonce, work)
        for _ in range(2):
            if mine is None:
                break
            record, etag = mine
            if release:
                body = {"fence": record.get("fence", 0), "releasedBy": record.get("holder"), "expiresAtMs": 0}
            else:
                body = {**record, "expiresAtMs": expires_at_ms}
            try:
                new = self.o.put(key, json.dumps(body).encode(), work, if_match=etag)
            except ClientError as e:
                if not is_condition_failed(e):
                    raise
                mine = self._read_mine(key, nonce, work)
                continue
            if release:
                self._mine.pop((key, nonce), None)
            else:
                self._mine[(key, nonce)] = (body, new)
            return True
        self._mine.pop((key, nonce), None)
        return False

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._swap(key, nonce, work, release=False, expires_at_ms=expires_at_ms)

    def release(self, key: str, nonce: str, work: Work) -> bool:
        return self._swap(key, nonce, work, release=True)

    def holder(self, key: str, work: Work) -> dict:
        held = self.o.get(key, work)
        return json.loads(held[0]) if held else {}


class S3Backend:
    name = "s3"

    def __init__(self, client: Any, bucket: str, index: str = "sharded", *, prefix: str = "",
                 clock: Clock | None = None, tags: dict[str, str] | None = None, create: bool = True,
                 read_concurrency: int = 8, executor: Executor | None = None) -> None:
        if index not in INDEX_KINDS:
            raise ConfigError(f"unknown S3 index kind {index!r}: choose one of {', '.join(INDEX_KINDS)}")
        self.client, self.bucket, self.index = client, check_bucket_name(bucket), index
        self.clock = clock or SystemClock()
        self.tags, self.create = tags or {}, create
        self.objects = S3Objects(client, bucket, prefix)
        self.lock_store = S3LockStore(self.objects)
        # threads by default; a greenlet pool where threads are gevent's (see DynamoBackend)
        self._pool = executor or ThreadPoolExecutor(max_workers=read_concurrency, thread_name_prefix="s3-pool")

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
    @staticmethod
    def content_rel(meta: FileMeta) -> str:
        """Where one version of a file's content lives (immutable: never overwritten with other bytes)."""
        return f"{meta.rel_path}@v{meta.version}.{meta.digest}"

    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work) -> None:
        for rel, data in files.items():
            self.objects.put(self.content_rel(metas[rel]), data, work)
            work.items_written += 1

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        got = self.objects.get(self.content_rel(meta), work)
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

    def _shard_rel(self, namespace: str | None, part: str, cid: str) -> str:
        """A new, never reused key for one version of a partition's shard."""
        local = part[len(namespace) + 1:] if namespace else part
        return f"{self._root(namespace)}_index/{local}.{cid}.json"

    @staticmethod
    def _entries_of(doc: dict) -> dict[str, FileMeta]:
        return {rel: FileMeta(rel, e[0], e[1], e[2], e[3]) for rel, e in doc.get("entries", {}).items()}

    @staticmethod
    def _doc(entries: dict[str, FileMeta], **extra: Any) -> bytes:
        return json.dumps({**extra, "entries": {
            r: [m.size, m.digest, m.updated_at_ms, m.version] for r, m in entries.items()}}).encode()

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, fencing: bool = True, cid: str | None = None) -> CommitResult:
        with recording(work):
            return self._apply(namespace, {e.rel_path: e for e in entries}, set(), grant, work, base_seq, fencing,
                               cid or uuid.uuid4().hex[:16])

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     fencing: bool = True, cid: str | None = None) -> CommitResult:
        """The index first (a commit of removals, fenced), the content only once that is sealed."""
        with recording(work):
            return self._apply(namespace, {}, {m.rel_path for m in metas}, grant, work, None, fencing,
                               cid or uuid.uuid4().hex[:16])

    def _fenced(self, grant: LockGrant, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {grant.key} (fence {grant.fence}) {why}")

    def _apply(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str], grant: LockGrant,
               work: Work, base_seq: int | None, fencing: bool, cid: str) -> CommitResult:
        if fencing:
            if grant.lost:
                raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")
            if self.lock_store.holder(grant.key, work).get("nonce") != grant.nonce:
                raise self._fenced(grant, "is no longer held")
        got = self.objects.get_json(self._meta_rel(namespace), work)
        doc, etag = got if got else ({}, None)
        seq = int(doc.get("commitSeq", 0))
        if fencing:
            if int(doc.get("fence", 0)) > grant.fence:
                raise self._fenced(grant, f"is stale: fence {doc['fence']} already committed")
            if base_seq is not None and seq != base_seq:
                raise self._fenced(grant, f"was held, but the index moved since this holder pulled it "
                                          f"(sequence {seq}, pulled at {base_seq})")
        head = {"commitSeq": seq + 1, "fence": max(int(doc.get("fence", 0)), grant.fence), "cid": cid}
        if self.index == "monolith":
            entries = self._entries_of(doc)
            work.items_read += len(entries)
            replaced = _replaced(entries, upserts, removals)
            for r in removals:
                entries.pop(r, None)
            entries.update(upserts)
            self._swap_meta(namespace, self._doc(entries, **head), etag, grant, work, fencing)
            work.index_entries_written += len(entries)
            work.items_written += 1
            self._discard([self.content_rel(m) for m in replaced], work)
            return CommitResult(seq + 1, seq, cid, self._meta_rel(namespace))
        shards = dict(doc.get("shards", {}))
        by_part: dict[str, dict[str, FileMeta]] = defaultdict(dict)
        for rel, m in upserts.items():
            by_part[partition_of(rel, namespace) or "_root"][rel] = m
        for rel in removals:
            by_part.setdefault(partition_of(rel, namespace) or "_root", {})
        written: list[str] = []  # our new shard objects: deleted again if the swap fails
        superseded: list[str] = []  # shards and content the swap replaces: deleted after it
        try:
            for part, ups in by_part.items():
                old = shards.get(part)
                got_shard = self.objects.get_json(old, work) if old else None
                shard = self._entries_of(got_shard[0]) if got_shard else {}
                work.items_read += len(shard)
                superseded += [self.content_rel(m) for m in _replaced(shard, ups, removals)]
                for r in removals:
                    shard.pop(r, None)
                shard.update(ups)
                if old:
                    superseded.append(old)
                if shard:
                    rel_shard = self._shard_rel(namespace, part, cid)
                    written.append(rel_shard)
                    self.objects.put(rel_shard, self._doc(shard, fence=grant.fence, cid=cid), work)
                    shards[part] = rel_shard
                    work.index_entries_written += len(shard)
                else:
                    shards.pop(part, None)
                work.items_written += 1
            if fencing and grant.lost:
                raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")
        except BaseException:
            self._discard(written, work)
            raise
        try:
            self._swap_meta(namespace, json.dumps({**head, "shards": shards}).encode(), etag, grant, work, fencing)
        except BaseException as e:
            if isinstance(e, Exception) and not outcome_unknown(e):  # known not swapped: our shards are garbage
                self._discard(written, work)
            raise  # (a swap that may have landed references them: they stay)
        self._discard(superseded, work)
        return CommitResult(seq + 1, seq, cid, self._meta_rel(namespace))

    def _discard(self, rels: list[str], work: Work) -> None:
        try:
            self.objects.delete(rels, work)
        except Exception:  # noqa: BLE001 - unreferenced shards are invisible; only space is lost
            pass

    def _swap_meta(self, namespace: str | None, body: bytes, etag: str | None, grant: LockGrant, work: Work,
                   fencing: bool) -> None:
        if not fencing:
            self.objects.put(self._meta_rel(namespace), body, work)
            return
        try:
            self.objects.put(self._meta_rel(namespace), body, work, if_match=etag, if_none_match=etag is None)
        except ClientError as e:
            if is_condition_failed(e):
                raise self._fenced(grant, "lost the race: the index changed under the commit") from e
            raise

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             last_seq: int | None, work: Work, *, lock_key: str | None = None,
             cursor: dict | None = None) -> PullResult:
        """Entries changed after ``since_ms``; ``cursor`` (the reader's own) remembers the shards it has read."""
        with recording(work):
            for _ in range(META_RETRIES):
                got = self.objects.get_json(self._meta_rel(namespace), work)
                doc = got[0] if got else {}
                seq = int(doc.get("commitSeq", 0))
                if partitions is None and last_seq is not None and seq == last_seq:
                    return PullResult([], seq, short_cut=True)
                if self.index == "monolith":
                    entries = self._entries_of(doc)
                    work.items_read += len(entries)
                    wanted = set(partitions) if partitions is not None else None
                    changed = [m for m in entries.values() if m.updated_at_ms > since_ms
                               and (wanted is None or partition_of(m.rel_path, namespace) in wanted)]
                    return PullResult(changed, seq)
                seen = cursor if cursor is not None else {}
                shards = doc.get("shards", {})
                if partitions is not None:
                    refs = [shards[p] for p in partitions if p in shards]
                else:
                    refs = [r for p, r in shards.items() if seen.get(p) != r]
                changed = self._read_shards(refs, since_ms, work)
                if changed is None:
                    continue  # a shard was superseded (and deleted) after we read _meta.json: read it again
                seen.update({p: r for p, r in shards.items() if r in refs})
                return PullResult(changed, seq)
            raise FencedError(f"index of {namespace or 'the datastore'} kept changing during the pull")

    def _read_shards(self, refs: list[str], since_ms: int, work: Work) -> list[FileMeta] | None:
        changed: list[FileMeta] = []
        for ref in refs:
            got = self.objects.get_json(ref, work)
            if got is None:
                return None
            entries = self._entries_of(got[0])
            work.items_read += len(entries)
            changed.extend(m for m in entries.values() if m.updated_at_ms > since_ms)
        return changed

    def write_watermark(self, namespace: str | None, watermark_ms: int, work: Work) -> None:
        self.objects.put(f"{self._root(namespace)}_index/_watermark.json",
                         json.dumps({"lastPushedAt": watermark_ms}).encode(), work)

    def read_watermark(self, namespace: str | None, work: Work) -> int | None:
        got = self.objects.get_json(f"{self._root(namespace)}_index/_watermark.json", work)
        return int(got[0]["lastPushedAt"]) if got else None

    def forget_partitions(self, namespace: str | None, partitions: Sequence[str], work: Work) -> None:
        """Nothing to do: a shard emptied by a delete is dropped from ``_meta.json`` with it."""

    def commit_seq(self, namespace: str | None, work: Work) -> int:
        got = self.objects.get_json(self._meta_rel(namespace), work)
        return int(got[0].get("commitSeq", 0)) if got else 0

    def index_snapshot(self, work: Work) -> dict:
        """Every entry the index references, with the digest of its content object (GETs run concurrently)."""
        name = "_index/_meta.json" if self.index == "sharded" else ".datastore-index.json"
        with recording(work):
            metas = [rel for rel, _ in self.objects.list("", work) if rel == name or rel.endswith("/" + name)]
            domains, entries, missing = {}, {}, []
            for rel in metas:
                doc = self.objects.get_json(rel, work)
                if doc is None:
                    continue
                doc = doc[0]
                domains[rel] = {"seq": int(doc.get("commitSeq", 0)), "fence": int(doc.get("fence", 0))}
                if self.index == "monolith":
                    entries.update(self._entries_of(doc))
                    continue
                for ref in doc.get("shards", {}).values():
                    shard = self.objects.get_json(ref, work)
                    if shard is None:
                        missing.append(ref)
                    else:
                        entries.update(self._entries_of(shard[0]))
        metas_list = list(entries.values())

        def digest(m: FileMeta) -> tuple[str | None, Work]:
            w = Work()
            with recording(w):
                got = self.objects.get(self.content_rel(m), w)
            return (FileMeta.digest_of(got[0]) if got else None), w

        out = []
        for m, (content, w) in zip(metas_list, self._pool.map(digest, metas_list), strict=True):
            work.add(w)
            out.append({"path": m.rel_path, "version": m.version, "digest": m.digest, "size": m.size,
                        "content_digest": content})
        return {"backend": self.name, "bucket": self.bucket, "domains": domains, "entries": out,
                "missing_shards": missing}


def _replaced(entries: dict[str, FileMeta], upserts: dict[str, FileMeta], removals: set[str]) -> list[FileMeta]:
    """Entries a commit removes, or replaces with other content: their content is garbage once it is sealed."""
    out = [entries[r] for r in removals if r in entries]
    for rel, new in upserts.items():
        old = entries.get(rel)
        if old is not None and (old.version, old.digest) != (new.version, new.digest):
            out.append(old)
    return out
