"""Index commits on DynamoDB: swamp's unfenced commit and the registry's updates.

The fenced commit is ``fenced.py``; the grants' commit ids are ``claims.py``.

``fencing = False`` is swamp's commit: the entries rewritten in place
(``META``, unconditional BatchWriteItem), then the sequence bumped
unconditionally, then the registry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.core.clock import now_ms
from harness.core.work import Work, sending
from harness.datastore.backends.base import CommitResult, FileMeta, partition_of
from harness.datastore.backends.dynamodb.cursor import DynamoCursor, Known
from harness.datastore.backends.dynamodb.items import (
    FORGOT,
    META_SK,
    NEWEST,
    PER_MODEL,
    chunk_keys,
    file_key,
    lock_item_key,
    meta_item,
    n_,
    registry_key,
    s_,
)
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.backends.dynamodb.registry import ABSENT, FENCED_BATCH
from harness.datastore.lock import LockGrant

REGISTRY_BATCH = 60  # partitions per registry UpdateItem (a condition expression is at most 4 KB)


def registry_update(partitions: set[str], forget: Sequence[str], seq: int, *, conditional: bool,
                    newest: dict[str, str] | None = None, records: dict[str, tuple[str, str]] | None = None,
                    remove: dict[str, list[str]] | None = None, births: Iterable[str] = (),
                    expect: dict[str, int] | None = None) -> list[tuple[str, str | None, dict, dict]]:
    """(update, condition, names, values) per registry UpdateItem: touched partitions set, forgotten removed.

    A touched partition's birth is set when absent (a forgotten one is born
    again; fenced, ``births``: set to ``seq`` whatever it was, the commit's
    view holding no such partition). With ``conditional`` no partition may
    already be past ``seq`` (that would be a newer holder's commit), and no
    prune may have forgotten partitions at ``seq`` or later: a commit that old
    can never seal, and without this check its registry write would list a
    pruned partition again, born before what readers had read of it, so they
    would never drop what the prune removed (lifecycle-safety's lost deletes).
    ``expect`` (fenced): partition -> the ``c:`` its commit's view saw
    (``ABSENT``: none), required unchanged instead (a two-phase commit: nothing
    wrote its model since its scoped pull). ``records`` (fenced): partition ->
    (attribute, value) of this commit's record; ``remove``: records to delete
    (stale ones; a forget's). ``newest``: the older ``k:`` records (kept for
    swamp's unfenced call, which passes none). Forgetting records ``forgot``.
    """
    fenced = bool(records or remove or expect or births)
    todo = [(p, "set") for p in sorted(partitions)] + [(p, "forget") for p in sorted(set(forget) - set(partitions))]
    born = set(births)
    out = []
    size = FENCED_BATCH if fenced else REGISTRY_BATCH
    for i in range(0, len(todo), size):
        u = _Update(values={":s": n_(seq)})
        batch = todo[i:i + size]
        for j, (part, what) in enumerate(batch):
            if what == "set":
                u.touch(j, part, part in born, (newest or {}).get(part), (records or {}).get(part))
            else:
                u.forget(j, part)
            u.drop(j, (remove or {}).get(part, []))
            u.expect(j, (expect or {}).get(part))
        if any(what == "forget" for _, what in batch):
            u.names["#fg"] = FORGOT
            u.sets.append("#fg = :s")
        if conditional:
            u.names["#fg"] = FORGOT
            u.conds.insert(0, "(attribute_not_exists(#fg) OR #fg < :s)")
        out.append(u.request(conditional))
    return out


@dataclass
class _Update:
    """One registry UpdateItem being built: its SET and REMOVE clauses, its conditions, names and values."""

    values: dict
    sets: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    conds: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)

    def touch(self, j: int, part: str, born: bool, newest: str | None, record: tuple[str, str] | None) -> None:
        """A touched partition: its ``c:`` set, its birth (``b:``) set or kept, its records written."""
        c, b, k = f"#c{j}", f"#b{j}", f"#k{j}"
        self.names[c], self.names[b] = f"c:{part}", f"b:{part}"
        self.sets += [f"{c} = :s", f"{b} = :s" if born else f"{b} = if_not_exists({b}, :s)"]
        if newest is not None:
            self.names[k], self.values[f":k{j}"] = f"{NEWEST}{part}", s_(newest)
            self.sets.append(f"{k} = :k{j}")
        if record is not None:
            self.names[f"#r{j}"], self.values[f":r{j}"] = record[0], s_(record[1])
            self.sets.append(f"#r{j} = :r{j}")

    def forget(self, j: int, part: str) -> None:
        """A forgotten partition: its ``c:``, ``b:`` and ``k:`` removed."""
        c, b, k = f"#c{j}", f"#b{j}", f"#k{j}"
        self.names[c], self.names[b], self.names[k] = f"c:{part}", f"b:{part}", f"{NEWEST}{part}"
        self.removes += [c, b, k]

    def drop(self, j: int, records: list[str]) -> None:
        """Records of the partition to delete (stale ones; a forget's)."""
        for x, name in enumerate(records):
            self.names[f"#x{j}_{x}"] = name
            self.removes.append(f"#x{j}_{x}")

    def expect(self, j: int, want: int | None) -> None:
        """The partition's condition: not past the commit, absent, or exactly what the commit's view saw."""
        c = f"#c{j}"
        if want is None:
            self.conds.append(f"(attribute_not_exists({c}) OR {c} <= :s)")
        elif want == ABSENT:
            self.conds.append(f"attribute_not_exists({c})")
        else:
            self.values[f":e{j}"] = n_(want)
            self.conds.append(f"{c} = :e{j}")

    def request(self, conditional: bool) -> tuple[str, str | None, dict, dict]:
        update = " ".join(x for x in (f"SET {', '.join(self.sets)}" if self.sets else "",
                                      f"REMOVE {', '.join(self.removes)}" if self.removes else "") if x)
        return update, " AND ".join(self.conds) if conditional else None, self.names, self.values


def unfenced_commit(be: DynamoPort, namespace: str | None, upserts: Sequence[FileMeta],
                    removals: Sequence[FileMeta], forget: Sequence[str], grant: LockGrant, cursor: DynamoCursor,
                    cid: str | None, work: Work) -> CommitResult:
    """swamp's commit: entries (or tombstones) rewritten in place, the sequence bumped, the registry set."""
    now = now_ms(be.clock)
    items = [meta_item(be.gsi_layout, namespace, m) for m in upserts]
    items += [meta_item(be.gsi_layout, namespace, FileMeta(m.rel_path, m.size, m.digest, now, m.version),
                        tombstone=True) for m in removals]
    be.batch_write([{"PutRequest": {"Item": i}} for i in items], work)
    work.index_entries_written += len(upserts)
    work.items_written += len(items)
    with sending(be.clock) as sent:
        out = be.client.update_item(
            TableName=be.table, Key=lock_item_key(grant.key),
            UpdateExpression="SET #s = if_not_exists(#s, :zero) + :one", ExpressionAttributeNames={"#s": "seq"},
            ExpressionAttributeValues={":zero": n_(0), ":one": n_(1)}, ReturnValues="UPDATED_NEW")
    seq = int(out["Attributes"]["seq"]["N"])
    if be.gsi_layout in PER_MODEL:
        touched = {p for m in [*upserts, *removals] if (p := partition_of(m.rel_path, namespace)) and p not in forget}
        for update, _, names, values in registry_update(touched, forget, seq, conditional=False):
            be.client.update_item(TableName=be.table, Key=registry_key(namespace), UpdateExpression=update,
                                  ExpressionAttributeNames=names, ExpressionAttributeValues=values)
    _follow(cursor, namespace, upserts, removals, set(forget), seq)
    be.collect(cursor, work)
    return CommitResult(seq, seq - 1, cid or uuid.uuid4().hex[:16], grant.key, seal_ms=sent.first,
                        sent_ms=sent.last)


def _follow(cursor: DynamoCursor, namespace: str | None, upserts: Sequence[FileMeta], removals: Sequence[FileMeta],
            gone: set[str], seq: int) -> None:
    """The worker's cursor takes in its own unfenced commit: what it superseded is garbage, the pruned
    partitions' tombstones too, and its view stays current if nobody else committed since."""
    if gone:  # entries are rewritten in place: the pruned partitions' items are exactly their tombstones now
        DynamoCursor.add(cursor.garbage, [file_key(m.rel_path) for m in removals
                                          if partition_of(m.rel_path, namespace) in gone])
    for m in upserts:
        prior = cursor.refs.get(m.rel_path)
        if prior is not None and (prior.meta.version, prior.meta.digest) != (m.version, m.digest):
            DynamoCursor.add(cursor.content_garbage, chunk_keys(prior.meta))
        cursor.refs[m.rel_path] = Known(META_SK, m)
    for m in removals:
        prior = cursor.refs.pop(m.rel_path, None)
        DynamoCursor.add(cursor.content_garbage, chunk_keys(prior.meta if prior else m))
    for p in gone:
        cursor.parts.pop(p, None)
        for rel in [r for r in cursor.refs if partition_of(r, namespace) == p]:
            cursor.refs.pop(rel)
    if cursor.seq is not None and cursor.seq == seq - 1:  # nobody else committed since this view: it is current
        cursor.seq = seq
        for m in [*upserts, *removals]:
            p = partition_of(m.rel_path, namespace)
            if p and p not in gone:
                cursor.parts[p] = seq
