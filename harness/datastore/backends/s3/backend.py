"""S3 backend: objects by key, a lock object (``locks.py``), and a head-and-shards index (``index.py``).

A fenced grant writes its fence into the domain's index head as it is made
(``on_grant``, before the grant counts), and a commit seals by swapping the
head with ``If-Match`` on the ETag this holder last saw: so the seal is
refused once anyone else has been granted the lock since, with no separate
holder check to race. A commit writes the shards it changes under new keys
(copy-on-write) and swaps the head: shards touched + 1 requests under the
lock, the old shards' entries taken from the worker's cursor (what its pull
read; the ETag proves it current); the shards and content it superseded are
deleted after the release (``commit.py``). A commit becomes visible at once or
not at all; a stale holder's shards are never referenced (and it deletes
them).

Content: a file's content lives at ``<path>@v<version>.<digest>.<id>``, not at
the path itself as in swamp (``<id>``: the commit's, picked by its writer before
the upload), so no two commits write one content object: a holder whose lease
ran out while it uploaded cannot overwrite the content a newer, sealed entry
points at, nor can a collection of one commit's garbage delete another's.

Without fencing (swamp's behaviour) the same writes are made unconditionally.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import error_code, is_condition_failed
from harness.core.clock import Clock, SystemClock
from harness.core.work import Work, for_fencing, recording
from harness.datastore.backends.base import AfterRelease, FileMeta, PullResult, partition_of
from harness.datastore.backends.s3.choose import choose
from harness.datastore.backends.s3.commit import S3Commits
from harness.datastore.backends.s3.index import (
    ALL,
    DATASTORE_LOCK,
    INDEX_KINDS,
    META_RETRIES,
    S3Cursor,
    Shard,
    StaleHead,
    content_rel,
    entries_of,
    head_rel,
    in_scope,
    shard_of,
    shard_rel,
)
from harness.datastore.backends.s3.locks import S3LockStore
from harness.datastore.backends.s3.objects import S3Objects
from harness.datastore.backends.s3.swamp import PREPARE_BATCH, model_shards, of_model
from harness.datastore.backends.s3.swamp_lock import SwampS3LockStore
from harness.datastore.errors import ConfigError, ContentMissingError, FencedError
from harness.datastore.lock import LockGrant
from harness.datastore.paths import check_bucket_name
from harness.datastore.variant import Variant


class S3Backend(S3Commits, AfterRelease):
    name = "s3"

    def __init__(self, client: Any, bucket: str, index: str = "sharded", *, prefix: str = "",
                 clock: Clock | None = None, tags: dict[str, str] | None = None, create: bool = True,
                 read_concurrency: int = 8, executor: Executor | None = None,
                 variant: Variant | None = None) -> None:
        if index not in INDEX_KINDS:
            raise ConfigError(f"unknown S3 index kind {index!r}: choose one of {', '.join(INDEX_KINDS)}")
        self.client, self.bucket, self.index = client, check_bucket_name(bucket), index
        self.clock = clock or SystemClock()
        self.tags, self.create = tags or {}, create
        self.variant = variant = variant or Variant()
        modes = choose(variant)  # the one choice of this backend's system (choose.py)
        self.mode, self.swamp = modes.mode, modes.swamp
        # swamp's retries: its sync layer's around index and content requests; none around the lock's
        self.objects = S3Objects(client, bucket, prefix, retry=modes.retry(self.clock))
        # a run that is swamp's own (fencing = false, bookkeeping = "swamp"): swamp's lock requests (swamp_lock.py)
        self.own = variant.swamp_own
        self.lock_store: S3LockStore | SwampS3LockStore = modes.lock_store(S3Objects(client, bucket, prefix),
                                                                           self.clock)
        # threads by default; a greenlet pool where threads are gevent's (see DynamoBackend)
        self._pool = executor or ThreadPoolExecutor(max_workers=read_concurrency, thread_name_prefix="s3-pool")
        self._guard = threading.Lock()
        self._mutex: dict[str, threading.Lock] = {}  # per grant: its commits run one at a time

    def datastore_lock_key(self) -> str:
        return DATASTORE_LOCK

    def global_lock_key(self, namespace: str | None) -> str:
        """The global lock of ``global_lock = "one-item"`` (a stored copy of core, 68a1128): ``.datastore.lock``,
        under the namespace when there is one. (swamp-club/swamp 06b6147 passes ``.locks/<ns>.lock``.)"""
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
        with for_fencing(work) as fw:  # (swamp's S3 lock writes no fence into its index)
            for _ in range(META_RETRIES + 1):
                if cur.head is None:
                    self._read_head(cur, fw)
                doc = dict(cur.head or {})
                if int(doc.get("fence", 0)) > grant.fence:
                    raise FencedError(f"lock {grant.key} (fence {grant.fence}) is stale: the index head carries "
                                      f"fence {doc['fence']}")
                doc.update(fence=grant.fence, commitSeq=int(doc.get("commitSeq", 0)), shards=doc.get("shards", {}))
                try:
                    etag = self.objects.put(cur.head_rel or "", json.dumps(doc).encode(), fw, if_match=cur.etag,
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
        with for_fencing(work) as fw:
            for _ in range(META_RETRIES + 1):
                if cur.head is None:
                    self._read_head(cur, fw)
                doc = dict(cur.head or {})
                fences = dict(doc.get("modelFences", {}))
                if int(fences.get(partition, 0)) >= grant.fence:
                    raise FencedError(f"lock {grant.key} (fence {grant.fence}) is stale: a newer holder of the "
                                      f"model was granted first")
                fences[partition] = grant.fence
                doc.update(modelFences=fences, commitSeq=int(doc.get("commitSeq", 0)), shards=doc.get("shards", {}))
                try:
                    etag = self.objects.put(cur.head_rel or "", json.dumps(doc).encode(), fw, if_match=cur.etag,
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
            raise StaleHead(ref)
        entries = entries_of(got[0])
        work.items_read += len(entries)
        work.queries += 1
        return entries

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        """The entries of ``paths`` as readers see them (swamp's S3 push looks nothing up: ``modes.py``)."""
        return self.mode.lookup(lambda: self._lookup(paths, work))

    def _lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
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
                for part in {self.shard_of(r, ns) for r in rels}:
                    if part in shards:
                        entries = self._shard_entries(cur, part, shards[part], work)
                        out.update({r: entries[r] for r in rels if r in entries})
        return out

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
             lock_key: str | None = None, cursor: dict | None = None,
             grant: LockGrant | None = None) -> PullResult:
        """What changed since the worker's cursor: the head (unless its own fence write is current) and the
        shards whose keys moved; their entries against what the cursor read before give changes and removals.

        A scoped pull (``partitions``: the harness's model partitions) reads the shards of those models;
        with ``command_requests = "swamp"`` it makes swamp's requests too (``_command_reads``)."""
        cur = S3Cursor.of(cursor, self._head_rel(lock_key, namespace))
        wanted = set(partitions) if partitions is not None else None
        swamp_scoped = wanted is not None and self.swamp.command_reads
        with recording(work):
            if swamp_scoped:
                self.objects.head_bucket(work)  # swamp's credential preflight: once per command
            for _ in range(META_RETRIES):
                res = self._pull_once(cur, namespace, wanted, grant, swamp_scoped, work)
                if res is not None:
                    return res
            raise FencedError(f"index of {namespace or 'the datastore'} kept changing during the pull")

    def _pull_once(self, cur: S3Cursor, namespace: str | None, wanted: set[str] | None, grant: LockGrant | None,
                   swamp_scoped: bool, work: Work) -> PullResult | None:
        """One attempt: the head (unless its own fence write is current), the wanted shards, taken in; None if a
        shard was superseded (and deleted) after the head was read: try again."""
        if not (grant is not None and cur.fresh_for == grant.nonce and cur.etag):
            self._read_head(cur, work)  # (swamp's scoped pull: its _meta.json probe)
        doc = cur.head or {}
        seq = int(doc.get("commitSeq", 0))
        if wanted is None and cur.seq is not None and seq == cur.seq:
            return PullResult([], seq, short_cut=True)
        want = self._wants(wanted, namespace)
        shards = {p: r for p, r in doc.get("shards", {}).items() if in_scope(p, namespace) and want(p)}
        try:
            pre = self._command_reads(cur, shards, wanted or set(), namespace, work) if swamp_scoped else {}
            read = {p: pre[p] if p in pre else self._shard_entries(cur, p, r, work) for p, r in shards.items()}
        except StaleHead:
            cur.fresh_for = None  # a shard was superseded (and deleted) after the head was read
            return None
        res = _take_in(cur, read, shards, namespace, wanted, seq)
        for p in [p for p in cur.shards if p not in shards and in_scope(p, namespace) and want(p)]:
            res.removed += [r for r in cur.shards.pop(p).view if _mine(r, namespace, wanted)]
        if wanted is None:
            cur.seq = seq
        return res

    def shard_of(self, rel: str, namespace: str | None) -> str:
        return shard_of(self.index, rel, namespace, self.swamp.shards)

    def _wants(self, wanted: set[str] | None, namespace: str | None) -> Callable[[str], bool]:
        """Which shards a pull of ``wanted`` models reads (every one when unscoped)."""
        if wanted is None:
            return lambda p: True
        if self.swamp.swamp_shards and self.index == "sharded":
            return lambda p: any(of_model(p, w, namespace) for w in wanted)
        return lambda p: p in wanted or p == ALL

    def _command_reads(self, cur: S3Cursor, shards: dict[str, str], wanted: set[str], namespace: str | None,
                       work: Work) -> dict[str, dict[str, FileMeta]]:
        """swamp's scoped pull: each model's three shards by GET, whatever this worker holds (a missing one
        answers 404, as swamp's does); its ``data--`` shard missing (a new model): the monolith's GET, and
        when that is missing too, a LIST of the namespace and a PUT of the monolith built from it. Returns the
        entries of the shards read."""
        out: dict[str, dict[str, FileMeta]] = {}
        for w in sorted(wanted):
            keys = model_shards(w, namespace) if self.swamp.swamp_shards else (w,)
            for i, part in enumerate(keys):
                ref = shards.get(part)
                got = self.objects.get_json(ref or shard_rel(cur.head_rel or "", part, "absent"), work)
                if ref is not None and got is None:
                    raise StaleHead(ref)
                if got is not None:
                    out[part] = entries_of(got[0])
                    work.items_read += len(out[part])
                elif i == 0:
                    self._monolith_fallback(namespace, work)
        return out

    def _monolith_fallback(self, namespace: str | None, work: Work) -> None:
        """swamp's pull when a model's data shard is missing: GET ``[<ns>/].datastore-index.json``; 404: LIST
        the namespace (every object) and PUT the index it makes of what is not the index's or a lock's (none
        when there is nothing)."""
        root = f"{namespace}/" if namespace else ""
        rel = f"{root}.datastore-index.json"
        if self.objects.get(rel, work) is not None:
            return
        keys = [k[len(root):] for k, _ in self.objects.list(root, work)]
        keys = [k for k in keys if not k.startswith("_index/") and not k.endswith(".lock")]
        if keys:
            doc = {"version": 1, "entries": {k: {"key": k} for k in keys}}
            self.objects.put(rel, json.dumps(doc).encode(), work)

    def prepare_reads(self, namespace: str | None, paths: Sequence[str], work: Work, *,
                      lock_key: str | None = None) -> int:
        """The push's prepare reading the index (``prepare_read``): ``all``, swamp's ``assembleIndexFromShards``
        (the head, then every shard of the namespace, ``PREPARE_BATCH`` at a time, on every push); ``dirty``
        (a fork's: the head and the shards of the dirty paths); ``none``. Requests made, returns entries read."""
        mode = self.swamp.prepare_read
        if mode == "none":
            return 0
        cur = S3Cursor(self._head_rel(lock_key, namespace))
        with recording(work):
            self._read_head(cur, work)
            shards = {p: r for p, r in (cur.head or {}).get("shards", {}).items() if in_scope(p, namespace)}
            if mode == "dirty":
                dirty = {self.shard_of(r, namespace) for r in paths}
                shards = {p: r for p, r in shards.items() if p in dirty}
            counts: list[int] = []

            def read(ref: str, w: Work) -> None:
                got = self.objects.get_json(ref, w)
                counts.append(len(entries_of(got[0])) if got else 0)

            self._batches(read, sorted(shards.values()), work, PREPARE_BATCH)
        work.items_read += sum(counts)
        return sum(counts)

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
                domains[rel] = {"seq": int(doc.get("commitSeq", 0)), "fence": int(doc.get("fence", 0)),
                                "sealed": doc.get("sealed", {})}  # the fate record (fenced commits only)
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


def _mine(rel: str, namespace: str | None, wanted: set[str] | None) -> bool:
    """Is the entry the pull's: in its namespace and (a scoped pull) in its models' partitions?"""
    return rel.startswith(f"{namespace}/" if namespace else "") and (
        wanted is None or partition_of(rel, namespace) in wanted)


def _take_in(cur: S3Cursor, read: dict[str, dict[str, FileMeta]], shards: dict[str, str], namespace: str | None,
             wanted: set[str] | None, seq: int) -> PullResult:
    """The shards read against what the cursor held of them: changes, removals, shards new to it (read whole);
    the cursor takes them in (a scoped read: only its models' entries change in the view)."""
    changed: list[FileMeta] = []
    removed: list[str] = []
    full: list[str] = []
    for p, entries in read.items():
        before = cur.shards.get(p)
        old = before.view if before else {}  # what the view holds of it (a scoped read: its models')
        if before is None:
            full.append("*" if p == ALL and wanted is None else p)
        changed += [m for r, m in entries.items() if _mine(r, namespace, wanted) and old.get(r) != m]
        removed += [r for r in old if _mine(r, namespace, wanted) and r not in entries]
        taken = entries if wanted is None else {**{r: m for r, m in old.items() if not _mine(r, namespace, wanted)},
                                                **{r: m for r, m in entries.items() if _mine(r, namespace, wanted)}}
        cur.shards[p] = Shard.of(shards[p], entries, taken)
    return PullResult(changed, seq, removed=removed, full=full)
