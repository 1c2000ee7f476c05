"""The contract between the sync coordinator and a storage backend.

Anything that can store a blob by key, do a conditional write for locking and
list (or query) by prefix qualifies. The index is the backend's own business:
a GSI on DynamoDB, manifest files on S3.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.datastore.lock import LockGrant, LockStore
from harness.datastore.paths import model_of
from harness.work import Work


@dataclass
class FileMeta:
    """One index entry: a file's metadata as the index records it."""

    rel_path: str
    size: int
    digest: str
    updated_at_ms: int
    version: int = 1

    @staticmethod
    def digest_of(data: bytes) -> str:
        return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass
class PullResult:
    changed: list[FileMeta]
    seq: int
    short_cut: bool = False


@dataclass
class CommitResult:
    """A sealed commit: its place in the domain's sequence, the sequence it started from, its id."""

    seq: int
    base: int
    cid: str
    domain: str  # what the sequence counts: the lock item (DynamoDB) or the namespace's index (S3)


def partition_of(rel_path: str, namespace: str | None) -> str | None:
    """The per-model partition a path belongs to: ``[<ns>/]<type>/<id>``."""
    owner = model_of(rel_path, namespace)
    if owner is None:
        return None
    return f"{namespace}/{owner[0]}/{owner[1]}" if namespace else f"{owner[0]}/{owner[1]}"


class Backend(Protocol):
    name: str
    lock_store: LockStore

    def datastore_lock_key(self) -> str:
        """The one lock for the whole datastore (swamp's key without a namespace)."""

    def ensure(self) -> None:
        """Create the table or bucket if missing; refuse one that does not fit."""

    def put_content(self, files: dict[str, bytes], metas: dict[str, FileMeta], work: Work) -> None:
        """Prepare: upload content, outside the lock."""

    def get_content(self, meta: FileMeta, work: Work) -> bytes: ...

    def lookup(self, paths: Sequence[str], work: Work) -> dict[str, FileMeta]:
        """Scoped push: the index entries of known dirty paths, as readers see them."""

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, fencing: bool = True, cid: str | None = None) -> CommitResult:
        """Merge entries into the index under the lock and seal it.

        With ``fencing`` (the default) the store itself refuses a stale grant,
        and a commit either seals completely or leaves nothing visible.
        ``base_seq`` is the sequence this holder's view was pulled at: the
        commit is refused if anything sealed since. Without fencing it writes
        unconditionally (swamp's own behaviour).
        """

    def pull(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             last_seq: int | None, work: Work, *, lock_key: str | None = None,
             cursor: dict | None = None) -> PullResult:
        """Entries changed after ``since_ms``; ``partitions`` scopes the pull; ``cursor`` is the reader's own."""

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     fencing: bool = True, cid: str | None = None) -> CommitResult:
        """Remove index entries (a commit of removals, fenced like one), then their content."""

    def index_snapshot(self, work: Work) -> dict:
        """Everything readers can see, for a safety check: entries with their content digests."""

    def write_watermark(self, namespace: str | None, watermark_ms: int, work: Work) -> None:
        """The sync watermark: everything is pulled as of this time (advanced by unscoped pulls only)."""

    def read_watermark(self, namespace: str | None, work: Work) -> int | None: ...

    def forget_partitions(self, namespace: str | None, partitions: Sequence[str], work: Work) -> None:
        """Prune: the pruned models' partitions are orphaned metadata too."""

    def put_blob(self, rel_path: str, data: bytes, work: Work) -> None:
        """Store a file outside the index (the catalog export)."""
