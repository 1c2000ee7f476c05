"""What one worker knows of a DynamoDB datastore: enough to pull only what changed and to clean up after itself.

Kept by the worker (the datastore passes it to every pull and commit), so
nothing here needs a request: the sealed sequence it has seen, per partition
the sequence it has read up to, the item behind every entry it sees (so a
commit knows which superseded version to delete), and garbage found on the way
(index items deleted by its next commit, content chunks by its next push).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.datastore.backends.base import FileMeta


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
    held: dict[str, bytes] = field(default_factory=dict)
    held_at: int = 10

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
    def take_held(cursor: DynamoCursor) -> tuple[dict[str, bytes], int]:
        """The content a swamp-own push held for its commit (handed over once), and how many files at a time."""
        held, cursor.held = cursor.held, {}
        return held, cursor.held_at
