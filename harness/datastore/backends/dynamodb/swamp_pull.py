"""swamp's DynamoDB reads, for runs that are swamp's own (``choose.py``: ``SwampOwnPull``): eventually consistent, and
on swamp's own items only (``sync.ts`` ``pull``, ``queryAllPartitions``, ``fetchChunks``, webframp/swamp-extensions
a929b7a).

- An unscoped pull reads ``SYNCSTATE#global`` / ``SEQ`` (``getRemoteSeq``, a
  GetItem) and stops there when it has not moved since the worker's last
  unscoped pull; else the 13 system partitions ``FILE#_system/<subdir>``
  (``gsiSystemPartitions``: every subdirectory of ``DATASTORE_SUBDIRS`` but
  ``data``), then ``PARTITIONS#registry`` / ``LIST`` (a GetItem) and every
  partition it lists, each a GSI Query of ``gsi1sk`` past the watermark, all
  concurrently. The harness's own registry and lock-item sequence are not read
  (a swamp-own run writes neither).
- A scoped pull reads no sequence and queries the model's partitions past the
  watermark. (swamp's queries ``FILE#<type>/<id>``; with ``gsi = "swamp"`` and a
  namespace the model's files are on ``FILE#_system/<ns>`` instead, which the
  harness queries so its checks still hold: docs/swamp-today.md.)
- A file's content is a Query of its chunks' prefix (``begins_with``), not a
  GetItem by key; nothing sets ``ConsistentRead`` (half the read units of a
  strongly consistent read, and a read may miss a write that just landed).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.item_size import item_size
from harness.core.work import Work, recording
from harness.datastore.backends.base import FileMeta, PullResult
from harness.datastore.backends.dynamodb.bookkeeping import REGISTRY, REGISTRY_ITEM
from harness.datastore.backends.dynamodb.cursor import DynamoCursor
from harness.datastore.backends.dynamodb.items import chunk_count, gsi_keys, in_partition, resolve, s_
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.backends.dynamodb.swamp_commit import SEQ_KEY
from harness.datastore.errors import ContentMissingError

# swamp's DATASTORE_SUBDIRS without "data": the system partitions every unscoped pull queries
SYSTEM_SUBDIRS = ("definitions-evaluated", "workflows-evaluated", "outputs", "workflow-runs", "secrets", "bundles",
                  "vault-bundles", "driver-bundles", "report-bundles", "audit", "telemetry", "logs", "files")
ROOTS = ("data", "models", "outputs")  # the harness's top-level directories without a namespace


def remote_seq(be: DynamoPort, work: Work) -> int:
    """``getRemoteSeq``: the commit sequence, 0 before the first push."""
    with recording(work):
        out = be.client.get_item(TableName=be.table, Key=SEQ_KEY, ProjectionExpression="seq")
    return int((out.get("Item") or {}).get("seq", {}).get("N", 0))


def registry_keys(be: DynamoPort, work: Work) -> list[str]:
    """The GSI keys swamp's registry lists (``FILE#`` values as they are; a harness partition name, from
    ``registry_adds = "one"``, by the keys its files land on)."""
    with recording(work):
        out = be.client.get_item(TableName=be.table, Key=REGISTRY)
    item = out.get("Item") or {}
    if item:
        work.items_read += 1
        work.item_bytes[REGISTRY_ITEM] = max(work.item_bytes.get(REGISTRY_ITEM, 0), item_size(item))
    keys: dict[str, None] = {}
    for v in sorted((item.get("partitions") or {}).get("SS", [])):
        for k in ([v[len("FILE#"):]] if v.startswith("FILE#") else gsi_keys(be.gsi_layout, v)):
            keys.setdefault(k, None)
    return list(keys)


def _since(be: DynamoPort, key: str, after: int, work: Work) -> list[dict]:
    """One GSI partition's entries past ``after`` (ms; -1: all of them)."""
    return be._query({"KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :s",
                      "ExpressionAttributeValues": {":p": s_(f"FILE#{key}"), ":s": s_(f"{after + 1:013d}")}}, work)


def _mine(items: Iterable[dict], namespace: str | None) -> list[dict]:
    """The items of this namespace (without one: of no namespace), each once."""
    seen: dict[tuple[str, str], dict] = {}
    for i in items:
        rel = i["relPath"]["S"]
        ok = rel.startswith(f"{namespace}/") if namespace else rel.split("/", 1)[0] in ROOTS
        if ok:
            seen.setdefault((i["pk"]["S"], i["sk"]["S"]), i)
    return list(seen.values())


def read_all(be: DynamoPort, namespace: str | None, after: int, work: Work) -> list[dict]:
    """``queryAllPartitions``: the system partitions, the registry and every partition it lists, past ``after``."""
    with recording(work):
        if be.gsi_layout == "legacy":  # before the GSI fix: one FILE partition holds everything
            items = be._query({"KeyConditionExpression": "gsi1pk = :p",
                               "ExpressionAttributeValues": {":p": s_("FILE")}}, work)
            return _mine(items, namespace)
        system = be.parallel(lambda k, w: _since(be, k, after, w), [f"_system/{d}" for d in SYSTEM_SUBDIRS], work)
        listed = be.parallel(lambda k, w: _since(be, k, after, w), registry_keys(be, work), work)
    return _mine([i for got in [*system, *listed] for i in got], namespace)


def own_pull(be: DynamoPort, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             cursor: dict | None, work: Work) -> PullResult:
    """What changed since the watermark, read as swamp's pull reads it (see the module's docstring)."""
    cur = DynamoCursor.of(cursor)
    with recording(work):
        if partitions is None:
            seq = remote_seq(be, work)
            if cur.seq is not None and seq <= cur.seq:
                return PullResult([], seq, short_cut=True)
            first = cur.seq is None
            items = read_all(be, namespace, -1 if first else since_ms, work)
            full = ["*"] if first else []
        else:
            seq, full, items = cur.seq or 0, [], []
            for p in partitions:
                seen = cur.parts.get(p)
                after = -1 if seen is None else since_ms
                if seen is None:
                    full.append(p)
                got = be.parallel(lambda k, w, after=after: _since(be, k, after, w), gsi_keys(be.gsi_layout, p),
                                  work)
                items += [i for g in got for i in g if in_partition(i, p)]
                cur.parts[p] = seq
    return be._absorb(resolve(items, {}), cur, namespace, seq, partitions is not None, full, [])


def fetch_chunks(be: DynamoPort, meta: FileMeta, work: Work) -> bytes:
    """``fetchChunks``: a Query of the version's chunk prefix (eventually consistent), its chunks in order."""
    prefix = f"CHUNK#v{meta.version}#{meta.digest}#"
    kwargs = {"TableName": be.table, "KeyConditionExpression": "pk = :p AND begins_with(sk, :c)",
              "ExpressionAttributeValues": {":p": s_(f"FILE#{meta.rel_path}"), ":c": s_(prefix)}}
    items: list[dict] = []
    with recording(work):
        while True:
            out = be.client.query(**kwargs)
            items += out.get("Items", [])
            if "LastEvaluatedKey" not in out:
                break
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]
    work.items_read += len(items)
    want = chunk_count(meta.size)
    if len(items) < want:
        raise ContentMissingError(f"content of {meta.rel_path} (version {meta.version}) is missing "
                                  f"{want - len(items)} of its {want} chunks")
    return b"".join(i["data"]["B"] for i in sorted(items, key=lambda i: i["sk"]["S"])[:want])
