"""The partition registry's writes, and its fenced records: what each sealed commit left its partition holding.

The registry item (``PARTITIONS#registry[#<ns>]`` / ``LIST``) lists, per
partition, ``c:<p>`` (the last sequence a commit wrote it at, sealed or not),
``b:<p>`` (the sequence it was born at) and, fenced, one record per commit
that wrote it: ``r:<p>|<cid>`` = ``<seq>|<digest>`` (or ``<seq>|pruned``).
A record is written before its commit's seal, so it is tentative: it counts
once its commit is sealed, which the lock item says (its sequence reached, its
id no longer pending: see ``items.DomainState.sealed``). A commit that is
refused deletes its records before it drops its id; one that may still land
keeps its id pending, so its records never count. So a refused commit cannot
erase what a sealed one recorded (issue 43's hole 4), and the newest sealed
record of a partition is always there for a reader to check its view against.

The *digest* of a partition is the sum of one 64-bit hash per path with a
sealed version in it, of the path and the version's item (``V#<cid>``):
tombstones count (a deleted path hashes its tombstone), the tombstones a
prune writes for the partitions it removes do not. A pull that read a
partition, from a GSI that may be behind or show items out of write order,
sums what it holds of it and compares with the newest sealed record: equal, it
has every sealed version, tombstones included, below the newest commit too
(holes 4 and 5); different, it reads again. Collection does not change a
digest (it deletes only superseded versions), nor does a prune's burial (the
partition is gone for readers once the prune's ``pruned`` record is sealed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.datastore.backends.dynamodb.items import DomainState, resolve

FENCED_BATCH = 20  # partitions per fenced registry UpdateItem: a record, births, conditions and removals each
RECORD = "r:"  # registry: ``r:<partition>|<cid>`` = ``<seq>|<digest>``, one commit's record of the partition
PRUNED = "pruned"  # a record's digest when the commit removed the partition (a prune)
TRIM = 3  # records of a partition a commit removes at most (the rest go with the next commits)
ABSENT = -1  # an expected ``c:`` that is not there (a partition its commit's view did not hold)


def entry_hash(rel: str, ref: str) -> int:
    """One path's share of its partition's digest: its newest sealed version (the item's sort key)."""
    return int.from_bytes(hashlib.blake2b(f"{rel}|{ref}".encode(), digest_size=8).digest(), "big")


def digest_of(entries: Iterable[tuple[str, str]]) -> int:
    """The digest of a partition's (path, version item) pairs."""
    return sum(entry_hash(rel, ref) for rel, ref in entries)


def record_name(part: str, cid: str) -> str:
    return f"{RECORD}{part}|{cid}"


@dataclass(frozen=True)
class Record:
    name: str  # its attribute
    cid: str
    seq: int
    digest: int | None  # None: the partition was removed (a prune)

    @property
    def pruned(self) -> bool:
        return self.digest is None


def records_of(item: dict) -> dict[str, list[Record]]:
    """Every partition's records on a registry item."""
    out: dict[str, list[Record]] = {}
    for name, v in item.items():
        if not name.startswith(RECORD):
            continue
        part, cid = name[len(RECORD):].rsplit("|", 1)
        seq, digest = v["S"].split("|", 1)
        out.setdefault(part, []).append(Record(name, cid, int(seq), None if digest == PRUNED else int(digest)))
    return out


def sealed_records(records: Sequence[Record], state: DomainState) -> list[Record]:
    return [r for r in records if r.seq <= state.seq and r.cid not in state.pending]


def newest_sealed(records: Sequence[Record] | None, state: DomainState) -> Record | None:
    """The record of the newest sealed commit that wrote the partition, as of ``state`` (None: none did)."""
    sealed = sealed_records(records or [], state)
    return max(sealed, key=lambda r: r.seq) if sealed else None


def stale(records: Sequence[Record], state: DomainState) -> list[str]:
    """Records a commit may remove (holding the lock, as of ``state``): sealed ones older than the newest sealed
    one, and those of commits that can never seal (pending, at a sequence already reached)."""
    newest = newest_sealed(records, state)
    out = [r for r in records if (newest is not None and r.seq < newest.seq and r.cid not in state.pending)
           or (r.cid in state.pending and r.seq <= state.seq)]
    return [r.name for r in sorted(out, key=lambda r: r.seq)][:TRIM]


def view_digest(held: dict[str, str], items: Iterable[dict], states: dict[str, DomainState]) -> int:
    """The digest of a partition as a pull holds it: what the cursor ``held`` (path -> version item, from what
    it read before), updated with the sealed versions among ``items`` (what it just read, newer than that)."""
    res = resolve(items, states)
    view = dict(held)
    view.update({rel: v.ref for rel, v in res.visible.items()})
    for rel, v in res.removed.items():
        if v.gone:
            view.pop(rel, None)
        else:
            view[rel] = v.ref
    return digest_of(view.items())
