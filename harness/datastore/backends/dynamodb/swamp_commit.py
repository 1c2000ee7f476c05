"""swamp's DynamoDB commit, request by request, for runs that are swamp's own (``fencing = false``, ``bookkeeping =
"swamp"``; chosen by ``choose.py``).

``commitPush`` -> ``applyDiff`` (``sync.ts``, webframp/swamp-extensions a929b7a), all of it under the global lock:

1. the files, ``WRITE_CONCURRENCY`` (10) at a time (``parallelLimit``), each
   ``writeFileEntry``: its chunks (a BatchWriteItem per 25), then
   ``registerPartition`` (an ``ADD partitions :p`` to ``PARTITIONS#registry`` /
   ``LIST`` unless this process already registered the partition: see
   ``bookkeeping.racing_adds``), then its entry (a PutItem of ``FILE#<path>`` /
   ``META``), one after another; then, for a file swamp had looked up and
   found (a dirty *file*, not a file under a dirty data-name directory, which
   has no remote entry and is written at chunk version 1 again), the old
   chunks deleted (a BatchWriteItem);
2. the tombstones, 10 at a time, a PutItem each;
3. ``writeWatermark``: a PutItem of ``SYNCSTATE#global`` / ``STATE``, then
   ``UpdateItem ADD seq 1`` on ``SYNCSTATE#global`` / ``SEQ``: the commit
   signal, whose value is the commit's sequence here.

So a push of F files holds the lock for about ceil(F / 10) x 3 round trips + 2
(the slowest file of each wave), where the harness's other commits make one
shared BatchWriteItem of entries. Nothing of the harness's own is written: no
sequence on the lock item, no registry of its own, no deletes of superseded
chunks (swamp's chunk keys are rewritten in place; the harness's carry the
content's digest, so a file's older chunks stay, as storage only).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from harness.core.clock import iso, now_ms
from harness.core.work import Work, recording, sending
from harness.datastore.backends.base import CommitResult, FileMeta, partition_of
from harness.datastore.backends.dynamodb.bookkeeping import (
    SYNC_STATE,
    racing_adds,
    register,
    registry_values,
)
from harness.datastore.backends.dynamodb.cursor import DynamoCursor, Known
from harness.datastore.backends.dynamodb.items import META_SK, chunk_key, chunk_keys, chunks, meta_item, n_, s_
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.lock import LockGrant
from harness.datastore.swamp_push import data_name_dir
from harness.datastore.variant import RegistryAdds

SEQ_KEY = {"pk": s_(SYNC_STATE), "sk": s_("SEQ")}
STATE_KEY = {"pk": s_(SYNC_STATE), "sk": s_("STATE")}


def write_file_entry(be: DynamoPort, namespace: str | None, meta: FileMeta, data: bytes, add: str | None,
                     prior: FileMeta | None, work: Work) -> None:
    """``writeFileEntry``: chunks, the registry ADD (``add``, if this file sends one), the entry, old chunks."""
    reqs = [{"PutRequest": {"Item": {"pk": s_(f"FILE#{meta.rel_path}"),
                                     "sk": s_(chunk_key(meta.version, meta.digest, i)), "data": {"B": c}}}}
            for i, c in enumerate(chunks(data))]
    be.batch_write(reqs, work)
    if add is not None:
        register(be, [add], work)
    with recording(work):
        be.client.put_item(TableName=be.table, Item=meta_item(be.gsi_layout, namespace, meta))
    work.items_written += len(reqs) + 1
    if prior is not None and data_name_dir(meta.rel_path) is None:
        old = [k for k in chunk_keys(prior) if k not in chunk_keys(meta)]
        try:
            be.batch_write([{"DeleteRequest": {"Key": k}} for k in old], work)
        except Exception:  # noqa: BLE001 - swamp's cleanup is best effort too: old chunks only take space
            pass


def swamp_commit(be: DynamoPort, namespace: str | None, upserts: Sequence[FileMeta],
                 removals: Sequence[FileMeta], grant: LockGrant, cursor: DynamoCursor, cid: str | None,
                 work: Work) -> CommitResult:
    """One ``commitPush`` of these entries (or tombstones); its sequence is swamp's ``SEQ`` after the bump."""
    held, at = DynamoCursor.take_own(cursor)
    upserts, removals = list(upserts), list(removals)
    cid = cid or uuid.uuid4().hex[:16]
    if not upserts and not removals:  # applyDiff returns before the watermark: nothing is written
        seq = cursor.seq or 0
        return CommitResult(seq, seq, cid, grant.key)
    values = registry_values(be.gsi_layout, namespace, upserts)
    if be.registry_adds == RegistryAdds.SWAMP:
        adds: list[str | None] = [v if sent else None for v, sent in zip(values, racing_adds(values, at), strict=True)]
    else:  # one ADD of the push's partitions, after its files
        adds = [None] * len(upserts)
    jobs = [(m, adds[i]) for i, m in enumerate(upserts)]
    for i in range(0, len(jobs), at):
        be.parallel(lambda job, w: write_file_entry(be, namespace, job[0], held.get(job[0].rel_path, b""), job[1],
                                                    _prior(cursor, job[0]), w), jobs[i:i + at], work)
    if be.registry_adds != RegistryAdds.SWAMP and upserts:
        parts = sorted({p for m in upserts if (p := partition_of(m.rel_path, namespace))})
        if parts:
            register(be, parts, work)
    now = now_ms(be.clock)
    tombs = [meta_item(be.gsi_layout, namespace, FileMeta(m.rel_path, m.size, m.digest, now, m.version),
                       tombstone=True) for m in removals]

    def bury(item: dict, w: Work) -> None:
        with recording(w):
            be.client.put_item(TableName=be.table, Item=item)

    for i in range(0, len(tombs), at):
        be.parallel(bury, tombs[i:i + at], work)
    with recording(work):
        be.client.put_item(TableName=be.table, Item={**STATE_KEY, "lastPushedAt": s_(iso(now_ms(be.clock)))})
        with sending(be.clock) as sent:
            out = be.client.update_item(TableName=be.table, Key=SEQ_KEY, UpdateExpression="ADD seq :one",
                                        ExpressionAttributeValues={":one": n_(1)}, ReturnValues="UPDATED_NEW")
    seq = int(out["Attributes"]["seq"]["N"])
    work.index_entries_written += len(upserts)
    work.items_written += len(tombs) + 2
    _follow(cursor, namespace, upserts, removals, seq)
    return CommitResult(seq, seq - 1, cid, grant.key, seal_ms=sent.first, sent_ms=sent.last)


def _prior(cursor: DynamoCursor, meta: FileMeta) -> FileMeta | None:
    known = cursor.refs.get(meta.rel_path)
    return known.meta if known is not None else None


def _follow(cursor: DynamoCursor, namespace: str | None, upserts: list[FileMeta], removals: list[FileMeta],
            seq: int) -> None:
    """The worker's cursor takes in its own commit (its view stays current if nobody else pushed since)."""
    for m in upserts:
        cursor.refs[m.rel_path] = Known(META_SK, m)
    for m in removals:
        cursor.refs.pop(m.rel_path, None)
    if cursor.seq is not None and cursor.seq == seq - 1:
        cursor.seq = seq
        for m in [*upserts, *removals]:
            p = partition_of(m.rel_path, namespace)
            if p:
                cursor.parts[p] = seq
