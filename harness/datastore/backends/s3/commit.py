"""The S3 commit: copy-on-write shards, then the head swapped with ``If-Match`` (see ``backend.py``).

Per commit: the shards it changes are written under new keys, one after
another, then the head is swapped: shards + 1 requests under the lock, or with
``commit = "swamp"`` (``swamp.py``) the head and each dirty shard read first,
as swamp's ``commitPushShardFirst`` reads them: 2 x shards + 2. Fenced, the
shards and content it superseded are deleted after the release (one
DeleteObjects: their keys name the commits that wrote them, which no other
commit writes, and a sealed commit is never undone); unfenced, right after the
swap.

The head is the commit's fate record: it carries ``sealed``, the ids of the
newest ``SEALED_WINDOW`` commits by sequence. A seal that fails, whatever the
error (refused, throttled, a server error, a reset: an earlier attempt's answer
may have been lost, issue 55), reads it: its id at its sequence, it sealed
(acknowledged, whoever holds the lock now); another id there, or a sequence not
reached, it did not (its new shards that the current head does not name go,
once no attempt of the swap can still land); its sequence past the window, or
the head unreadable, its fate is unknown (indeterminate: nothing of it is
deleted). Never "refused" while visible (issue 43's hole 3), never undone while
sealed (issue 55).

A two-phase commit (``model_fence``) is refused when its model's lock has a
newer holder, when a prune removed its model (the prune drops the model's
entry from ``modelFences``), and when its model's entries are no longer those
its scoped pull read (a delete or prune of the model sealed since): as on
DynamoDB.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed, outcome_unknown
from harness.core.clock import Clock, now_ms
from harness.core.work import Sends, Work, recording, sending
from harness.datastore.backends.base import CommitResult, FileMeta, partition_of
from harness.datastore.backends.s3.index import (
    META_RETRIES,
    S3Cursor,
    Shard,
    StaleHead,
    content_rel,
    same_content,
    shard_doc,
    shard_rel,
)
from harness.datastore.backends.s3.modes import S3Mode
from harness.datastore.backends.s3.objects import S3Objects
from harness.datastore.backends.s3.swamp import S3Swamp
from harness.datastore.errors import CommitIndeterminateError, FencedError
from harness.datastore.lock import LockGrant

SEALED_WINDOW = 64  # commits whose ids the head keeps by sequence: a lost seal's retry reads its fate there


@dataclass
class _Rewrite:
    """What a commit's shard writes leave: the head's shard map, our new shard objects (deleted again if the swap
    fails), the shards and content the swap replaces (deleted after it), the committer's view of each shard."""

    shards: dict[str, str]
    written: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    new_shards: dict[str, Shard | None] = field(default_factory=dict)


def _new_head(doc: dict, seq: int, grant: LockGrant, cid: str, shards: dict[str, str],
              forget: Sequence[str] | None) -> dict:
    """The head this commit swaps in. Fenced (``forget`` not None) it is the fate record: this commit's id at its
    sequence, in a window of the newest; a prune fences its models' holders (their ``modelFences`` go)."""
    head = {**doc, "commitSeq": seq + 1, "fence": max(int(doc.get("fence", 0)), grant.fence), "cid": cid,
            "shards": shards}
    if forget is not None:
        sealed = {k: v for k, v in doc.get("sealed", {}).items() if int(k) > seq + 1 - SEALED_WINDOW}
        head["sealed"] = {**sealed, str(seq + 1): cid}
        if forget and doc.get("modelFences"):
            head["modelFences"] = {p: f for p, f in doc["modelFences"].items() if p not in set(forget)}
    return head


class S3Commits:
    """The commit half of ``S3Backend`` (a mixin: it uses the backend's objects, cursor reads and mutexes)."""

    objects: S3Objects
    clock: Clock
    swamp: S3Swamp
    mode: S3Mode  # fenced or swamp's, chosen once (choose.py)
    later: Any
    _wants: Any

    def commit(self, namespace: str | None, entries: Sequence[FileMeta], grant: LockGrant, work: Work, *,
               base_seq: int | None = None, cid: str | None = None,
               cursor: dict | None = None, model_fence: tuple[str, int] | None = None) -> CommitResult:
        """(swamp's S3 bookkeeping keeps its sequence in the head already: nothing more to write beside it.)"""
        with recording(work):
            return self._apply(namespace, {e.rel_path: e for e in entries}, set(), grant, work, base_seq,
                               cid or uuid.uuid4().hex[:16], cursor, model_fence)

    def delete_files(self, namespace: str | None, metas: Sequence[FileMeta], grant: LockGrant, work: Work, *,
                     cid: str | None = None, cursor: dict | None = None,
                     base_seq: int | None = None, forget: Sequence[str] = ()) -> CommitResult:
        """The index first (a commit of removals, fenced), the content only once that is sealed.

        A partition whose shard empties leaves the head with it (``forget`` needs nothing more)."""
        with recording(work):
            return self._apply(namespace, {}, {m.rel_path for m in metas}, grant, work, base_seq,
                               cid or uuid.uuid4().hex[:16], cursor, forget=forget)

    def _fenced(self, grant: LockGrant, why: str) -> FencedError:
        return FencedError(f"commit rejected: lock {grant.key} (fence {grant.fence}) {why}")

    def _apply(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str], grant: LockGrant,
               work: Work, base_seq: int | None, cid: str, cursor: dict | None,
               model_fence: tuple[str, int] | None = None, forget: Sequence[str] = ()) -> CommitResult:
        cur = S3Cursor.of(cursor, self._head_rel(grant.key, namespace))
        with self._mutex_of(grant):
            for attempt in range(META_RETRIES):
                try:
                    return self._apply_once(namespace, upserts, removals, grant, work, base_seq, cid, cur,
                                            model_fence, forget)
                except StaleHead:
                    cur.head = cur.etag = None
                    if attempt == META_RETRIES - 1:
                        raise self._fenced(grant, "lost the race: the index kept changing under the commit") from None
        raise AssertionError("unreachable")

    def _apply_once(self, namespace: str | None, upserts: dict[str, FileMeta], removals: set[str],
                    grant: LockGrant, work: Work, base_seq: int | None, cid: str,
                    cur: S3Cursor, model_fence: tuple[str, int] | None = None,
                    forget: Sequence[str] = ()) -> CommitResult:
        """One attempt: the head checked, the changed shards written under new keys, the head swapped (sealed).
        What is checked, how it seals and when its garbage goes are the backend's mode's (``modes.py``)."""
        mode = self.mode
        mode.refuse_lost(grant)
        rereads = self.swamp.rereads_under_lock
        if mode.reads_head(cur) or rereads:  # swamp's commit reads _meta.json first whatever it holds
            self._read_head(cur, work)
        doc, etag = cur.head or {}, cur.etag
        seq = int(doc.get("commitSeq", 0))
        mode.check(self, doc, seq, grant, base_seq, model_fence)
        model_fence = mode.model_fence(model_fence)
        out = _Rewrite(shards=dict(doc.get("shards", {})))
        by_part = self._by_part(upserts, removals, namespace)
        if model_fence is not None:  # (the model's shards this commit does not rewrite: unchanged too)
            self._model_shards_unchanged(grant, cur, out.shards, set(by_part), model_fence[0], namespace)
        try:
            for part, (ups, rems) in by_part.items():
                self._rewrite_shard(out, part, ups, rems, cur, grant, cid, work, namespace,
                                    model_fence, trust=mode.trusts_cursor() and not rereads)
            mode.refuse_lost(grant)
        except BaseException:
            self._discard(out.written, work)
            raise
        head = _new_head(doc, seq, grant, cid, out.shards, mode.fate_record(forget))
        new_etag, sent = self._swap(head, etag, cur, cid, seq + 1, out.written, grant, work)
        current = cur.seq is not None and cur.seq == seq
        if new_etag is not None:
            cur.know(head, new_etag)
            cur.fresh_for = grant.nonce
        for part, shard in out.new_shards.items():
            if shard is None:
                cur.shards.pop(part, None)
            else:
                cur.shards[part] = shard
        if current:
            cur.seq = seq + 1
        mode.superseded(self, grant, out.superseded, work)  # fenced: after the release; swamp's: now
        return CommitResult(seq + 1, seq, cid, cur.head_rel or "", seal_ms=sent.first, sent_ms=sent.last)

    def _check_head(self, doc: dict, seq: int, grant: LockGrant, base_seq: int | None,
                    model_fence: tuple[str, int] | None) -> None:
        """Fenced: refused before anything is written if a newer fence holds the index, the index moved since the
        holder's pull, or (two-phase) the model's lock has a newer holder or a prune removed the model."""
        if int(doc.get("fence", 0)) > grant.fence:
            raise self._fenced(grant, f"is stale: fence {doc['fence']} already holds the index")
        if base_seq is not None and seq != base_seq:
            raise self._fenced(grant, f"was held, but the index moved since this holder pulled it "
                                      f"(sequence {seq}, pulled at {base_seq})")
        if model_fence is not None and int(doc.get("modelFences", {}).get(model_fence[0], 0)) != model_fence[1]:
            raise self._fenced(grant, f"commits model {model_fence[0]} under a stale lock (fence "
                                      f"{model_fence[1]}): a newer holder of the model was granted, or a "
                                      f"prune removed the model")

    def _by_part(self, upserts: dict[str, FileMeta], removals: set[str],
                 namespace: str | None) -> dict[str, tuple[dict[str, FileMeta], set[str]]]:
        """The commit's upserts and removals by the shard they fall in (in the order they come)."""
        by_part: dict[str, tuple[dict[str, FileMeta], set[str]]] = defaultdict(lambda: ({}, set()))
        for rel, m in upserts.items():
            by_part[self.shard_of(rel, namespace)][0][rel] = m
        for rel in removals:
            by_part[self.shard_of(rel, namespace)][1].add(rel)
        return by_part

    def _rewrite_shard(self, out: _Rewrite, part: str, ups: dict[str, FileMeta], rems: set[str], cur: S3Cursor,
                       grant: LockGrant, cid: str, work: Work, namespace: str | None,
                       model_fence: tuple[str, int] | None, *, trust: bool) -> None:
        """One changed shard written under a new key (or dropped when it empties); what it replaces noted."""
        old_ref = out.shards.get(part)
        # (swamp's GETs each dirty shard before its PUT, one shard after another, cached or not)
        old = self._shard_entries(cur, part, old_ref, work, trust=trust) if old_ref else {}
        if model_fence is not None:
            self._model_unchanged(grant, cur, part, old, model_fence[0], namespace)
        entries = {r: m for r, m in old.items() if r not in rems}
        entries.update(ups)
        out.superseded += [content_rel(m) for r, m in old.items()
                           if r in rems or (r in ups and not same_content(m, ups[r]))]
        if old_ref:
            out.superseded.append(old_ref)
        if entries:
            ref = shard_rel(cur.head_rel or "", part, cid)
            out.written.append(ref)
            self.objects.put(ref, shard_doc(entries, self.swamp.shards, fence=grant.fence, cid=cid), work)
            out.shards[part] = ref
            # the committer's view of it: what its pull took in (not what another model's commit added
            # since, read here), with this commit's own entries
            had = cur.shards[part].view if part in cur.shards else {}
            out.new_shards[part] = Shard.of(ref, entries, {**{r: m for r, m in had.items() if r not in rems}, **ups})
            work.index_entries_written += len(entries)
        else:
            out.shards.pop(part, None)
            out.new_shards[part] = None
        work.items_written += 1

    def _swap(self, head: dict, etag: str | None, cur: S3Cursor, cid: str, seq: int, written: list[str],
              grant: LockGrant, work: Work) -> tuple[str | None, Sends]:
        """The seal: the head swapped (fenced: ``If-Match`` the head read, ``If-None-Match`` when there was
        none). Its new ETag, or None when a failed swap's fate says it sealed all the same."""
        sent = Sends(lambda: now_ms(self.clock))
        if_match, if_none_match = self.mode.conditions(etag)
        try:
            with sending(self.clock) as sent:
                return self.objects.put(cur.head_rel or "", json.dumps(head).encode(), work,
                                        if_match=if_match, if_none_match=if_none_match), sent
        except BaseException as e:
            # fenced: its fate read from the head (returns when it sealed); swamp's: the failure stands
            self.mode.swap_failed(self, e, cur, cid, seq, written, grant, work)
            # the head, its fate record, names this commit at its sequence: its swap landed (an attempt whose
            # answer was lost); the head as just read is current
            return None, sent

    def _after_failed_seal(self, e: BaseException, cur: S3Cursor, cid: str, seq: int, written: list[str],
                           grant: LockGrant, work: Work) -> None:
        """After ANY failed head swap, its fate read from the head (never guessed from the error's code): returns
        when it sealed; raises otherwise. Not sealed (another id at its sequence, or the sequence not reached),
        only the new shards the current head does not name go, and only when no attempt may still land (the
        swap was refused, or every attempt was answered); a fate that cannot be read is indeterminate and
        nothing is deleted."""
        if not isinstance(e, Exception):  # the worker is being stopped: nothing more is sent, nothing deleted
            cur.head = cur.etag = None
            raise e
        refused = isinstance(e, ClientError) and is_condition_failed(e)
        try:
            fate = self._fate(cur, cid, seq, work)
        except Exception as read_error:  # noqa: BLE001 - the fate read failed: whether it sealed is unknown
            cur.head = cur.etag = None
            raise CommitIndeterminateError(f"commit {cid}: its seal failed ({type(e).__name__}) and its fate "
                                           f"could not be read ({read_error}): it may have sealed") from e
        if fate is None:  # past the head's window: it may have sealed; nothing of it is deleted
            cur.head = cur.etag = None
            raise CommitIndeterminateError(f"commit {cid}: its seal's answer was lost and the head has moved "
                                           f"{SEALED_WINDOW} commits past its sequence: its fate is unknown") from e
        if fate:
            return
        if refused or not outcome_unknown(e):  # no attempt of it can land now
            self._discard(self._unreferenced(cur, written), work)
        if refused:
            raise self._refusal(grant, cur) from e
        cur.head = cur.etag = None
        raise e  # (a swap that may still land references them: they stay)

    def _fate(self, cur: S3Cursor, cid: str, seq: int, work: Work) -> bool | None:
        """After a failed seal: did this commit seal at ``seq``? From the head, its fate record: True, False, or
        None (unknown: the head's window of sealed ids has moved past it)."""
        self._read_head(cur, work)
        doc = cur.head or {}
        if int(doc.get("commitSeq", 0)) < seq:
            return False  # its swap would have set this sequence, and sequences never go back
        got = doc.get("sealed", {}).get(str(seq))
        if got is not None:
            return got == cid
        return True if doc.get("cid") == cid else None

    def _model_shards_unchanged(self, grant: LockGrant, cur: S3Cursor, shards: dict[str, str], touched: set[str],
                                partition: str, namespace: str | None) -> None:
        """Two-phase: every shard of the model the commit leaves alone is the one its scoped pull read."""
        of_model = self._wants({partition}, namespace)
        for part in {p for p in {*shards, *cur.shards} if of_model(p)} - touched:
            have = cur.shards.get(part)
            if shards.get(part) != (have.ref if have else None):
                raise self._fenced(grant, f"commits model {partition}, which changed since its scoped pull (a "
                                          f"delete or prune of it sealed since)")

    def _model_unchanged(self, grant: LockGrant, cur: S3Cursor, part: str, old: dict[str, FileMeta],
                         partition: str, namespace: str | None) -> None:
        """Two-phase: the model's entries in this shard are those its scoped pull read (else a delete or prune
        of the model sealed since: refused, as the registry's check refuses it on DynamoDB)."""
        def model(entries: dict[str, FileMeta]) -> dict[str, FileMeta]:
            return {r: m for r, m in entries.items() if partition_of(r, namespace) == partition}

        have = cur.shards.get(part)
        if model(old) != model(have.entries if have else {}):
            raise self._fenced(grant, f"commits model {partition}, which changed since its scoped pull (a delete or "
                                      f"prune of it sealed since)")

    @staticmethod
    def _unreferenced(cur: S3Cursor, written: list[str]) -> list[str]:
        """Of our new shards, those the current head (just read) does not name: only they may go."""
        named = set((cur.head or {}).get("shards", {}).values())
        return [r for r in written if r not in named]

    def _refusal(self, grant: LockGrant, cur: S3Cursor) -> FencedError:
        """Why the head swap was refused (the head as just read): a newer holder's fence, or the index moved."""
        doc = cur.head or {}
        cur.head = cur.etag = None
        if int(doc.get("fence", 0)) > grant.fence:
            return self._fenced(grant, f"is no longer held: fence {doc['fence']} was granted since")
        return self._fenced(grant, "lost the race: the index changed under the commit")

    def _discard(self, rels: list[str], work: Work) -> None:
        try:
            self.objects.delete(rels, work)
        except Exception:  # noqa: BLE001 - unreferenced shards are invisible; only space is lost
            pass
