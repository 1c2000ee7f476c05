"""The datastore's knobs as enums, and the variant: which of its two systems a run is.

A scenario's ``[datastore]`` chooses between the harness's fenced design and "swamp as its code reads"
(docs/swamp-today.md), knob by knob, and lays the store out (GSI, shards, lock scope ...). Each knob is a
``StrEnum`` whose values are exactly the TOML strings, so a scenario file, a run key, ``summary.json``, the
plan's JSON and every report read the same as with plain strings (a member compares, hashes, formats and
serialises as its value). The strings are parsed into members once, at the configuration's edge
(``harness/config/sections.py``); below it the datastore reads members, never a literal ``"swamp"``.

``Variant`` holds the mode knobs (not the layout): what the backends' choosers
(``backends/dynamodb/choose.py``, ``backends/s3/choose.py``) and the sync coordinator build their
strategies from, once.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class Gsi(enum.StrEnum):
    """DynamoDB's file-item GSI layout (``gsi``)."""
    LEGACY = "legacy"  # webframp's extension at bc36088a: every file item under gsi1pk = "FILE"
    PER_MODEL = "per-model"
    SWAMP = "swamp"


class S3Index(enum.StrEnum):
    """S3's index form (``s3_index``)."""
    MONOLITH = "monolith"
    SHARDED = "sharded"


class LockScope(enum.StrEnum):
    """What one lock covers (``lock_scope``)."""
    DATASTORE = "datastore"
    NAMESPACE = "namespace"


class IndexCommit(enum.StrEnum):
    """How a commit writes the index (``index_commit``)."""
    FULL = "full"
    DELTA = "delta"


class SyncMode(enum.StrEnum):
    """The sync loop (``sync``): the spec's one lock, or swamp's per-model lock with a global one for commit."""
    ONE_LOCK = "one-lock"
    TWO_PHASE = "two-phase"


class GlobalLock(enum.StrEnum):
    """Two-phase's global lock key (``global_lock``; profiles/two_phase.py: commit_lock_key)."""
    SWAMP = "swamp"
    ONE_ITEM = "one-item"
    PER_NAMESPACE = "per-namespace"


class Bookkeeping(enum.StrEnum):
    """``bookkeeping``: the harness's, or swamp's (SYNCSTATE#global every push, a registry that only grows)."""
    HARNESS = "harness"
    SWAMP = "swamp"


class PushScope(enum.StrEnum):
    """``push_scope``: the changed versions, or swamp's (every version of a changed data name again)."""
    CHANGED = "changed"
    SWAMP = "swamp"


class ExportAt(enum.StrEnum):
    """``export_at``: after the commit, or swamp's (inside two-phase's commit, under the lock)."""
    AFTER_COMMIT = "after-commit"
    SWAMP = "swamp"


class RegistryAdds(enum.StrEnum):
    """``registry_adds``: one ADD a push, or swamp's (one per distinct GSI partition, FILE#-prefixed)."""
    ONE = "one"
    SWAMP = "swamp"


class S3Shards(enum.StrEnum):
    """``s3_shards``: one shard a model, or swamp's partitionKeyFromPath keys."""
    MODEL = "model"
    SWAMP = "swamp"


class S3Commit(enum.StrEnum):
    """``s3_commit``: the harness's, or swamp's (_meta.json and each dirty shard read again under the lock)."""
    HARNESS = "harness"
    SWAMP = "swamp"


class PrepareIndexRead(enum.StrEnum):
    """``prepare_index_read``: none, all (swamp: the meta and every shard, every push), or dirty (a fork's)."""
    NONE = "none"
    ALL = "all"
    DIRTY = "dirty"


class S3CommandRequests(enum.StrEnum):
    """``s3_command_requests``: none, or swamp's (HeadBucket, the scoped pull's shard GETs, a new model's)."""
    NONE = "none"
    SWAMP = "swamp"


class Retries(enum.StrEnum):
    """``retries``, both backends: the harness's, or swamp's (3 tries at 500 ms x 3^n +- 25 %)."""
    HARNESS = "harness"
    SWAMP = "swamp"


class Backoff(enum.StrEnum):
    """``[lock] backoff``: how a waiter backs off (``lock.py`` names each source); ``swamp`` is resolved to the
    backend's own extension's when the scenario is read."""
    HARNESS = "harness"
    SWAMP_DYNAMODB = "swamp-dynamodb"
    SWAMP_S3 = "swamp-s3"
    S3_DOUBLING = "s3-doubling"
    SWAMP = "swamp"


class CatalogExport(enum.StrEnum):
    """``[workload] catalog_export``: the catalog export's form (``catalog.py``)."""
    COMPACT = "compact"
    SWAMP = "swamp"
    STORED_28 = "stored-28"


class DataName(enum.StrEnum):
    """``[workload] data_name``: a data name per method, or swamp's one (``model.py``)."""
    METHOD = "method"
    SWAMP = "swamp"


def values(kind: type[enum.StrEnum]) -> tuple[str, ...]:
    """A knob's TOML strings, in the enum's order (what a one-line error lists)."""
    return tuple(m.value for m in kind)


@dataclass(frozen=True)
class Variant:
    """The mode knobs of ``[datastore]``: which system each seam of the datastore runs.

    ``fenced``: the harness's design (fencing tokens, conditional writes) or swamp's own commit (TTL lock,
    unconditional writes). The rest are swamp's code as it reads, knob by knob, each defaulting to the
    harness's behaviour.
    """
    fenced: bool = True
    bookkeeping: Bookkeeping = Bookkeeping.HARNESS
    push_scope: PushScope = PushScope.CHANGED
    export_at: ExportAt = ExportAt.AFTER_COMMIT
    registry_adds: RegistryAdds = RegistryAdds.ONE
    s3_shards: S3Shards = S3Shards.MODEL
    s3_commit: S3Commit = S3Commit.HARNESS
    prepare_index_read: PrepareIndexRead = PrepareIndexRead.NONE
    s3_command_requests: S3CommandRequests = S3CommandRequests.NONE
    retries: Retries = Retries.HARNESS

    def __post_init__(self) -> None:
        coerce(self, MODE_KINDS)

    @property
    def swamp_bookkeeping(self) -> bool:
        return self.bookkeeping is Bookkeeping.SWAMP

    @property
    def swamp_own(self) -> bool:
        """Unfenced with swamp's bookkeeping: the lock's requests, the reads and the commit are swamp's own."""
        return not self.fenced and self.swamp_bookkeeping


MODE_KINDS: dict[str, type[enum.StrEnum]] = {
    "bookkeeping": Bookkeeping, "push_scope": PushScope, "export_at": ExportAt, "registry_adds": RegistryAdds,
    "s3_shards": S3Shards, "s3_commit": S3Commit, "prepare_index_read": PrepareIndexRead,
    "s3_command_requests": S3CommandRequests, "retries": Retries,
}
LAYOUT_KINDS: dict[str, type[enum.StrEnum]] = {
    "gsi": Gsi, "s3_index": S3Index, "lock_scope": LockScope, "index_commit": IndexCommit, "sync": SyncMode,
    "global_lock": GlobalLock,
}


def coerce(obj: object, kinds: dict[str, type[enum.StrEnum]],
           error: Callable[[str, object, tuple[str, ...]], Exception] | None = None) -> None:
    """Set each of a frozen dataclass's knob fields to its enum member (a plain string from JSON or a test
    becomes the member). A bad one raises ``error(knob, value, choices)``: by default a ValueError naming the
    knob and its choices (a caller at the configuration's edge gives its own one-line error)."""
    for name, kind in kinds.items():
        v = getattr(obj, name)
        if isinstance(v, kind):
            continue
        try:
            member = kind(v)
        except ValueError:
            allowed = values(kind)
            if error is not None:
                raise error(name, v, allowed) from None
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {v!r}") from None
        object.__setattr__(obj, name, member)
