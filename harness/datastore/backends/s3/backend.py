"""S3 backend: objects by key, a lock object (``locks.py``), and a head-and-shards index (``index.py``).

A fenced grant writes its fence into the domain's index head as it is made
(``on_grant``, before the grant counts), and a commit seals by swapping the
head with ``If-Match`` on the ETag this holder last saw: so the seal is
refused once anyone else has been granted the lock since, with no separate
holder check to race. A commit writes the shards it changes under new keys
(copy-on-write), swaps the head, then deletes the shards and content it
superseded: shards touched + 2 requests, the old shards' entries taken from the
worker's cursor (what its pull read; the ETag proves it current). A commit
becomes visible at once or not at all; a stale holder's shards are never
referenced (and it deletes them).

Content: a file's content lives at ``<path>@v<version>.<digest>``, not at the
path itself as in swamp, so it is immutable: a holder whose lease ran out while
it uploaded cannot overwrite the content a newer, sealed entry points at.

Without fencing (swamp's behaviour) the same writes are made unconditionally.
"""

from __future__ import annotations

import contextvars
import json
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.aws_errors import error_code, is_condition_failed, outcome_unknown
from harness.clock import Clock, SystemClock, now_ms
from harness.datastore.backends.base import CommitResult, FileMeta, PullResult, partition_of
from harness.datastore.backends.s3.index import (
    ALL,
    DATASTORE_LOCK,
    INDEX_KINDS,
    S3Cursor,
    Shard,
    content_rel,
    entries_of,
    head_rel,
    in_scope,
    shard_doc,
    shard_of,
    shard_rel,
)
from harness.datastore.backends.s3.locks import S3LockStore
from harness.datastore.backends.s3.objects import S3Objects
from harness.datastore.errors import ConfigError, ContentMissingError, FencedError, LockLostError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_bucket_name
from harness.work import Sends, Work, recording, sending

META_RETRIES = 3


class _StaleHead(Exception):
    """The head this commit started from is no longer current (a shard it names is gone): read it again."""


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
        self._guard = threading.Lock()
        self._mutex: dict[str, threading.Lock] = {}  # per grant: its commits run one at a time

    def datastore_lock_key(self) -> str:
        return DATASTORE_LOCK

    def global_lock_key(self, namespace: str | None) -> str:
        """swamp's global lock today: ``.datastore.lock``, under the namespace when there is one."""
        return f"{namespace}/{DATASTORE_LOCK}" if namespace else DATASTORE_LOCK

    def ensure(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as e:
            if error_code(e) not in ("404", "NoSuchBucket", "NotFound"):
                raise
        if not self.create:
            raise ConfigError(f"S3 bucket {self.bucket!r} does not exist; create it or allow creation")
        try:
            self.client.create_bucket(Bucket=self.bucket)
        except ClientError as e:
            if error_code(e) not in ("BucketAlreadyOwnedByYou",):
                raise
        if self.tags:
            self.client.put_bucket_tagging(Bucket=self.bucket, Tagging={
                "TagSet": [{"Key": k, "Value": v} for k, v in self.tags.items()]})

    # ---- content ---------------------------------------------------------------
    content_rel = staticmethod(content_rel)

    def _batches(self, fn: Any, items: list[Any], work: Work, concurrency: int) -> None:
        """``fn(item, work)`` for every item: one after another, or ``concurrency`` at a time in fixed batches
        (as swamp's S3 transfers run: a batch waits for its slowest)."""
        if concurrency <= 1:
            for x in items:
                fn(x, work)
            return
        for i in range(0, len(items), concurrency):
            batch = items[i:i + concurrency]

            def one(x: Any) -> Work:
                w = Work()
                with recording(w):
                    fn(x, w)
                return w

            ctxs = [contextvars.copy_context() for _ in batch]  # one each: a context is entered by one thread
            for w in self._pool.map(lambda c, x: c.run(one, x), ctxs, batch):
                work.add(w)

    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work, *,
                    cursor: dict | None = None, concurrency: int = 1) -> None:
        def put(rel: str, w: Work) -> None:
            self.objects.put(content_rel(metas[rel]), files[rel], w)
            w.items_written += 1

        self._batches(put, list(files), work, concurrency)

    def get_content(self, meta: FileMeta, work: Work) -> bytes:
        got = self.objects.get(content_rel(meta), work)
        if got is None:
            raise ContentMissingError(f"content of {meta.rel_path} (version {meta.version}) is missing")
        work.items_read += 1
        return got[0]

    def get_contents(self, metas: Sequence[FileMeta], work: Work, *, concurrency: int = 1) -> None:
        self._batches(lambda m, w: self.get_content(m, w), list(metas), work, concurrency)

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        self.objects.put(rel_path, data, work)

    # ---- the head -------------------------------------------------------------
    def _head_rel(self, lock_key: str | None, namespace: str | None) -> str:
        return head_rel(self.index, lock_key or self._default_lock(namespace), namespace)

    @staticmethod
    def _default_lock(namespace: str | None) -> str:
        return f".locks/{namespace}.lock" if namespace else DATASTORE_LOCK

    def _read_head(self, cur: S3Cursor, work: Work) -> None:
        got = self.objects.get_json(cur.head_rel or "", work)
        cur.know(*(got if got else ({}, None)))
        cur.fresh_for = None

    def _mutex_of(self, grant: LockGrant) -> threading.Lock:
        with self._guard:
            return self._mutex.setdefault(grant.nonce, threading.Lock())

    def on_grant(self, namespace: str | None, grant: LockGrant, cursor: dict | None, work: Work) -> None:
        """Write the new holder's fence into the head (with the ETag this worker last saw, if it is current).

        From here on a seal by any earlier holder, conditioned on an ETag from
        before this write, is refused.
        """
        cur = S3Cursor.of(cursor, self._head_rel(grant.key, namespace))
        with recording(work):
            for _ in range(META_RETRIES + 1):
                if cur.head is None:
                    self._read_head(cur, work)
                doc = dict(cur.head or {})
                if int(doc.get("fence", 0)) > grant.fence:
                    raise FencedError(f"lock {grant.key} (fence {grant.fence}) is stale: the index head carries "
                                      f"fence {doc['fence']}")
                doc.update(fence=grant.fence, commitSeq=int(doc.get("commitSeq", 0)), shards=doc.get("shards", {}))
                try:
                    etag = self.objects.put(cur.head_rel or "", json.dumps(doc).encode(), work, if_match=cur.etag,
                                            if_none_match=cur.etag is None)
                except ClientError as e:
                    if not is_condition_failed(e):
                        raise
                    cur.head = cur.etag = None  # someone wrote it since this worker looked: read it again
                    continue
                cur.know(doc, etag)
                cur.fresh_for = grant.nonce
                return
        raise FencedError(f"lock {grant.key} (fence {grant.fence}): the index head kept changing while it was granted")

    def fence_model(self, namespace: str | None, partition: str, grant: LockGrant, cursor: dict | None,
                    work: Work, *, lock_key: str | None = None) -> None:
        """A per-model lock's grant (two-phase, fenced) records its fence in the head (``modelFences``): a later
        commit of that model by an older holder finds a newer fence there and is refused (the swap is atomic).

        ``lock_key`` is the commit domain's lock: the head its commits seal (one more head write per model run,
        which swamp, unfenced, does not make)."""
        cur = S3Cursor.of(cursor, self._head_rel(lock_key or self.global_lock_key(namespace), namespace))
        with recording(work):
            for _ in range(META_RETRIES + 1):
                if cur.head is None:
                    self._read_head(cur, work)
                doc = dict(cur.head or {})
                fences = dict(doc.get("modelFences", {}))
                if int(fences.get(partition, 0)) >= grant.fence:
                    raise FencedError(f"lock {grant.key} (fence {grant.fence}) is stale: a newer holder of the "
                                      f"model was granted first")
                fences[partition] = grant.fence
                doc.update(modelFences=fences, commitSeq=int(doc.get("commitSeq", 0)), shards=doc.get("shards", {}))
                try:
                    etag = self.objects.put(cur.head_rel or "", json.dumps(doc).encode(), work, if_match=cur.etag,
                                            if_none_match=cur.etag is None)
                except ClientError as e:
                    if not is_condition_failed(e):
                        raise
                    cur.head = cur.etag = None
                    continue
                cur.know(doc, etag)
                cur.fresh_for = None
                return
        raise FencedError(f"lock {grant.key} (fence {grant.fence}): the index head kept changing while it was granted")

    def read_index(self, namespace: str | None, work: Work, *, lock_key: str | None = None) -> int:
        """Every shard of the namespace's head, read whole (a push past the dirty-path cap walks the index)."""
        cur = S3Cursor(self._head_rel(lock_key, namespace))
        n = 0
        with recording(work):
            self._read_head(cur, work)
            for part, ref in (cur.head or {}).get("shards", {}).items():
                if in_scope(part, namespace):
                    got = self.objects.get_json(ref, work)
                    n += len(entries_of(got[0])) if got else 0
        work.items_read += n
        return n

    def release_grant(self, grant: LockGrant) -> None:
        with self._guard:
            self._mutex.pop(grant.nonce, None)

    def commit_seq(self, namespace: str | None, work: Work, lock_key: str | None = None) -> int:
        got = self.objects.get_json(self._head_rel(lock_key, namespace), work)
        return int(got[0].get("commitSeq", 0)) if got else 0

    # ---- reading the index ----------------------------------------------------------
    def _shard_entries(self, cur: S3Cursor, part: str, ref: str, work: Work, *, trust: bool = True
                       ) -> dict[str, FileMeta]:
        """A shard's entries: from the cursor when it read this very shard (shards are immutable), else read."""
        have = cur.shards.get(part)
        if trust and have is not None and have.ref == ref:
            return have.entries
        got = self.objects.get_json(ref, work)
        if got is None:
            raise _StaleHead(ref)
        entries = entries_of(got[0])
        work.items_read += len(entries)
        work.queries += 1
        return entries

    def lookup(self, paths: Sequence[str], work: Work, *, fenced: bool = True) -> dict[str, FileMeta]:
        """The entries of ``paths`` as readers see them (``fenced=False``: swamp's S3 push looks nothing up)."""
        if not fenced:
            return {}
        out: dict[str, FileMeta] = {}
        by_ns: dict[str | None, list[str]] = defaultdict(list)
        for p in paths:
            first = p.split("/", 1)[0]
            by_ns[None if first in ("data", "models", "outputs") else first].append(p)
        with recording(work):
            for ns, rels in by_ns.items():
                cur = S3Cursor(self._head_rel(None, ns))
                self._read_head(cur, work)
                shards = (cur.head or {}).get("shards", {})
                for part in {shard_of(self.index, r, ns) for r in rels}:
                    if part in shards:
                        entries = self._shard_entries(cur, part, shards[part], work)
                        out.update({r: entries[r] for r in rels if r in entries})
        return out

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
             lock_key: str | None = None, cursor: dict | None = None, fencing: bool = True,
             grant: LockGrant | None = None) -> PullResult:
        """What changed since the worker's cursor: the head (unless its own fence write is current) and the
        shards whose keys moved; their entries against what the cursor read before give changes and removals."""
        cur = S3Cursor.of(cursor, self._head_rel(lock_key, namespace))
        wanted = set(partitions) if partitions is not None else None
        root = f"{namespace}/" if namespace else ""
        with recording(work):
            for _ in range(META_RETRIES):
                if not (grant is not None and cur.fresh_for == grant.nonce and cur.etag):
                    self._read_head(cur, work)
                doc = cur.head or {}
                seq = int(doc.get("commitSeq", 0))
                if wanted is None and cur.seq is not None and seq == cur.seq:
                    return PullResult([], seq, short_cut=True)
                shards = {p: r for p, r in doc.get("shards", {}).items()
                          if in_scope(p, namespace) and (wanted is None or p in wanted or p == ALL)}
                try:
                    read = {p: self._shard_entries(cur, p, r, work) for p, r in shards.items()}
                except _StaleHead:
                    cur.fresh_for = None  # a shard was superseded (and deleted) after the head was read
                    continue
                changed: list[FileMeta] = []
                removed: list[str] = []
                full: list[str] = []

                def mine(rel: str) -> bool:
                    return rel.startswith(root) and (wanted is None or partition_of(rel, namespace) in wanted)

                for p, entries in read.items():
                    before = cur.shards.get(p)
                    old = before.entries if before else {}
                    if before is None:
                        full.append("*" if p == ALL and wanted is None else p)
                    changed += [m for r, m in entries.items() if mine(r) and old.get(r) != m]
                    removed += [r for r in old if mine(r) and r not in entries]
                    cur.shards[p] = Shard(shards[p], entries)
                for p in [p for p in cur.shards if p not in shards and in_scope(p, namespace)
                          and (wanted is None or p in wanted or p == ALL)]:
                    removed += [r for r in cur.shards.pop(p).entries if mine(r)]
                if wanted is None:
                    cur.seq = seq
                return PullResult(changed, seq, removed=removed, full=full)
            raise FencedError(f"index of {namespace or 'the datastore'} kept changing during the pull")

    def index_snapshot(self, work: Work) -> dict:
        """Every entry the heads reference, with the digest of its content object (GETs run concurrently)."""
        name = "_index/_meta.json" if self.index == "sharded" else ".datastore-index.json"
        with recording(work):
            heads = [rel for rel, _ in self.objects.list("", work) if rel == name or rel.endswith("/" + name)]
            domains, entries, missing = {}, {}, []
            for rel in heads:
                got = self.objects.get_json(rel, work)
                if got is None:
                    continue
                doc = got[0]
                domains[rel] = {"seq": int(doc.get("commitSeq", 0)), "fence": int(doc.get("fence", 0))}
                for ref in doc.get("shards", {}).values():
                    shard = self.objects.get_json(ref, work)
                    if shard is None:
                        missing.append(ref)
                    else:
                        entries.update(entries_of(shard[0]))
        metas = list(entries.values())

        def digest(m: FileMeta) -> tuple[str | None, Work]:
            w = Work()
            with recording(w):
                got = self.objects.get(content_rel(m), w)
            return (FileMeta.digest_of(got[0]) if got else None), w

        out = []
        for m, (content, w) in zip(metas, self._pool.map(digest, metas), strict=True):
            work.add(w)
            out.append({"path": m.rel_path, "version": m.version, "digest": m.digest, "size": m.size,
                        "content_digest": content})
        return {"backend": self.name, "bucket": self.bucket, "domains": domains, "entries": out,
                "missing_shards": missing}

    # ---- writing the index ----------------------------------------------------------
    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, fencing: bool = True, cid: str | None = None,
               cursor: dict | None = None, model_fence: tuple[str, int] | None = None,
               bookkeeping: str = "harness") -> CommitResult:
        """(``bookkeeping``: swamp's S3 keeps its sequence in the head already; nothing more to write.)"""
        with recording(work):
            return self._apply(namespace, {e.rel_path: e for e in entries}, set(), grant, work, base_seq, fencing,
                               cid or uuid.uuid4().hex[:16], cursor, model_fence)

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     fencing: bool = True, cid: str | None = None, cursor: dict | None = None,
                     base_seq: int | None = None, forget: Sequence[str] = (),
                     bookkeeping: str = "harness") -> CommitResult:
        """The index first (a commit of removals, fenced), the content only once that is sealed.

        A partition whose shard empties leaves the head with it (``forget`` needs nothing more)."""
        with recording(work):
            return self._apply(namespace, {}, {m.rel_path for m in metas}, grant, work, base_seq, fencing,
                               cid or uuid.uuid4().hex[:16], cursor)

    def _fenced(self, grant: LockGrant, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {grant.key} (fence {grant.fence}) {why}")

    def _apply(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str], grant: LockGrant,
               work: Work, base_seq: int | None, fencing: bool, cid: str, cursor: dict | None,
               model_fence: tuple[str, int] | None = None) -> CommitResult:
        cur = S3Cursor.of(cursor, self._head_rel(grant.key, namespace))
        with self._mutex_of(grant):
            for attempt in range(META_RETRIES):
                try:
                    return self._apply_once(namespace, upserts, removals, grant, work, base_seq, fencing, cid, cur,
                                            model_fence)
                except _StaleHead:
                    cur.head = cur.etag = None
                    if attempt == META_RETRIES - 1:
                        raise self._fenced(grant, "lost the race: the index kept changing under the commit") from None
        raise AssertionError("unreachable")

    def _apply_once(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str],
                    grant: LockGrant, work: Work, base_seq: int | None, fencing: bool, cid: str,
                    cur: S3Cursor, model_fence: tuple[str, int] | None = None) -> CommitResult:
        if fencing and grant.lost:
            raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")
        if cur.head is None or not fencing:  # unfenced (swamp's): nothing conditions the swap, so read it now
            self._read_head(cur, work)
        doc, etag = cur.head or {}, cur.etag
        seq = int(doc.get("commitSeq", 0))
        if fencing:
            if int(doc.get("fence", 0)) > grant.fence:
                raise self._fenced(grant, f"is stale: fence {doc['fence']} already holds the index")
            if base_seq is not None and seq != base_seq:
                raise self._fenced(grant, f"was held, but the index moved since this holder pulled it "
                                          f"(sequence {seq}, pulled at {base_seq})")
            if model_fence is not None and int(doc.get("modelFences", {}).get(model_fence[0], 0)) > model_fence[1]:
                raise self._fenced(grant, f"commits model {model_fence[0]} under a stale lock (fence "
                                          f"{model_fence[1]}): a newer holder of the model was granted")
        shards = dict(doc.get("shards", {}))
        by_part: dict[str, tuple[dict[str, FileMeta], set[str]]] = defaultdict(lambda: ({}, set()))
        for rel, m in upserts.items():
            by_part[shard_of(self.index, rel, namespace)][0][rel] = m
        for rel in removals:
            by_part[shard_of(self.index, rel, namespace)][1].add(rel)
        written: list[str] = []  # our new shard objects: deleted again if the swap fails
        superseded: list[str] = []  # shards and content the swap replaces: deleted after it
        new_shards: dict[str, Shard | None] = {}
        try:
            for part, (ups, rems) in by_part.items():
                old_ref = shards.get(part)
                old = self._shard_entries(cur, part, old_ref, work, trust=fencing) if old_ref else {}
                entries = {r: m for r, m in old.items() if r not in rems}
                entries.update(ups)
                superseded += [content_rel(m) for r, m in old.items()
                               if r in rems or (r in ups and (m.version, m.digest) != (ups[r].version, ups[r].digest))]
                if old_ref:
                    superseded.append(old_ref)
                if entries:
                    ref = shard_rel(cur.head_rel or "", part, cid)
                    written.append(ref)
                    self.objects.put(ref, shard_doc(entries, fence=grant.fence, cid=cid), work)
                    shards[part] = ref
                    new_shards[part] = Shard(ref, entries)
                    work.index_entries_written += len(entries)
                else:
                    shards.pop(part, None)
                    new_shards[part] = None
                work.items_written += 1
            if fencing and grant.lost:
                raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")
        except BaseException:
            self._discard(written, work)
            raise
        head = {**doc, "commitSeq": seq + 1, "fence": max(int(doc.get("fence", 0)), grant.fence), "cid": cid,
                "shards": shards}
        sent = Sends(lambda: now_ms(self.clock))
        try:
            with sending(self.clock) as sent:
                new_etag = self.objects.put(cur.head_rel or "", json.dumps(head).encode(), work,
                                            if_match=etag if fencing else None,
                                            if_none_match=fencing and etag is None)
        except BaseException as e:
            refused = isinstance(e, ClientError) and is_condition_failed(e)
            if refused and self._landed(cur, cid, written, work):
                # a seal whose answer was lost and which botocore sent again: the first attempt landed (the
                # retry's 412 is against its own write); the commit is sealed, its shards are the index now
                new_etag = cur.etag
            else:
                if isinstance(e, Exception) and not outcome_unknown(e):  # known not swapped: our shards are garbage
                    self._discard(written if not refused else self._unreferenced(cur, written), work)
                if refused:
                    raise self._refusal(grant, cur) from e
                cur.head = cur.etag = None
                raise  # (a swap that may have landed references them: they stay)
        current = cur.seq is not None and cur.seq == seq
        cur.know(head, new_etag)
        cur.fresh_for = grant.nonce
        for part, shard in new_shards.items():
            if shard is None:
                cur.shards.pop(part, None)
            else:
                cur.shards[part] = shard
        if current:
            cur.seq = seq + 1
        self._discard(superseded, work)
        return CommitResult(seq + 1, seq, cid, cur.head_rel or "", seal_ms=sent.first, sent_ms=sent.last)

    def _landed(self, cur: S3Cursor, cid: str, written: list[str], work: Work) -> bool:
        """After a refused seal: is the head this commit's own (its id), or built on it (it names our shards)?"""
        self._read_head(cur, work)
        doc = cur.head or {}
        return doc.get("cid") == cid or bool(set(doc.get("shards", {}).values()) & set(written))

    @staticmethod
    def _unreferenced(cur: S3Cursor, written: list[str]) -> list[str]:
        """Of our new shards, those the current head (just read) does not name: only they may go."""
        named = set((cur.head or {}).get("shards", {}).values())
        return [r for r in written if r not in named]

    def _refusal(self, grant: LockGrant, cur: S3Cursor) -> FencedError:
        """Why the head swap was refused (the head as just read): a newer holder's fence, or the index moved."""
        doc = cur.head or {}
        cur.head = cur.etag = None
        if int(doc.get("fence", 0)) > grant.fence:
            return self._fenced(grant, f"is no longer held: fence {doc['fence']} was granted since")
        return self._fenced(grant, "lost the race: the index changed under the commit")

    def _discard(self, rels: list[str], work: Work) -> None:
        try:
            self.objects.delete(rels, work)
        except Exception:  # noqa: BLE001 - unreferenced shards are invisible; only space is lost
            pass
