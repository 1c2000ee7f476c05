"""A fenced commit on DynamoDB: registry, version items, seal; what it made garbage goes after the release.

A fenced commit of N entries (no TransactWriteItems: dynalite has none, and
moto's cost grows with the table) is, under a grant that claimed its commit id
when it was made (``pending`` on the lock item, see ``locks.py``):

1. the partition registry (``registry.py``): each touched partition's last
   sequence set to this commit's ``s`` (and its birth, if new), and the
   commit's record of it (the partition's digest after the commit), conditioned
   on none of them being past ``s`` already (a newer holder touched it) and no
   prune at or past ``s``; a two-phase commit's model partition must be as its
   scoped pull saw it (nothing wrote it since). Refused here, before anything
   is written. ``ceil(P/20)`` requests for P partitions (usually one);
2. the entries as new items, one per version (``V#<cid>``, never overwritten),
   with BatchWriteItem, 25 a call: unconditional, since nobody else writes
   these keys, and invisible while the commit id is pending;
3. the seal: one UpdateItem of the lock item setting ``seq = s`` and removing
   the id from ``pending``, conditioned on the grant's nonce, on ``seq`` still
   being the sequence this holder pulled at and (two-phase) on its model lock's
   fence. Once a newer holder is granted the lock, nothing of an older holder's
   can ever seal: the lease is the fence. A seal that fails, whatever the error
   (refused, throttled, a server error: an earlier attempt's answer may have
   been lost, issue 55), reads the lock item: its id no longer pending means an
   attempt of it sealed (an answer lost, botocore sent it again): the commit is
   sealed, whoever holds the lock now; the read failing, its fate is unknown
   (``CommitIndeterminateError``, nothing undone). Only this commit's seal removes its id (its writer drops it
   only after undoing everything it wrote), so that is the commit's fate, read
   from one record, never from the lock's current holder (issue 43's hole 3).

So ``ceil(N/25) + 2`` requests under the lock for N entries over one
registry batch of partitions. Then, after the release (``collect_after``), the
versions it superseded and the content chunks they pointed at are deleted, in
shared BatchWriteItems: those keys name the commits that wrote them (version
items their commit's id, chunks their writer's), no other commit ever writes
them, and a sealed commit is never undone, so nothing live is among them, and
a collection late by any time (a frozen holder, a throttle kept for the next
push) deletes only garbage (holes 1, 2, 6).

A prune (removals whose whole partitions go) first reads each of those
partitions (every version, tombstone and leftover in it), writes a prune's
tombstone (``fg``) for every path it holds there, records the partitions as
pruned (readers drop them once the seal is), seals; after the release it
removes them from the registry and deletes everything it read and, once that
is gone, its own tombstones.

A commit refused or cut short before its seal deletes its own items and its
records (their keys are its own) and then drops its id; an id whose writes may
still land (an answer lost, an interrupted call) stays pending for good, so
they stay invisible and its records never count.
"""

from __future__ import annotations

from collections.abc import Sequence

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed, outcome_unknown
from harness.core.clock import now_ms
from harness.core.work import Work, for_fencing, sending
from harness.datastore.backends.base import CommitResult, FileMeta, partition_of
from harness.datastore.backends.dynamodb.commit import registry_update
from harness.datastore.backends.dynamodb.cursor import DynamoCursor, Known
from harness.datastore.backends.dynamodb.items import (
    MODEL_FENCE,
    NS_DIGEST,
    NS_EPOCH,
    PER_MODEL,
    VERSION_PREFIX,
    DomainState,
    chunk_keys,
    file_key,
    lock_item_key,
    n_,
    registry_key,
    s_,
    same_content,
    version_item,
    version_key,
)
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.backends.dynamodb.registry import (
    ABSENT,
    FENCED_BATCH,
    PRUNED,
    TRIM,
    digest_of,
    entry_hash,
    record_name,
)
from harness.datastore.errors import CommitIndeterminateError, FencedError, LockLostError
from harness.datastore.lock import LockGrant

SEAL_FORGETS = 50  # model fences a prune's seal removes at most (the rest stay: they only take space)


def _tag(e: BaseException, cid: str) -> None:
    """The id this commit used, on its error: the history records it (the checker reads its fate by it)."""
    try:
        e.commit_id = cid  # type: ignore[attr-defined]
    except AttributeError:  # (an exception without a __dict__)
        pass


class FencedCommit:
    """One fenced commit (upserts and removals): registry, version items, seal; cleanup after the release."""

    def __init__(self, be: DynamoPort, namespace: str | None, grant: LockGrant, base_seq: int | None,
                 cursor: dict, work: Work, model: tuple[str, int] | None = None) -> None:
        self.be, self.ns, self.grant, self.base, self.work = be, namespace, grant, base_seq, work
        self.cursor, self.cur = cursor, DynamoCursor.of(cursor)
        self.model = model
        self.key = grant.key
        self.cid = ""
        self.per_model = be.gsi_layout in PER_MODEL
        self.written: list[dict] = []  # keys of the version items this commit sent (its own: safe to delete)
        self.records: dict[str, tuple[str, str]] = {}  # partition -> its record (attribute, value): its own too
        self.registered = False  # a registry write was sent: undo removes the records
        self.learned: set[str] = set()  # partitions the commit had to read first (its cursor did not hold them)
        self.unknown = False  # a write whose outcome is unknown: it may still land after an undo
        self.abandoned = False  # interrupted mid-write: calls it started may still land
        self.delta = 0  # legacy: what the commit moves its namespace's digest by (the seal adds it)
        self.seal_ms: int | None = None  # when the seal was first sent (botocore's before-send), None if never
        self.sent_ms: int | None = None  # ... and last sent (a retry)

    def _fenced(self, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {self.key} (fence {self.grant.fence}) {why}")

    def _check_live(self) -> None:
        if self.grant.lost:
            raise LockLostError(f"commit refused: lock {self.key} (fence {self.grant.fence}) was lost")

    def run(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta], forget: Sequence[str]) -> CommitResult:
        gone = set(forget)
        with self.be.claims.mutex(self.grant):
            self._check_live()
            self.cid, claimed = self.be.claims.next(self.grant)
            if not claimed:
                self._claim()
            try:
                if self.base is None:  # a caller without a pulled view (seeding, tests): the sequence as it is now
                    self.base = self.be.lock_store.state(self.key, self.work).seq
                seq = self.base + 1
                touched = {p for m in [*upserts, *removals] if (p := partition_of(m.rel_path, self.ns))} | gone
                self._learn(touched)
                doomed = self.be.partition_items(self.ns, forget, removals, self.work)  # a prune's, after the seal
                buried = self._buried(removals, gone)
                items = [self._item(m, seq, False) for m in upserts] + \
                    [self._item(m, seq, True, partition_of(m.rel_path, self.ns) in gone) for m in removals] + \
                    [self._item(m, seq, True, True) for m in buried]
                self._digests(items, seq, gone)
                with for_fencing(self.work):  # the harness's registry records: swamp's commit writes none
                    self._register(touched, seq)
                self.written = [version_key(i["relPath"]["S"], self.cid) for i in items]
                self._write(items)
                self.work.index_entries_written += len(upserts)
                self.work.items_written += len(items)
                self._check_live()
            except BaseException as e:
                self.abandoned = not isinstance(e, Exception)  # a killed user: started calls may still land
                self._undo()
                _tag(e, self.cid)
                raise
            try:
                with for_fencing(self.work):  # the seal on the lock item (swamp's sequence is its bookkeeping's)
                    sealed = self._seal(seq, forget, bool(removals))
            except BaseException as e:
                # Undo only a seal its record says did not land (its id still pending) and no attempt of which can
                # still land; one that may (a lost answer, an interrupted call) leaves everything: not sealed, the
                # id stays pending and it stays invisible. (Sealed, ``_seal`` returned; unreadable, indeterminate.)
                if isinstance(e, Exception) and not isinstance(e, CommitIndeterminateError) and \
                        not outcome_unknown(e):
                    self._undo()
                else:
                    self.be.claims.keep.add(self.cid)
                _tag(e, self.cid)
                raise
            self._after_seal(upserts, [*removals, *buried], gone, doomed, sealed)
        return CommitResult(sealed, sealed - 1, self.cid, self.key, seal_ms=self.seal_ms, sent_ms=self.sent_ms)

    # ---- before anything is written ------------------------------------------------------------------------
    def _known(self, part: str) -> bool:
        """Does the cursor hold this partition whole, as current as the commit's view (or know it is not there)?"""
        cur = self.cur
        if part in cur.known or "*" in cur.known:
            return True
        return self.per_model and cur.seq is not None and cur.seq == self.base  # its whole registry, current

    def _learn(self, parts: set[str]) -> None:
        """A commit's digest and collection need what its cursor holds of each partition it writes: a partition
        it does not hold (a caller without a cursor, seeding) is read first, a pull under this grant."""
        unknown = sorted(p for p in parts if not self._known(p))
        if unknown:
            self.be.pull(self.ns, 0, unknown, self.work, lock_key=self.key, cursor=self.cursor,
                         grant=self.grant)
            self.cur.known.update(unknown)
            self.learned = set(unknown)

    def _buried(self, removals: Sequence[FileMeta], gone: set[str]) -> list[FileMeta]:
        """The tombstoned paths of partitions a prune removes (its other removals are their live entries): each
        gets a prune's tombstone too, so no path of a removed partition counts in a digest any more."""
        if not gone:
            return []
        listed = {m.rel_path for m in removals}
        return [k.meta for r, k in sorted(self.cur.tombs.items())
                if r not in listed and partition_of(r, self.ns) in gone]

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

    def _item(self, meta: FileMeta, seq: int, tombstone: bool, gone: bool = False) -> dict:
        if tombstone:
            meta = FileMeta(meta.rel_path, meta.size, meta.digest, now_ms(self.be.clock), meta.version,
                            meta.content_id)
        return version_item(self.be.gsi_layout, self.ns, meta, cid=self.cid, seq=seq, fence=self.grant.fence,
                            domain=self.key, tombstone=tombstone, gone=gone)

    def _digests(self, items: list[dict], seq: int, gone: set[str]) -> None:
        """What the commit leaves each partition holding: its record's digest (per-model), or (legacy) what it
        moves the namespace's digest by. From the cursor's view, current as of the commit's base."""
        mine = {i["relPath"]["S"]: ("fg" not in i) for i in items}
        sk = VERSION_PREFIX + self.cid
        if not self.per_model:
            for rel, counts in mine.items():
                old = self.cur.ref_of(rel)
                self.delta += (entry_hash(rel, sk) if counts else 0) - (entry_hash(rel, old.sk) if old else 0)
            return
        by_part: dict[str, dict[str, str]] = {}
        holds = self.cur.held(self.ns)
        for rel in mine:
            p = partition_of(rel, self.ns)
            if p and p not in gone:
                by_part.setdefault(p, dict(holds.get(p, {})))[rel] = sk
        self.records = {p: (record_name(p, self.cid), f"{seq}|{digest_of(held.items())}")
                        for p, held in by_part.items()}
        self.records.update({p: (record_name(p, self.cid), f"{seq}|{PRUNED}") for p in gone})

    def _register(self, touched: set[str], seq: int) -> None:
        """Touched partitions and their records, before anything is written (pruned ones leave after the seal)."""
        if not self.per_model or not touched:
            return
        cur = self.cur
        # two-phase, its model (and a partition just read): nothing may have written it since the view was read
        watched = self.learned | ({self.model[0]} if self.model is not None else set())
        expect = {p: cur.seen_c.get(p, ABSENT) for p in touched & watched}
        births = [p for p in touched if p not in cur.parts]
        remove = {p: cur.stale.get(p, [])[:TRIM] for p in touched}
        self.registered = True
        for update, cond, names, values in registry_update(touched, [], seq, conditional=True, records=self.records,
                                                           remove=remove, births=births, expect=expect):
            try:
                self.be.client.update_item(TableName=self.be.table, Key=registry_key(self.ns),
                                           UpdateExpression=update, ConditionExpression=cond,
                                           ExpressionAttributeNames=names, ExpressionAttributeValues=values)
            except ClientError as e:
                if is_condition_failed(e) and self._recorded(names):
                    continue  # its own first attempt landed (its answer lost): the records are there
                if is_condition_failed(e):
                    raise self._fenced(f"is stale: a partition it writes changed since its view, is already past "
                                       f"sequence {seq}, or a prune at or past it removed partitions") from e
                raise

    def _recorded(self, names: dict) -> bool:
        """Do this commit's own records of the batch exist (a registry write that landed, retried and refused)?"""
        mine = [n for n in names.values() if n.startswith("r:") and n.endswith("|" + self.cid)]
        item = self.be.client.get_item(TableName=self.be.table, Key=registry_key(self.ns),
                                       ConsistentRead=True).get("Item") or {}
        return bool(mine) and all(n in item for n in mine)

    def _write(self, items: list[dict]) -> None:
        try:
            self.be.batch_write([{"PutRequest": {"Item": i}} for i in items], self.work)
        except Exception as e:
            self.unknown = outcome_unknown(e)
            raise

    # ---- the seal ---------------------------------------------------------------------------------------------
    def _seal(self, seq: int, forget: Sequence[str] = (), structural: bool = False) -> int:
        """The one conditional write that makes the commit visible: on the grant's nonce, this commit's id still
        pending, the sequence this holder pulled at, and (two-phase) its model lock's fence still the newest.

        A prune's seal also removes the model fences of the partitions it forgets. Legacy: it moves the
        namespace's digest by what the commit changed, and a delete or prune sets the namespace's epoch.
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
        sets, adds = "", ""
        if not self.per_model:  # legacy: the namespace's digest, its epoch (no registry to hold them)
            ns = self.ns or ""
            names["#h"], values[":d"] = NS_DIGEST + ns, n_(self.delta)
            adds = " ADD #h :d"
            if self.model is not None or structural:
                names["#z"] = NS_EPOCH + ns
            if self.model is not None:  # two-phase: no delete or prune of the namespace since its scoped pull
                if self.cur.epoch is None:
                    cond += " AND attribute_not_exists(#z)"
                else:
                    values[":z"] = n_(self.cur.epoch)
                    cond += " AND #z = :z"
            if structural:
                sets = ", #z = :new"
        gone = sorted(forget)[:SEAL_FORGETS]
        for i, p in enumerate(gone):
            names[f"#g{i}"] = MODEL_FENCE + p
        remove = f" REMOVE {', '.join(f'#g{i}' for i in range(len(gone)))}" if gone else ""
        try:
            with sending(self.be.clock) as sent:
                self.be.client.update_item(
                    TableName=self.be.table, Key=lock_item_key(self.key),
                    UpdateExpression=f"SET #s = :new{sets}{remove}{adds} DELETE pending :c", ConditionExpression=cond,
                    ExpressionAttributeNames=names, ExpressionAttributeValues=values)
        except Exception as e:  # any failure (not only a refusal): the fate is read from the lock item's record
            now = self._fate(e)
            if self.cid not in now.pending:
                return seq  # only this commit's seal removes its id: an attempt of it sealed (an answer lost)
            if not is_condition_failed(e):
                raise  # still pending: not sealed (undone only if no attempt of it can still land)
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

    def _fate(self, e: Exception) -> DomainState:
        """After a failed seal, whatever the error: the lock item, whose ``pending`` set is the commit's fate
        record (only its seal removes its id). Unreadable: the fate is unknown, nothing is undone."""
        try:
            return self.be.lock_store.state(self.key, self.work)
        except Exception as read_error:  # noqa: BLE001 - whether it sealed cannot be known: indeterminate
            raise CommitIndeterminateError(f"commit {self.cid}: its seal failed ({type(e).__name__}) and its fate "
                                           f"could not be read ({read_error}): it may have sealed") from e

    def _undo(self) -> None:
        """Delete our own items and records (only ours carry this id); drop the id once nothing of ours can land."""
        undo = Work()
        try:
            if self.written:
                self.be.batch_write([{"DeleteRequest": {"Key": k}} for k in self.written], undo)
            if self.registered and self.records:
                names = [name for name, _ in self.records.values()]
                for i in range(0, len(names), FENCED_BATCH * 2):
                    batch = names[i:i + FENCED_BATCH * 2]
                    self.be.client.update_item(
                        TableName=self.be.table, Key=registry_key(self.ns),
                        UpdateExpression="REMOVE " + ", ".join(f"#r{j}" for j in range(len(batch))),
                        ExpressionAttributeNames={f"#r{j}": n for j, n in enumerate(batch)})
            if self.unknown or self.abandoned:
                self.be.claims.keep.add(self.cid)
            else:
                self.be.lock_store.drop_claim(self.cid, self.key, undo)
        except Exception:  # noqa: BLE001 - what is left stays invisible (the id is still pending)
            self.be.claims.keep.add(self.cid)
        finally:
            self.work.add(undo)

    # ---- after the seal ---------------------------------------------------------------------------------------
    def _after_seal(self, upserts: Sequence[FileMeta], removals: Sequence[FileMeta], gone: set[str],
                    doomed: list[dict], seq: int) -> None:
        """The cursor follows the commit; what it made garbage is queued for after the release."""
        cur, sk = self.cur, VERSION_PREFIX + self.cid
        old: list[dict] = []
        for m in upserts:
            prior = cur.ref_of(m.rel_path)
            if prior is not None:
                old.append(file_key(m.rel_path, prior.sk))
                if m.rel_path in cur.refs and not same_content(prior.meta, m):
                    DynamoCursor.add(cur.content_garbage, chunk_keys(prior.meta))
            cur.refs[m.rel_path] = Known(sk, m)
            cur.tombs.pop(m.rel_path, None)
        tombstones = []
        for m in removals:
            prior = cur.refs.pop(m.rel_path, None)
            if prior is not None:
                old.append(file_key(m.rel_path, prior.sk))
                DynamoCursor.add(cur.content_garbage, chunk_keys(prior.meta))
            elif m.rel_path not in cur.tombs:
                DynamoCursor.add(cur.content_garbage, chunk_keys(m))
            if partition_of(m.rel_path, self.ns) in gone:
                tombstones.append(version_key(m.rel_path, self.cid))  # its partition goes: readers drop it whole
            else:
                if (was := cur.tombs.get(m.rel_path)) is not None:
                    old.append(file_key(m.rel_path, was.sk))
                cur.tombs[m.rel_path] = Known(sk, m)
        if cur.seq is not None and cur.seq == self.base:  # the view was current: with this commit it still is
            cur.seq = seq
        # every partition it wrote was as its view held it (the seal's base, or the registry's ``c:`` it expected):
        # with this commit the cursor still holds it whole
        for p in {q for m in [*upserts, *removals] if (q := partition_of(m.rel_path, self.ns))} - gone:
            cur.parts[p] = seq
            cur.known.add(p)
        for p, (name, _) in self.records.items():  # its registry write removed the first TRIM stale records
            cur.seen_c[p] = seq
            before = cur.newest.get(p)
            cur.stale[p] = cur.stale.get(p, [])[TRIM:] + ([before] if before else [])
            cur.newest[p] = name
        forget = {p: [*([cur.newest.pop(p)] if p in cur.newest else []), *cur.stale.pop(p, [])]
                  for p in gone}  # its registry record goes too
        for p in gone:  # (held whole still: nothing of it is left)
            cur.drop_partition(p, self.ns)
        DynamoCursor.add(cur.garbage, old)
        def collect(w: Work) -> None:  # superseded versions and chunks (swamp rewrites in place): fencing's
            with for_fencing(w) as fw:
                self.be.collect(cur, fw, content=True)
        self.be.later(self.grant, collect)
        if gone:  # the tombstones go only once readers no longer query their partitions and nothing older is left
            def bury(w: Work) -> None:
                forgotten = self.be.forget(self.ns, sorted(gone), seq, w, remove=forget)
                self.be.bury(doomed, tombstones if forgotten else [], w)
            self.be.later(self.grant, bury)
