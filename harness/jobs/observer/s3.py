"""The observer's reads of an S3 datastore, one group at a time (``layout.py`` says where things are).

Groups:

- ``locks``: every commit domain's lock object (held, by whom) and each namespace's catalog export
  (a HEAD: its size);
- ``index:<head>``: the index head (its ``commitSeq``), one LIST of its shards' directory (each shard's
  size and ETag), and a GET of each shard whose ETag changed since the last sample (its entries): the
  harness writes shards under new keys and the head names the current ones; swamp rewrites
  ``_index/<partition>.json`` in place, so its shards are the listed ones. A monolith is the head itself
  (swamp's, its entries inside) or the one shard the head names (the harness's).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_not_found
from harness.jobs.observer.layout import (
    Layout,
    export_rel,
    holder_of,
    in_scope,
    index_heads,
    lock_keys,
    shard_dir,
    shard_name,
)
from harness.jobs.observer.reads import Obs, Sender
from harness.jobs.observer.reads import response_length as _length

HEAD_TRIES = 3


class Superseded(Exception):
    """A shard the head named is gone: the head moved on while the observer read it."""


class S3Reader:
    def __init__(self, client: Any, layout: Layout, send: Sender, clock: Any) -> None:
        self.client, self.layout, self.send, self.clock = client, layout, send, clock
        self.bucket, self.prefix = layout.bucket, layout.prefix
        self.heads = dict(index_heads(layout))
        self._shards: dict[str, tuple[str, dict[str, list]]] = {}  # key -> (ETag, its entries)

    def groups(self) -> list[str]:
        return ["locks", *[f"index:{h}" for h in self.heads]]

    def read(self, group: str) -> list[Obs]:
        return self._locks() if group == "locks" else self._index(group[len("index:"):])

    # ---- requests -----------------------------------------------------------------------
    def _get(self, rel: str) -> tuple[bytes, str] | None:
        def call() -> dict:
            out = self.client.get_object(Bucket=self.bucket, Key=self.prefix + rel)
            out["_body"] = out["Body"].read()
            return out

        try:
            out = self.send.send(call, lambda o: 0.0, lambda o: len(o["_body"]))
        except ClientError as e:
            if is_not_found(e):
                return None
            raise
        return out["_body"], out.get("ETag", "")

    def _head(self, rel: str) -> int | None:
        try:
            out = self.send.send(lambda: self.client.head_object(Bucket=self.bucket, Key=self.prefix + rel),
                                 lambda o: 0.0, lambda o: 0)
        except ClientError as e:
            if is_not_found(e) or e.response.get("Error", {}).get("Code") in ("404", "NotFound"):
                return None
            raise
        return int(out.get("ContentLength", 0))

    def _list(self, rel_prefix: str) -> dict[str, tuple[int, str]]:
        """Relative key -> (size, ETag) of every object under ``rel_prefix``."""
        found: dict[str, tuple[int, str]] = {}
        kw: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.prefix + rel_prefix}
        while True:
            out = self.send.send(lambda kw=kw: self.client.list_objects_v2(**kw), lambda o: 0.0, _length)
            for o in out.get("Contents", []):
                found[o["Key"][len(self.prefix):]] = (int(o.get("Size", 0)), o.get("ETag", ""))
            if not out.get("IsTruncated"):
                return found
            kw["ContinuationToken"] = out["NextContinuationToken"]

    # ---- groups ---------------------------------------------------------------------------
    def _locks(self) -> list[Obs]:
        out: list[Obs] = []
        now = int(self.clock.now() * 1000)
        for key in lock_keys(self.layout):
            got = self._get(key)
            try:
                record = json.loads(got[0]) if got else {}
            except ValueError:
                record = {}
            holder = holder_of(record if isinstance(record, dict) else {}, now)
            out.append(("lock_held", key, int(holder is not None)))
            if holder is not None:
                out.append(("lock_holder", key, holder))
        for ns in self.layout.scopes:
            size = self._head(export_rel(ns))
            if size is not None:
                out.append(("export_bytes", export_rel(ns), size))
        return out

    def _entries(self, key: str, etag: str) -> dict[str, list]:
        """A shard's entries, read again only when its ETag changed; ``Superseded`` when it is gone."""
        have = self._shards.get(key)
        if have is not None and have[0] == etag and etag:
            return have[1]
        got = self._get(key)
        if got is None:
            raise Superseded(key)
        entries = json.loads(got[0]).get("entries") or {}
        self._shards[key] = (got[1], entries)
        return entries

    def _index(self, head: str) -> list[Obs]:
        """The head and its shards; read again from the head when a shard it named is gone (a commit swapped
        the head and deleted what it superseded while these reads ran), a few times."""
        for attempt in range(HEAD_TRIES):
            try:
                return self._index_once(head)
            except Superseded:
                if attempt == HEAD_TRIES - 1:
                    raise
        return []

    def _index_once(self, head: str) -> list[Obs]:
        got = self._get(head)
        if got is None:
            return []  # nothing committed under this head yet
        doc = json.loads(got[0])
        out: list[Obs] = [("index_seq", head, int(doc.get("commitSeq", doc.get("seq", 0)) or 0))]
        listed = self._list(shard_dir(head))
        shards: dict[str, dict[str, list]] = {}
        sizes = len(got[0])
        if isinstance(doc.get("entries"), dict):  # swamp's monolith: the entries are the head's own
            shards[shard_name(head, head, "_all")] = doc["entries"]
        elif isinstance(doc.get("shards"), dict):  # the harness's head names each partition's current shard
            for part, key in doc["shards"].items():
                size, etag = listed.get(key, (0, ""))
                shards[shard_name(head, key, part)] = self._entries(key, etag)
                sizes += size
                out.append(("shard_bytes", shard_name(head, key, part), size))
        else:  # swamp's sharded index: every object beside the head (rewritten in place: none goes away)
            for key, (size, etag) in sorted(listed.items()):
                if key == head or not key.endswith(".json"):
                    continue
                try:
                    shards[shard_name(head, key)] = self._entries(key, etag)
                except Superseded:
                    continue
                sizes += size
                out.append(("shard_bytes", shard_name(head, key), size))
        current = set(listed)
        for key in [k for k in self._shards if k.startswith(shard_dir(head)) and k not in current]:
            del self._shards[key]  # a shard replaced or gone: its cached entries with it
        for name, entries in shards.items():
            out.append(("shard_entries", name, len(entries)))
        out += [("shards", head, len(shards)), ("index_bytes", head, sizes)]
        every = {rel: e for entries in shards.values() for rel, e in entries.items()}
        for ns in self.heads[head]:
            out.append(("index_entries", ns or "", sum(1 for rel in every if in_scope(rel, ns))))
            rel = export_rel(ns)
            if rel in every and isinstance(every[rel], list) and every[rel]:
                out.append(("export_bytes", rel, int(every[rel][0])))
        return out
