"""What one worker knows of a DynamoDB datastore: enough to pull only what changed and to clean up after itself.

Kept by the worker (the datastore passes it to every pull and commit), so
nothing here needs a request: the sealed sequence it has seen, per partition
the sequence it has read up to, the item behind every entry it sees (so a
commit knows which superseded version to delete), the tombstones it has seen
(a partition's digest counts them: ``registry.py``), what it last read of the
registry, and garbage found on the way (index items and content chunks,
deleted after its next commit's lock is released, or by its next push).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.datastore.backends.base import FileMeta, partition_of


@dataclass
class Known:
    """The item behind a visible entry (or a tombstone) and the version it holds."""

    sk: str
    meta: FileMeta


@dataclass
class DynamoCursor:
    seq: int | None = None  # the sealed sequence this worker's view is complete up to
    parts: dict[str, int] = field(default_factory=dict)  # partition -> sequence read up to
    refs: dict[str, Known] = field(default_factory=dict)  # rel -> the visible version's item
    garbage: dict[tuple[str, str], dict] = field(default_factory=dict)  # index items to delete: (pk, sk) -> key
    content_garbage: dict[tuple[str, str], dict] = field(default_factory=dict)  # chunk items to delete
    # a run that is swamp's own: the push's content, held until its commit writes each file's chunks beside its
    # entry (swamp_commit.py), and how many files that commit writes at a time
    own_content: dict[str, bytes] = field(default_factory=dict)
    own_at: int = 10
    tombs: dict[str, Known] = field(default_factory=dict)  # rel -> its newest sealed version, a tombstone
    known: set[str] = field(default_factory=set)  # partitions held whole as last read ("*": every one, legacy)
    seen_c: dict[str, int] = field(default_factory=dict)  # partition -> the registry's ``c:`` as last read
    stale: dict[str, list[str]] = field(default_factory=dict)  # partition -> records a commit may remove
    newest: dict[str, str] = field(default_factory=dict)  # partition -> its newest sealed record's attribute
    epoch: int | None = None  # legacy: the namespace's newest delete or prune as last read (``items.NS_EPOCH``)

    def entries_in(self, part: str, namespace: str | None) -> dict[str, str]:
        """(path -> version item) of every path this cursor holds in ``part``, tombstones included."""
        return self.held(namespace).get(part, {})

    def held(self, namespace: str | None) -> dict[str, dict[str, str]]:
        """Per partition, (path -> version item) of every path this cursor holds, tombstones included (one pass)."""
        out: dict[str, dict[str, str]] = {}
        for bag in (self.refs, self.tombs):
            for r, k in bag.items():
                if (p := partition_of(r, namespace)) is not None:
                    out.setdefault(p, {})[r] = k.sk
        return out

    def ref_of(self, rel: str) -> Known | None:
        """The newest sealed version this cursor holds of ``rel``: an entry, or a tombstone."""
        return self.refs.get(rel) or self.tombs.get(rel)

    def drop_partition(self, part: str, namespace: str | None) -> None:
        """Forget everything held of a partition (pruned, or born again)."""
        for bag in (self.refs, self.tombs):
            for rel in [r for r in bag if partition_of(r, namespace) == part]:
                bag.pop(rel)
        self.parts.pop(part, None)

    @staticmethod
    def of(cursor: dict | None) -> DynamoCursor:
        """The DynamoDB part of a worker's cursor (a throwaway one when the caller keeps none)."""
        if cursor is None:
            return DynamoCursor()
        got = cursor.get("dynamodb")
        if got is None:
            got = cursor["dynamodb"] = DynamoCursor()
        return got

    @staticmethod
    def add(bag: dict[tuple[str, str], dict], keys: list[dict]) -> None:
        for k in keys:
            bag[(k["pk"]["S"], k["sk"]["S"])] = k

    @staticmethod
    def take(bag: dict[tuple[str, str], dict]) -> list[dict]:
        keys = list(bag.values())
        bag.clear()
        return keys

    @staticmethod
    def take_own(cursor: DynamoCursor) -> tuple[dict[str, bytes], int]:
        """The content a swamp-own push held for its commit (handed over once), and how many files at a time."""
        held, cursor.own_content = cursor.own_content, {}
        return held, cursor.own_at
