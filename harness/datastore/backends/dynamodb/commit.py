"""Index commits on DynamoDB: swamp's unfenced commit and the registry's updates.

The fenced commit is ``fenced.py``; the grants' commit ids are ``claims.py``.

``fencing = False`` is swamp's commit: the entries rewritten in place
(``META``, unconditional BatchWriteItem), then the sequence bumped
unconditionally, then the registry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

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
        sets, removes, conds, names = [], [], [], {}
        values = {":s": n_(seq)}
        batch = todo[i:i + size]
        for j, (part, what) in enumerate(batch):
            c, b, k = f"#c{j}", f"#b{j}", f"#k{j}"
            names[c], names[b] = f"c:{part}", f"b:{part}"
            if what == "set":
                sets += [f"{c} = :s", f"{b} = :s" if part in born else f"{b} = if_not_exists({b}, :s)"]
                if newest and part in newest:
                    names[k], values[f":k{j}"] = f"{NEWEST}{part}", s_(newest[part])
                    sets.append(f"{k} = :k{j}")
                if records and part in records:
                    names[f"#r{j}"], values[f":r{j}"] = records[part][0], s_(records[part][1])
                    sets.append(f"#r{j} = :r{j}")
            else:
                names[k] = f"{NEWEST}{part}"
                removes += [c, b, k]
            for x, name in enumerate((remove or {}).get(part, [])):
                names[f"#x{j}_{x}"] = name
                removes.append(f"#x{j}_{x}")
            want = (expect or {}).get(part)
            if want is None:
                conds.append(f"(attribute_not_exists({c}) OR {c} <= :s)")
            elif want == ABSENT:
                conds.append(f"attribute_not_exists({c})")
            else:
                values[f":e{j}"] = n_(want)
                conds.append(f"{c} = :e{j}")
        if any(what == "forget" for _, what in batch):
            names["#fg"] = FORGOT
            sets.append("#fg = :s")
        if conditional:
            names["#fg"] = FORGOT
            conds.insert(0, "(attribute_not_exists(#fg) OR #fg < :s)")
        update = " ".join(x for x in (f"SET {', '.join(sets)}" if sets else "",
                                      f"REMOVE {', '.join(removes)}" if removes else "") if x)
        out.append((update, " AND ".join(conds) if conditional else None, names, values))
    return out


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
    gone = set(forget)
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
    be.collect(cursor, work)
    return CommitResult(seq, seq - 1, cid or uuid.uuid4().hex[:16], grant.key, seal_ms=sent.first,
                        sent_ms=sent.last)
