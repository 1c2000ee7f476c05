"""Where swamp's datastore keeps what the observer reads, for a scenario's layout (pure: no requests here).

The observer reads the datastore as a stranger would, from the key formats
alone; it never asks the model what it wrote. The formats (swamp's, and the
harness's variations on them that the scenario names):

DynamoDB (webframp/swamp-extensions ``datastore/dynamodb``, ``keys.ts``; docs/swamp-today.md):

- lock items ``LOCK#<key>`` / ``LOCK`` with ``holder``, ``nonce``, ``expiresAtMs``;
- file metadata under ``FILE#<relPath>``: ``META`` (swamp's, rewritten in place) or one ``V#<commit>``
  item per version (the harness's fenced layout: ``s`` is the sequence it sealed at, ``del`` marks a
  tombstone); the catalog export outside the index: ``FILE#<relPath>`` / ``BLOB`` with ``size``;
- GSI ``gsi1``: ``legacy`` puts every file item under ``gsi1pk = "FILE"``; ``per-model`` under
  ``FILE#[<ns>/]<type>/<id>``; ``swamp`` under swamp's ``gsiFilePartition`` of the path;
- the partition registry ``PARTITIONS#registry`` / ``LIST``: swamp's string set ``partitions`` of GSI
  keys; the harness's ``c:<partition>`` attributes, one registry item per namespace
  (``PARTITIONS#registry#<ns>``).

S3 (swamp-club/swamp-extensions ``datastore/s3``): the lock object at the lock key (JSON with ``holder``,
``nonce``, ``expiresAtMs``); the index head ``[<ns>/]_index/_meta.json`` (``commitSeq``; the harness's
also names each partition's current shard in ``shards``) with shards beside it, or the monolith
``[<ns>/].datastore-index.json``; the catalog export ``[<ns>/].catalog-export.json``.

Shared with the datastore model, because they are the layout itself and nothing else: ``gsi_keys``
(which GSI keys hold a partition's files: swamp's ``gsiFilePartition``). Everything else here is the
observer's own reading of the formats above; ``tests/unit/jobs/test_observe_layouts.py`` checks it against what
the model writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.datastore.backends.dynamodb.items import gsi_keys

BACKENDS = ("dynamodb", "s3")
GSI_LAYOUTS = ("legacy", "per-model", "swamp")
S3_INDEXES = ("monolith", "sharded")
S3_SHARDS = ("model", "swamp")
LEGACY_KEY = "FILE"
EXPORT = ".catalog-export.json"
DATASTORE_LOCK = ".datastore.lock"
SWAMP_REGISTRY = "PARTITIONS#registry"


class LayoutError(ValueError):
    """A layout the observer cannot read (one line: what is wrong and the names it knows)."""


@dataclass(frozen=True)
class Layout:
    """What one run's datastore looks like: the scenario's ``[datastore]`` names, its namespaces, where it is."""

    backend: str
    gsi: str = "per-model"
    s3_index: str = "sharded"
    s3_shards: str = "model"
    lock_scope: str = "namespace"
    sync: str = "one-lock"
    global_lock: str = "swamp"
    bookkeeping: str = "harness"
    namespaces: tuple[str, ...] = ()  # () : one shared datastore, no namespace
    table: str = ""
    bucket: str = ""
    prefix: str = ""  # S3: the run's key prefix in its bucket
    extra_locks: tuple[str, ...] = ()  # lock keys to read besides the commit domains'

    def __post_init__(self) -> None:
        for name, value, known in (("backend", self.backend, BACKENDS), ("gsi", self.gsi, GSI_LAYOUTS),
                                   ("s3_index", self.s3_index, S3_INDEXES), ("s3_shards", self.s3_shards, S3_SHARDS)):
            if value not in known:
                raise LayoutError(f"the observer cannot read {name} {value!r}: choose one of {', '.join(known)}")

    @property
    def scopes(self) -> list[str | None]:
        """The namespaces whose state is read one by one (None: the shared datastore)."""
        return list(self.namespaces) or [None]


def root(ns: str | None) -> str:
    return f"{ns}/" if ns else ""


# ---- locks ------------------------------------------------------------------------------


def datastore_lock(layout: Layout) -> str:
    """The datastore's own lock key: its path on DynamoDB (``dynamodb://<table>``), ``.datastore.lock`` on S3."""
    return f"dynamodb://{layout.table}" if layout.backend == "dynamodb" else DATASTORE_LOCK


def commit_lock(layout: Layout, ns: str | None) -> str:
    """The lock whose holder commits a namespace's index (what ``harness.datastore`` takes: a test compares them).

    One lock (the spec's loop): ``.locks/<ns>.lock`` with namespace scope, else the datastore's. Two-phase
    (swamp today): the global lock, ``.locks/<ns>.lock`` (``global_lock = "swamp"``: core's
    ``datastoreGlobalLockOptions``, swamp-club/swamp 06b6147), ``<ns>/.datastore.lock`` (``"per-namespace"``), or
    a stored copy's one item (``"one-item"``: ``.datastore.lock`` for every namespace on DynamoDB, under the
    namespace on S3); without a namespace the datastore's own.
    """
    scoped = ns if layout.lock_scope == "namespace" else None
    if not scoped:
        return datastore_lock(layout)
    if layout.sync != "two-phase" or layout.global_lock == "swamp":
        return f".locks/{scoped}.lock"
    if layout.global_lock == "per-namespace" or layout.backend == "s3":
        return f"{scoped}/{DATASTORE_LOCK}"
    return DATASTORE_LOCK


def lock_keys(layout: Layout) -> list[str]:
    """Every commit domain's lock (and any named besides), each once."""
    keys = [commit_lock(layout, ns) for ns in layout.scopes] + list(layout.extra_locks)
    return list(dict.fromkeys(keys))


def lock_item(key: str) -> dict:
    return {"pk": {"S": f"LOCK#{key}"}, "sk": {"S": "LOCK"}}


def holder_of(record: dict, now_ms: int) -> str | None:
    """The live holder of a lock record (plain values), or None when free, released or expired."""
    if not record.get("nonce"):
        return None
    try:
        expires = int(record.get("expiresAtMs") or 0)
    except (TypeError, ValueError):
        return None
    return str(record.get("holder") or "?") if expires >= now_ms else None


# ---- DynamoDB ---------------------------------------------------------------------------


def namespace_registry(ns: str | None) -> str:
    """The registry item of one namespace (the harness's; swamp's one item without a namespace)."""
    return f"{SWAMP_REGISTRY}#{ns}" if ns else SWAMP_REGISTRY


def registry_items(layout: Layout) -> list[str]:
    """The partition keys of the registry items to read: each namespace's (the harness's), and swamp's one
    ``PARTITIONS#registry`` whenever swamp's bookkeeping writes it (or there is no namespace)."""
    keys = [namespace_registry(ns) for ns in layout.scopes]
    if layout.bookkeeping == "swamp":
        keys.append(SWAMP_REGISTRY)
    return list(dict.fromkeys(keys))


def registry_key(pk: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": "LIST"}}


def registry_name(pk: str) -> str:
    """How rows (``registry_bytes``'s ``PARTITIONS#registry/LIST``) and the report name a registry item."""
    return f"{pk}/LIST"


def registered(item: dict, layout: Layout) -> list[str]:
    """The GSI keys (without ``FILE#``) a registry item lists: swamp's ``partitions`` values as they are,
    the harness's ``c:<partition>`` names through the layout's ``gsi_keys``."""
    out: list[str] = []
    for value in item.get("partitions", {}).get("SS", []):
        out.append(value[len("FILE#"):] if value.startswith("FILE#") else value)
    for name in item:
        if name.startswith("c:"):
            out += gsi_keys(layout.gsi, name[2:])
    return list(dict.fromkeys(out))


def partitions_listed(item: dict) -> int:
    """Partitions a registry item lists (the harness's ``c:`` names, else swamp's values)."""
    mine = sum(1 for name in item if name.startswith("c:"))
    return mine or len(item.get("partitions", {}).get("SS", []))


def in_scope(rel: str, ns: str | None) -> bool:
    return not ns or rel.startswith(f"{ns}/")


def live_paths(items: list[dict], ns: str | None) -> int:
    """Index entries among index items: one per path, its newest version (by sequence ``s``, then fence)
    not a tombstone. swamp's ``META`` items are one per path already."""
    best: dict[str, tuple[int, int, bool]] = {}
    for item in items:
        rel = item.get("relPath", {}).get("S")
        if rel is None or not in_scope(rel, ns):
            continue
        rank = (int(item.get("s", {}).get("N", 0)), int(item.get("fence", {}).get("N", 0)), "del" not in item)
        if rel not in best or rank[:2] >= best[rel][:2]:
            best[rel] = rank
    return sum(1 for r in best.values() if r[2])


def export_rel(ns: str | None) -> str:
    return root(ns) + EXPORT


# ---- S3 ---------------------------------------------------------------------------------


def index_heads(layout: Layout) -> list[tuple[str, list[str | None]]]:
    """Each index head (relative key) and the namespaces whose entries it holds: a namespace's own, or the
    datastore's root head (its lock is the datastore's) holding every namespace's."""
    heads: dict[str, list[str | None]] = {}
    name = "_index/_meta.json" if layout.s3_index == "sharded" else ".datastore-index.json"
    for ns in layout.scopes:
        lock = commit_lock(layout, ns)
        at = "" if lock == DATASTORE_LOCK or not ns else root(ns)
        heads.setdefault(at + name, []).append(ns)
    return list(heads.items())


def shard_dir(head: str) -> str:
    """Where a head's shards live: ``[<ns>/]_index/``, or the monolith's ``[<ns>/].datastore-index/``."""
    if head.endswith("_meta.json"):
        return head[:-len("_meta.json")]
    return head[:-len(".json")] + "/"


def shard_name(head: str, key: str, partition: str | None = None) -> str:
    """A stable name for a shard across its rewrites: the partition the head names it by (with the head's
    directory when the name alone could be another head's, ``_all`` / ``_root``), else its key without
    ``.json`` (swamp's ``_index/<partition>.json``, rewritten in place)."""
    if partition:
        return partition if "/" in partition else shard_dir(head) + partition
    return key[:-len(".json")] if key.endswith(".json") else key
