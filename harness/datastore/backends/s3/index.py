"""The S3 index's objects and what a worker knows of them (pure: no requests here).

Per commit domain (the lock: a namespace's, or the datastore's) one *head*
object, ``[<ns>/]_index/_meta.json`` (sharded) or ``[<ns>/].datastore-index.json``
(monolith): ``commitSeq``, the ``fence`` of the newest holder (written when it
was granted the lock, so a seal conditioned on the head's ETag is conditioned
on still holding the lock), and ``shards``: the key of each partition's
current shard object. Shards are copy-on-write, under keys never reused; the
monolith is one shard (``_all``) holding every entry, rewritten whole on every
commit as swamp's ``.datastore-index.json`` is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.core.clock import iso, ms_of
from harness.datastore.backends.base import FileMeta, partition_of
from harness.datastore.backends.s3.swamp import ROOT, swamp_shard
from harness.datastore.variant import S3Index, S3Shards, values

INDEX_KINDS = values(S3Index)
META_RETRIES = 3
ALL = "_all"  # the monolith's one shard
DATASTORE_LOCK = ".datastore.lock"


class StaleHead(Exception):
    """The head a reader or commit started from is no longer current (a shard it names is gone): read it again."""


def head_rel(kind: str, lock_key: str | None, namespace: str | None) -> str:
    """The head of the domain a lock guards: the datastore's (root) or a namespace's."""
    root = "" if lock_key == DATASTORE_LOCK or not namespace else f"{namespace}/"
    return root + ("_index/_meta.json" if kind == "sharded" else ".datastore-index.json")


def shard_rel(head: str, part: str, cid: str) -> str:
    """A new, never reused key for one version of a partition's shard, beside its head."""
    if head.endswith(".datastore-index.json"):
        return f"{head[:-len('.datastore-index.json')]}.datastore-index/{cid}.json"
    base = head[:-len("_meta.json")]  # "[<ns>/]_index/"
    root = base[:-len("_index/")]
    local = part[len(root):] if root and part.startswith(root) else part
    return f"{base}{local}.{cid}.json"


def shard_of(kind: str, rel: str, namespace: str | None, shards: str = "model") -> str:
    """The shard holding ``rel``'s entry: the monolith's one, the model's, or swamp's key for it (``swamp.py``)."""
    if kind == "monolith":
        return ALL
    if shards == S3Shards.SWAMP:
        return swamp_shard(rel, namespace)
    return partition_of(rel, namespace) or ROOT


def in_scope(part: str, namespace: str | None) -> bool:
    """Is this shard any of ``namespace``'s business (a datastore head holds every namespace's)?"""
    return part in (ALL, ROOT) or not namespace or part.startswith(f"{namespace}/")


ENTRY_FORMS = values(S3Shards)  # a shard entry as the harness writes it, or at swamp's size (s3_shards)
DIGEST_HEX = len(FileMeta.digest_of(b""))


def _entry(rel: str, e: list | dict) -> FileMeta:
    if isinstance(e, list):  # [size, digest, updated, version] and the writer's commit id when fenced
        return FileMeta(rel, e[0], e[1], e[2], e[3], e[4] if len(e) > 4 else "")
    return FileMeta(rel, e["size"], e["sha256"][-DIGEST_HEX:], ms_of(e["lastModified"]), e.get("v", 1),
                    e.get("cid", ""))


def entries_of(doc: dict) -> dict[str, FileMeta]:
    """A shard's entries (either form), with the content's writer id when it has one."""
    return {rel: _entry(rel, e) for rel, e in doc.get("entries", {}).items()}


def shard_doc(entries: dict[str, FileMeta], form: str = "model", **extra: Any) -> bytes:
    """A shard's body. ``"model"``: ``[size, digest, time, version]`` an entry. ``"swamp"``: at the size of
    swamp's ``IndexEntry`` (``{key, size, lastModified, localMtime, sha256}``, ``s3_cache_sync.ts``,
    swamp-club/swamp-extensions 33f4075, ``JSON.stringify`` without spaces): the path twice, two ISO times (the
    harness has no local mtime: the commit time again) and 64 hex digits (the harness's digest, zero-padded),
    plus ``v`` (the harness's version, which swamp does not write) and, fenced, ``cid`` (the content's writer):
    about 2.5 times the harness's own."""
    if form == S3Shards.SWAMP:
        return json.dumps({**extra, "entries": {r: {
            "key": r, "size": m.size, "lastModified": iso(m.updated_at_ms), "localMtime": iso(m.updated_at_ms),
            "sha256": m.digest.rjust(64, "0"), "v": m.version, **({"cid": m.content_id} if m.content_id else {})}
            for r, m in entries.items()}},
            separators=(",", ":")).encode()
    return json.dumps({**extra, "entries": {
        r: [m.size, m.digest, m.updated_at_ms, m.version, *([m.content_id] if m.content_id else [])]
        for r, m in entries.items()}}).encode()


def content_rel(meta: FileMeta) -> str:
    """Where one version of a file's content lives: ``<path>@v<version>.<digest>``, and fenced ``.<id>`` of the
    commit whose writer uploaded it (picked before the upload), so no two commits write one content object."""
    suffix = f".{meta.content_id}" if meta.content_id else ""
    return f"{meta.rel_path}@v{meta.version}.{meta.digest}{suffix}"


def same_content(a: FileMeta, b: FileMeta) -> bool:
    """Do two entries point at the same content object?"""
    return content_rel(a) == content_rel(b)


@dataclass
class Shard:
    """A shard object as read (``entries``, all of them: a commit rewrites it from these) and what of it the
    worker's view took in (``taken``; None: all of it). A scoped pull of a shard holding several models (the
    monolith, swamp's shards) takes in only its models' entries: the next pull diffs against ``taken``."""

    ref: str
    entries: dict[str, FileMeta]
    taken: dict[str, FileMeta] | None = None

    @property
    def view(self) -> dict[str, FileMeta]:
        return self.entries if self.taken is None else self.taken

    @staticmethod
    def of(ref: str, entries: dict[str, FileMeta], taken: dict[str, FileMeta]) -> Shard:
        return Shard(ref, entries, None if taken is entries or taken == entries else taken)


@dataclass
class S3Cursor:
    """A worker's knowledge of one head: the document and ETag it last read or wrote, and the shards it read."""

    head_rel: str | None = None
    head: dict | None = None
    etag: str | None = None
    fresh_for: str | None = None  # the grant (nonce) whose fence write produced ``etag``
    seq: int | None = None  # the sequence its view is complete up to
    shards: dict[str, Shard] = field(default_factory=dict)

    @staticmethod
    def of(cursor: dict | None, rel: str) -> S3Cursor:
        if cursor is None:
            return S3Cursor(rel)
        got = cursor.get("s3")
        if got is None or got.head_rel != rel:
            got = cursor["s3"] = S3Cursor(rel)
        return got

    def know(self, head: dict, etag: str | None) -> None:
        self.head, self.etag = head, etag
