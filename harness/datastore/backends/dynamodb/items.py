"""The DynamoDB backend's items: keys, attribute codecs, and which version of an entry a reader sees.

Pure functions and small value classes: nothing here sends a request.

Items (pk / sk):

- lock ``LOCK#<key>`` / ``LOCK``: the holder's record, the fencing counter
  ``fence``, the commit sequence ``seq`` and ``pending`` (the ids of commits
  that may still be writing: their entries are invisible); two-phase, fenced:
  ``m:<partition>``, the newest fence of each model's own lock, which the seal
  of a commit of that model must match; with the legacy layout (no registry)
  ``h:<namespace>``, the digest of the namespace's sealed entries (see
  ``registry.py``), which every seal moves by what its commit changed, and
  ``z:<namespace>``, the sequence of its newest delete or prune (a two-phase
  seal asserts the one its scoped pull saw);
- index entry, fenced: ``FILE#<relPath>`` / ``V#<cid>``, one item per version,
  never overwritten: ``s`` (the sequence it seals at), ``cid``, ``fence``,
  ``dom`` (the lock key whose sequence governs it), ``ck`` (its content's
  writer id), ``del`` on a tombstone, ``fg`` on a prune's (its partition is
  removed whole: it counts in no digest);
- index entry, unfenced (swamp's own): ``FILE#<relPath>`` / ``META``, rewritten
  in place; a delete rewrites it as a tombstone (``del``), as swamp's extension
  keeps tombstones;
- content chunks ``FILE#<relPath>`` / ``CHUNK#v<N>#<digest>#<content id>#<7-digit index>``
  (256 KB): fenced, the content id is the id of the commit whose writer uploaded it, picked before the
  upload (``ck`` on the entry), so no two commits ever write one chunk key, not even a re-creation with the
  same path, version and bytes; unfenced (swamp's own) ``CHUNK#v<N>#<digest>#<7-digit index>``, swamp's key
  plus the digest;
- a blob outside the index (the catalog export): ``FILE#<relPath>`` / ``BLOB``
  (its size and chunk count) and ``BLOB#<7-digit index>`` chunks, rewritten in place;
- partition registry ``PARTITIONS#registry#<ns>`` (or ``PARTITIONS#harness``) / ``LIST``: per partition,
  ``c:<partition>`` (the last sequence that touched it), ``b:<partition>``
  (the sequence it was born at) and, fenced, ``r:<partition>|<cid>``, each
  commit's record of what it left the partition holding (``registry.py``: a
  pull checks its view against the newest sealed one), so
  a pull queries only what changed and learns which partitions were removed or
  re-created; ``forgot``, the sequence of the newest prune that removed
  partitions (a commit older than it may not list a partition again). A namespace's registry
  has a partition key of its own: every commit writes its namespace's
  registry, and one key for all of them would be a hot key of the harness's
  making (a key takes ~1,000 WCU/s). Without a namespace it is
  ``PARTITIONS#harness``: swamp's registry, ``PARTITIONS#registry`` / ``LIST``,
  is swamp's bookkeeping's alone (``bookkeeping.py``).

GSI ``gsi1``: ``legacy`` puts every entry under ``gsi1pk = "FILE"`` (sort key
the path); ``per-model`` under ``FILE#<partition>``, sorted by the version's
sequence (fenced) or by ``updatedAt`` (unfenced, swamp's key), so "changed
since" is a key condition. ``swamp`` is per-model as swamp's extension keys it
(``gsiFilePartition`` in its ``keys.ts``): ``FILE#<type>/<id>`` for
``data/<type>/<id>/...`` and ``FILE#_system/<first segment>`` for anything else,
so a namespaced path (``<ns>/data/...``) lands on ``FILE#_system/<ns>``: every
file of a namespace on one GSI key. A reader of a harness partition queries
the keys its files land on (``gsi_keys``) and keeps its own items (swamp's own
scoped pull queries ``FILE#<type>/<id>`` and finds nothing; the harness reads
what is there, so its checks still hold).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.datastore.backends.base import FileMeta, partition_of
from harness.datastore.variant import Gsi, values

GSI_LAYOUTS = values(Gsi)
PER_MODEL = (Gsi.PER_MODEL, Gsi.SWAMP)  # the layouts with a partition per model (and a registry of them)
GSI_NAME = "gsi1"
TABLE_KEYS = ("pk", "sk")
GSI_KEYS = {GSI_NAME: ("gsi1pk", "gsi1sk")}  # plain names: the load layer registers them for unit accounting
CHUNK_BYTES = 256 * 1024
BATCH_GET_MAX = 100
BATCH_WRITE_MAX = 25
META_SK = "META"
VERSION_PREFIX = "V#"
BLOB_SK = "BLOB"
SEQ_DIGITS = 12
LAST_COMMIT = "lastc"  # on a lock item: the newest sealed commit, ``<cid>|<items>|<path>`` (older tables)
MODEL_FENCE = "m:"  # on a commit domain's lock item: ``m:<partition>``, the newest fence of that model's lock
NS_DIGEST = "h:"  # on a lock item (legacy layout): ``h:<namespace>``, the digest of the namespace's sealed entries
NS_EPOCH = "z:"  # on a lock item (legacy layout): ``z:<namespace>``, the sequence of its newest delete or prune
FORGOT = "forgot"  # on a registry item: the sequence of the newest prune that removed partitions from it
NEWEST = "k:"  # registry: ``k:<partition>`` = ``<cid>|<items>|<path>``, the newest fenced commit that touched it
OWNER_ITEM_KEY = {"pk": {"S": "HARNESS#owner"}, "sk": {"S": "TAGS"}}


def s_(v: str) -> dict:
    return {"S": v}


def n_(v: int | float) -> dict:
    return {"N": str(v)}


def num(item: dict, name: str, default: int = 0) -> int:
    v = item.get(name)
    return int(v["N"]) if v else default


def chunk_count(size: int) -> int:
    return max(1, -(-size // CHUNK_BYTES))


def chunk_key(version: int, digest: str, index: int, content_id: str = "") -> str:
    """A content chunk's sort key: the version, its digest, the id of the commit that wrote it (fenced), the index."""
    return f"CHUNK#v{version}#{digest}#{content_id}#{index:07d}" if content_id else \
        f"CHUNK#v{version}#{digest}#{index:07d}"


def chunk_owner(sk: str) -> tuple[int, str, str, str]:
    """(version, digest, content id, index) of a chunk's sort key (content id "" for swamp's keys)."""
    parts = sk[len("CHUNK#v"):].split("#")
    if len(parts) == 3:
        return int(parts[0]), parts[1], "", parts[2]
    return int(parts[0]), parts[1], parts[2], parts[3]


def chunk_keys(meta: FileMeta) -> list[dict]:
    return [{"pk": s_(f"FILE#{meta.rel_path}"), "sk": s_(chunk_key(meta.version, meta.digest, i, meta.content_id))}
            for i in range(chunk_count(meta.size))]


def same_content(a: FileMeta, b: FileMeta) -> bool:
    """Do two entries point at the same content keys (the same version, digest and writer's id)?"""
    return (a.version, a.digest, a.content_id) == (b.version, b.digest, b.content_id)


def chunks(data: bytes) -> list[bytes]:
    return [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]


def file_key(rel: str, sk: str = META_SK) -> dict:
    return {"pk": s_(f"FILE#{rel}"), "sk": s_(sk)}


def version_key(rel: str, cid: str) -> dict:
    return file_key(rel, VERSION_PREFIX + cid)


def blob_chunk_sk(index: int) -> str:
    return f"{BLOB_SK}#{index:07d}"


def lock_item_key(key: str) -> dict:
    return {"pk": s_(f"LOCK#{key}"), "sk": s_("LOCK")}


def registry_key(namespace: str | None) -> dict:
    """The harness's own registry: a namespace's, or ``PARTITIONS#harness`` (never swamp's ``PARTITIONS#registry``,
    whose size swamp's bookkeeping measures: the harness's attributes there would inflate it)."""
    return {"pk": s_(f"PARTITIONS#registry#{namespace}" if namespace else "PARTITIONS#harness"), "sk": s_("LIST")}


def claim_id(nonce: str) -> str:
    """The commit id a grant claims when it is made (the lock item's ``pending``): no request of its own."""
    return nonce[:16]


def seq_sk(seq: int) -> str:
    return f"{seq:0{SEQ_DIGITS}d}"


def swamp_partition(rel_path: str) -> str:
    """swamp's GSI partition of a path (its ``gsiFilePartition``, without ``FILE#``): blind to a namespace."""
    parts = rel_path.split("/")
    if parts[0] == "data" and len(parts) >= 3:
        return f"{parts[1]}/{parts[2]}"
    return f"_system/{parts[0]}"


def gsi_partition(layout: str, namespace: str | None, rel_path: str) -> str:
    """The GSI partition (``gsi1pk`` without ``FILE#``) a path's entries land on, per-model layouts."""
    if layout == Gsi.SWAMP:
        return swamp_partition(rel_path)
    return partition_of(rel_path, namespace) or "_"


def gsi_keys(layout: str, part: str) -> list[str]:
    """The GSI partitions holding harness partition ``part``'s entries (``[<ns>/]<type>/<id>``): itself, or
    with ``swamp`` those of its definition, data and outputs (one ``_system/<ns>`` with a namespace)."""
    if layout != Gsi.SWAMP:
        return [part]
    segs = part.split("/")
    if len(segs) == 3:
        return [f"_system/{segs[0]}"]
    return [part, "_system/models", "_system/outputs"]


def in_partition(item: dict, part: str) -> bool:
    """Whether a GSI item of a shared key belongs to harness partition ``part``."""
    segs = part.split("/")
    ns = segs[0] if len(segs) == 3 else None
    return partition_of(item["relPath"]["S"], ns) == part


def gsi_attrs(layout: str, namespace: str | None, meta: FileMeta, seq: int | None) -> dict:
    """The entry's place in the GSI: by path (legacy), by sequence (fenced) or time (unfenced) in its partition."""
    if layout == "legacy":
        return {"gsi1pk": s_("FILE"), "gsi1sk": s_(meta.rel_path)}
    part = gsi_partition(layout, namespace, meta.rel_path)
    order = seq_sk(seq) if seq is not None else f"{meta.updated_at_ms:013d}"
    return {"gsi1pk": s_(f"FILE#{part}"), "gsi1sk": s_(f"{order}|{meta.rel_path}")}


def entry_attrs(meta: FileMeta) -> dict:
    attrs = {"relPath": s_(meta.rel_path), "size": n_(meta.size), "digest": s_(meta.digest),
             "updatedAt": n_(meta.updated_at_ms), "version": n_(meta.version), "chunks": n_(chunk_count(meta.size))}
    if meta.content_id:
        attrs["ck"] = s_(meta.content_id)
    return attrs


def meta_of(item: dict) -> FileMeta:
    return FileMeta(item["relPath"]["S"], int(item["size"]["N"]), item["digest"]["S"], int(item["updatedAt"]["N"]),
                    int(item["version"]["N"]), item.get("ck", {}).get("S", ""))


def version_item(layout: str, namespace: str | None, meta: FileMeta, *, cid: str, seq: int, fence: int,
                 domain: str, tombstone: bool = False, gone: bool = False) -> dict:
    """One fenced version of an entry (or its tombstone; ``gone``: a prune's): a new item, never overwritten."""
    item = {**version_key(meta.rel_path, cid), **entry_attrs(meta), "cid": s_(cid), "s": n_(seq),
            "fence": n_(fence), "dom": s_(domain), **gsi_attrs(layout, namespace, meta, seq)}
    if tombstone or gone:
        item["del"] = {"BOOL": True}
    if gone:
        item["fg"] = {"BOOL": True}
    return item


def meta_item(layout: str, namespace: str | None, meta: FileMeta, *, tombstone: bool = False) -> dict:
    """swamp's unfenced entry, rewritten in place (a delete leaves a tombstone)."""
    item = {**file_key(meta.rel_path), **entry_attrs(meta), **gsi_attrs(layout, namespace, meta, None)}
    if tombstone:
        item["del"] = {"BOOL": True}
    return item


class DomainState:
    """A lock item's commit state, as one read saw it: the sealed sequence and the pending commit ids."""

    def __init__(self, seq: int = 0, pending: Iterable[str] = (), nonce: str | None = None, fence: int = 0,
                 model_fences: dict[str, int] | None = None, last: str | None = None,
                 digests: dict[str, int] | None = None, epochs: dict[str, int] | None = None) -> None:
        self.seq, self.pending, self.nonce, self.fence = seq, frozenset(pending), nonce, fence
        self.model_fences = model_fences or {}  # two-phase, fenced: partition -> its model lock's newest fence
        self.last = last  # (older tables) the newest sealed commit: ``<cid>|<items>|<path>``
        self.digests = digests or {}  # legacy: namespace ("" for none) -> the digest of its sealed entries
        self.epochs = epochs or {}  # legacy: namespace -> the sequence of its newest delete or prune

    @staticmethod
    def of(item: dict | None) -> DomainState:
        item = item or {}

        def by(prefix: str) -> dict[str, int]:
            return {k[len(prefix):]: int(v["N"]) for k, v in item.items() if k.startswith(prefix)}

        return DomainState(num(item, "seq"), item.get("pending", {}).get("SS", []),
                           item.get("nonce", {}).get("S"), num(item, "fence"), by(MODEL_FENCE),
                           item.get(LAST_COMMIT, {}).get("S"), by(NS_DIGEST), by(NS_EPOCH))

    def sealed(self, item: dict) -> bool:
        """Is this fenced version sealed (its sequence reached, its commit no longer pending)?"""
        return num(item, "s") <= self.seq and item["cid"]["S"] not in self.pending


@dataclass
class Version:
    """What a reader makes of one index item."""

    rel: str
    ref: str  # the item's sort key (``META`` or ``V#<cid>``)
    meta: FileMeta
    seq: int  # its sequence (fenced), 0 for swamp's in-place entries
    fence: int
    deleted: bool
    sealed: bool
    gone: bool = False  # a prune's tombstone: the partition is removed whole (it counts in no digest)

    @property
    def rank(self) -> tuple[int, int]:
        return self.seq, self.fence


def version_of(item: dict, states: dict[str, DomainState]) -> Version:
    sk = item["sk"]["S"]
    fenced = sk.startswith(VERSION_PREFIX)
    dom = item.get("dom", {}).get("S")
    sealed = not fenced or states.get(dom, DomainState()).sealed(item)
    return Version(item["relPath"]["S"], sk, meta_of(item), num(item, "s"), num(item, "fence"), "del" in item,
                   sealed, "fg" in item)


@dataclass
class Resolved:
    """The versions readers see among a set of index items, and what of them is garbage."""

    visible: dict[str, Version] = field(default_factory=dict)  # live entries
    removed: dict[str, Version] = field(default_factory=dict)  # entries whose newest sealed version is a tombstone
    superseded: list[Version] = field(default_factory=list)  # sealed versions a newer sealed one replaced
    dead: list[Version] = field(default_factory=list)  # versions of commits that can never seal


def resolve(items: Iterable[dict], states: dict[str, DomainState], alive: frozenset[str] | None = None
            ) -> Resolved:
    """Per path, the newest sealed version (sequence, then fencing token) wins; tombstones remove.

    A fenced version whose commit is pending is invisible. It is ``dead`` (safe
    to delete) only when the caller knows which pending ids may still seal:
    ``alive`` lists them (a holder of the lock knows none can but its own);
    ``None`` means any may. Swamp's in-place ``META`` entries rank below any
    sealed version.
    """
    best: dict[str, Version] = {}
    out = Resolved()
    for item in items:
        v = version_of(item, states)
        if not v.sealed:
            if alive is not None and v.ref[len(VERSION_PREFIX):] not in alive:
                out.dead.append(v)
            continue
        have = best.get(v.rel)
        if have is None or v.rank > have.rank:
            if have is not None and have.ref != META_SK:
                out.superseded.append(have)
            best[v.rel] = v
        elif v.ref != META_SK:
            out.superseded.append(v)
    for rel, v in best.items():
        (out.removed if v.deleted else out.visible)[rel] = v
    return out
