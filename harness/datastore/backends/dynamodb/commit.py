"""Index commits on DynamoDB: fenced at batch cost, or swamp's unfenced in-place writes.

A fenced commit of N entries (no TransactWriteItems: dynalite has none, and
moto's cost grows with the table) is, under a grant that claimed its commit id
when it was made (``pending`` on the lock item, see ``locks.py``):

1. the partition registry: one UpdateItem setting each touched partition's
   last sequence to this commit's ``s`` (and its birth, if new), conditioned on
   none of them being past ``s`` already (a newer holder touched it: refused
   here, before anything is written); pruned partitions are removed there too;
2. the entries as new items, one per version (``V#<cid>``, never overwritten),
   with BatchWriteItem, 25 a call: unconditional, since nobody else writes
   these keys, and invisible while the commit id is pending;
3. the seal: one UpdateItem of the lock item setting ``seq = s`` and removing
   the id from ``pending``, conditioned on the grant's nonce and on ``seq`` still
   being the sequence this holder pulled at. Once a newer holder is granted the
   lock, nothing of an older holder's can ever seal: the lease is the fence;
4. after the seal, the versions it superseded (known from the worker's cursor)
   and the content chunks they pointed at are deleted, in shared
   BatchWriteItems, under the lock (left for the next push, a chunk key could
   be written again meanwhile by someone re-creating the file with the same
   bytes, and then deleted: issue 30's hole 4).

So ceil(N/25) + ceil(G/25) + 2 requests for G superseded items and chunks (2N
when every entry replaced one), whatever the table holds. A prune (removals
whose whole partitions go) first reads each of those partitions (one GSI
Query each: every version, tombstone and leftover in it), writes tombstones,
seals, removes the partitions from the registry, then deletes everything it
read and, once that is gone, its own tombstones: readers drop a partition the
registry no longer lists, and nothing older is left to come back.

A commit refused or
cut short before its seal deletes its own items (their keys are its own) and
then drops its id; an id whose writes may still land (an answer lost, an
interrupted call) stays pending for good, so they stay invisible.

Readers take the newest sealed version of each path (see ``items.resolve``),
so the commit is visible whole or not at all.

``fencing = False`` is swamp's commit: the entries rewritten in place
(``META``, unconditional BatchWriteItem), then the sequence bumped
unconditionally, then the registry.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from harness.aws_errors import is_condition_failed, outcome_unknown
from harness.clock import now_ms
from harness.datastore.backends.base import CommitResult, FileMeta, partition_of
from harness.datastore.backends.dynamodb.cursor import DynamoCursor, Known
from harness.datastore.backends.dynamodb.items import (
    FORGOT,
    LAST_COMMIT,
    META_SK,
    MODEL_FENCE,
    NEWEST,
    PER_MODEL,
    VERSION_PREFIX,
    chunk_keys,
    claim_id,
    file_key,
    lock_item_key,
    meta_item,
    n_,
    registry_key,
    s_,
    version_item,
    version_key,
)
from harness.datastore.errors import FencedError, LockLostError
from harness.datastore.lock import LockGrant
from harness.work import Work, for_fencing, sending

if TYPE_CHECKING:
    from harness.datastore.backends.dynamodb.backend import DynamoBackend

REGISTRY_BATCH = 60  # partitions per registry UpdateItem (a condition expression is at most 4 KB)
SEAL_FORGETS = 50  # model fences a prune's seal removes at most (the rest stay: they only take space)


class Claims:
    """Which commit ids each grant has used, and which must stay pending (something of theirs may still land).

    One per backend (per process): the commits of one grant run one at a time,
    so a grant's sequence is never raced by its own commits.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._used: dict[str, int] = {}  # nonce -> commits started under it
        self._mutex: dict[str, threading.Lock] = {}
        self.keep: set[str] = set()  # ids the release must not drop

    def mutex(self, grant: LockGrant) -> threading.Lock:
        with self._guard:
            return self._mutex.setdefault(grant.nonce, threading.Lock())

    def next(self, grant: LockGrant) -> tuple[str, bool]:
        """(commit id, already claimed): the grant's own claim first, a fresh id after that."""
        with self._guard:
            n = self._used.get(grant.nonce, 0)
            self._used[grant.nonce] = n + 1
        return (claim_id(grant.nonce), True) if n == 0 else (uuid.uuid4().hex[:16], False)

    def forget(self, grant: LockGrant) -> None:
        with self._guard:
            self._used.pop(grant.nonce, None)
            self._mutex.pop(grant.nonce, None)


def registry_update(partitions: set[str], forget: Sequence[str], seq: int, *, conditional: bool,
                    newest: dict[str, str] | None = None) -> list[tuple[str, str | None, dict, dict]]:
    """(update, condition, names, values) per registry UpdateItem: touched partitions set, forgotten removed.

    A touched partition's birth is set when absent (a forgotten one is born
    again). With ``conditional`` no partition may already be past ``seq`` (that
    would be a newer holder's commit), and no prune may have forgotten
    partitions at ``seq`` or later: a commit that old can never seal, and
    without this check its registry write would list a pruned partition again,
    born before what readers had read of it, so they would never drop what the
    prune removed (lifecycle-safety's lost deletes). ``newest`` (fenced):
    partition -> ``<cid>|<path>`` of this commit, so a pull can tell a GSI that
    is behind from a partition with nothing new. Forgetting records ``forgot``.
    """
    todo = [(p, "set") for p in sorted(partitions)] + [(p, "forget") for p in sorted(set(forget) - set(partitions))]
    out = []
    for i in range(0, len(todo), REGISTRY_BATCH):
        sets, removes, conds, names = [], [], [], {}
        values = {":s": n_(seq)}
        batch = todo[i:i + REGISTRY_BATCH]
        for j, (part, what) in enumerate(batch):
            c, b, k = f"#c{j}", f"#b{j}", f"#k{j}"
            names[c], names[b] = f"c:{part}", f"b:{part}"
            if what == "set":
                sets += [f"{c} = :s", f"{b} = if_not_exists({b}, :s)"]
                if newest and part in newest:
                    names[k], values[f":k{j}"] = f"{NEWEST}{part}", s_(newest[part])
                    sets.append(f"{k} = :k{j}")
            else:
                names[k] = f"{NEWEST}{part}"
                removes += [c, b, k]
            conds.append(f"(attribute_not_exists({c}) OR {c} <= :s)")
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


class FencedCommit:
    """One fenced commit (upserts and removals): registry, version items, seal, then cleanup."""

    def __init__(self, be: DynamoBackend, namespace: str | None, grant: LockGrant, base_seq: int | None,
                 cursor: DynamoCursor, work: Work, model: tuple[str, int] | None = None) -> None:
        self.be, self.ns, self.grant, self.base, self.cur, self.work = be, namespace, grant, base_seq, cursor, work
        self.model = model
        self.key = grant.key
        self.cid = ""
        self.written: list[dict] = []  # keys of the version items this commit sent (its own: safe to delete)
        self.unknown = False  # a write whose outcome is unknown: it may still land after an undo
        self.abandoned = False  # interrupted mid-write: calls it started may still land
        self.last: str | None = None  # what the seal records as the domain's newest commit (see items.LAST_COMMIT)
        self.seal_ms: int | None = None  # when the seal was first sent (botocore's before-send), None if never
        self.sent_ms: int | None = None  # ... and last sent (a retry)

    def _fenced(self, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {self.key} (fence {self.grant.fence}) {why}")

    def _check_live(self) -> None:
        if self.grant.lost:
            raise LockLostError(f"commit refused: lock {self.key} (fence {self.grant.fence}) was lost")

    def run(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta], forget: Sequence[str]) -> CommitResult:
        with self.be.claims.mutex(self.grant):
            self._check_live()
            self.cid, claimed = self.be.claims.next(self.grant)
            if not claimed:
                self._claim()
            try:
                if self.base is None:  # a caller without a pulled view (seeding, tests): the sequence as it is now
                    self.base = self.be.lock_store.state(self.key, self.work).seq
                seq = self.base + 1
                # everything a prune will delete after its seal
                doomed = self.be.partition_items(self.ns, forget, removals, self.work)
                with for_fencing(self.work):  # the harness's registry: swamp's commit writes none of it
                    self._register(upserts, removals, forget, seq)
                items = [self._item(m, seq, False) for m in upserts] + [self._item(m, seq, True) for m in removals]
                self.written = [version_key(i["relPath"]["S"], self.cid) for i in items]
                if items:
                    self.last = f"{self.cid}|{len(items)}|{items[0]['relPath']['S']}"
                self._write(items)
                self.work.index_entries_written += len(upserts)
                self.work.items_written += len(items)
                self._check_live()
            except BaseException as e:
                self.abandoned = not isinstance(e, Exception)  # a killed user: started calls may still land
                self._undo()
                raise
            try:
                with for_fencing(self.work):  # the seal on the lock item (swamp's sequence is its bookkeeping's)
                    sealed = self._seal(seq, forget)
            except BaseException as e:
                # Undo only a seal known not to have landed; one that may have (a lost answer, an interrupted call)
                # leaves everything: sealed, it is whole; not sealed, the id stays pending and it stays invisible.
                if isinstance(e, Exception) and not outcome_unknown(e):
                    self._undo()
                else:
                    self.be.claims.keep.add(self.cid)
                raise
        self._after_seal(upserts, removals, forget, doomed, sealed)
        return CommitResult(sealed, sealed - 1, self.cid, self.key, seal_ms=self.seal_ms, sent_ms=self.sent_ms)

    def _claim(self) -> None:
        """A second commit under one grant claims an id of its own (conditioned on still holding the lock)."""
        try:
            self.be.client.update_item(TableName=self.be.table, Key=lock_item_key(self.key),
                                       UpdateExpression="ADD pending :c", ConditionExpression="nonce = :n",
                                       ExpressionAttributeValues={":n": s_(self.grant.nonce),
                                                                  ":c": {"SS": [self.cid]}})
        except ClientError as e:
            if is_condition_failed(e):
                raise self._fenced("is no longer held") from e
            raise

    def _item(self, meta: FileMeta, seq: int, tombstone: bool) -> dict:
        if tombstone:
            meta = FileMeta(meta.rel_path, meta.size, meta.digest, now_ms(self.be.clock), meta.version)
        return version_item(self.be.gsi_layout, self.ns, meta, cid=self.cid, seq=seq, fence=self.grant.fence,
                            domain=self.key, tombstone=tombstone)

    def _register(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta], forget: Sequence[str],
                  seq: int) -> None:
        """Touched partitions, before anything is written (pruned ones are removed after the seal)."""
        if self.be.gsi_layout not in PER_MODEL:
            return
        count: dict[str, int] = {}
        first: dict[str, str] = {}
        for m in [*upserts, *removals]:
            if (p := partition_of(m.rel_path, self.ns)) and p not in forget:
                count[p] = count.get(p, 0) + 1
                first.setdefault(p, m.rel_path)
        newest = {p: f"{self.cid}|{n}|{first[p]}" for p, n in count.items()}
        for update, cond, names, values in registry_update(set(newest), [], seq, conditional=True, newest=newest):
            try:
                self.be.client.update_item(TableName=self.be.table, Key=registry_key(self.ns),
                                           UpdateExpression=update, ConditionExpression=cond,
                                           ExpressionAttributeNames=names, ExpressionAttributeValues=values)
            except ClientError as e:
                if is_condition_failed(e):
                    raise self._fenced(f"is stale: a partition it writes is already past sequence {seq}, or a "
                                       f"prune at or past it removed partitions") from e
                raise

    def _write(self, items: list[dict]) -> None:
        try:
            self.be.batch_write([{"PutRequest": {"Item": i}} for i in items], self.work)
        except Exception as e:
            self.unknown = outcome_unknown(e)
            raise

    def _seal(self, seq: int, forget: Sequence[str] = ()) -> int:
        """The one conditional write that makes the commit visible: on the grant's nonce, this commit's id still
        pending, the sequence this holder pulled at, and (two-phase) its model lock's fence still the newest.

        A prune's seal also removes the model fences of the partitions it forgets.
        """
        base = self.base or 0
        cond = "nonce = :n AND contains(pending, :cs) AND "
        cond += "(attribute_not_exists(#s) OR #s = :b)" if base == 0 else "#s = :b"
        names = {"#s": "seq"}
        values = {":n": s_(self.grant.nonce), ":c": {"SS": [self.cid]}, ":cs": s_(self.cid), ":b": n_(base),
                  ":new": n_(seq)}
        if self.model is not None:
            names["#mf"], values[":mf"] = MODEL_FENCE + self.model[0], n_(self.model[1])
            cond += " AND #mf = :mf"
        gone = sorted(forget)[:SEAL_FORGETS]
        for i, p in enumerate(gone):
            names[f"#g{i}"] = MODEL_FENCE + p
        remove = f" REMOVE {', '.join(f'#g{i}' for i in range(len(gone)))}" if gone else ""
        last = ""
        if self.last is not None:
            names["#l"], values[":l"], last = LAST_COMMIT, s_(self.last), ", #l = :l"
        try:
            with sending(self.be.clock) as sent:
                self.be.client.update_item(
                    TableName=self.be.table, Key=lock_item_key(self.key),
                    UpdateExpression=f"SET #s = :new{last}{remove} DELETE pending :c", ConditionExpression=cond,
                    ExpressionAttributeNames=names, ExpressionAttributeValues=values)
        except ClientError as e:
            if not is_condition_failed(e):
                raise
            now = self.be.lock_store.state(self.key, self.work)
            if now.nonce == self.grant.nonce and self.cid not in now.pending and now.seq >= seq:
                return seq  # a retried seal whose first attempt had landed
            if now.nonce != self.grant.nonce:
                raise self._fenced("is no longer held: the commit was not sealed") from e
            if self.model is not None and now.model_fences.get(self.model[0]) != self.model[1]:
                raise self._fenced(f"commits model {self.model[0]} under a stale model lock (fence "
                                   f"{self.model[1]}; the newest is {now.model_fences.get(self.model[0])})") from e
            raise self._fenced(f"was held, but the index moved since this holder pulled it "
                               f"(sequence {now.seq}, pulled at {base})") from e
        finally:
            self.seal_ms = sent.first
            self.sent_ms = sent.last
        return seq

    def _undo(self) -> None:
        """Delete our own items (only ours carry this id); drop the id once nothing of ours can still land."""
        undo = Work()
        try:
            if self.written:
                self.be.batch_write([{"DeleteRequest": {"Key": k}} for k in self.written], undo)
            if self.unknown or self.abandoned:
                self.be.claims.keep.add(self.cid)
            else:
                self.be.lock_store.drop_claim(self.cid, self.key, undo)
        except Exception:  # noqa: BLE001 - what is left stays invisible (the id is still pending)
            self.be.claims.keep.add(self.cid)
        finally:
            self.work.add(undo)

    def _after_seal(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta], forget: Sequence[str],
                    doomed: list[dict], seq: int) -> None:
        """The cursor follows the commit; what it superseded is deleted (best effort, else kept for later)."""
        cur, sk = self.cur, VERSION_PREFIX + self.cid
        gone = set(forget)
        old: list[dict] = []
        for m in upserts:
            prior = cur.refs.get(m.rel_path)
            if prior is not None:
                old.append(file_key(m.rel_path, prior.sk))
                if (prior.meta.version, prior.meta.digest) != (m.version, m.digest):
                    DynamoCursor.add(cur.content_garbage, chunk_keys(prior.meta))
            cur.refs[m.rel_path] = Known(sk, m)
        tombstones = []
        for m in removals:
            prior = cur.refs.pop(m.rel_path, None)
            if prior is not None:
                old.append(file_key(m.rel_path, prior.sk))
            DynamoCursor.add(cur.content_garbage, chunk_keys(prior.meta if prior else m))
            if partition_of(m.rel_path, self.ns) in gone:
                tombstones.append(version_key(m.rel_path, self.cid))  # its partition goes: readers drop it whole
        for p in gone:
            cur.parts.pop(p, None)
            for rel in [r for r in cur.refs if partition_of(r, self.ns) == p]:
                cur.refs.pop(rel)
        if cur.seq is not None and cur.seq == self.base:  # the view was current: with this commit it still is
            cur.seq = seq
            for m in [*upserts, *removals]:
                p = partition_of(m.rel_path, self.ns)
                if p and p not in gone:
                    cur.parts[p] = seq
        DynamoCursor.add(cur.garbage, old)
        # content too, now, under the lock: left for the next push, a chunk key this commit made garbage could be
        # written again meanwhile by someone re-creating the same file with the same bytes, and then deleted
        with for_fencing(self.work) as fw:  # superseded versions and chunks (swamp rewrites in place)
            self.be.collect(cur, fw, content=True,
                            keep={(k["pk"]["S"], k["sk"]["S"]) for m in upserts for k in chunk_keys(m)})
        if gone:  # the tombstones go only once readers no longer query their partitions and nothing older is left
            forgotten = self.be.forget(self.ns, sorted(gone), seq, self.work)
            self.be.bury(doomed, tombstones if forgotten else [], self.work)


def unfenced_commit(be: DynamoBackend, namespace: str | None, upserts: Sequence[FileMeta],
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
