"""Reading a DynamoDB datastore's index: what changed since a worker's cursor, as readers see it.

A pull costs what changed, not what the table holds (``per-model``): one
GetItem of the lock item when nothing was sealed since the worker's own view
(its own commits included); else the registry (one GetItem) and one Query per
partition whose last sequence is past what the worker has read. ``legacy`` is
the bug as it was: every pull reads the whole ``FILE`` partition (swamp's
queryAllFileMeta, no shortcut). A pull never writes. Removals travel: a
tombstone is a version like any other (until its partition is pruned), and a
partition gone from the registry (pruned) or born again is dropped from the
worker's view whole.

Two things a reader cannot take for granted, each checked before the cursor
moves (fenced pulls):

- *one sealed state*: a reader that does not hold the commit lock (a plain
  pull, two-phase's scoped pull), or a holder whose grant runs out mid-pull
  (frozen), can have its queries straddle a seal, and the collection of what
  that seal superseded: the view "at" the sequence it read first then lacks
  entries. So the lock item is read again after the queries (one GetItem); if
  the sequence moved, or a holder's grant changed hands, the pull starts over
  (``PULL_TRIES`` times in all). (Found by ``harness explore``: a holder frozen
  at its pull's registry read.)
- *a GSI that is complete*: on AWS a GSI is read eventually consistently. The
  registry names, per partition, the newest fenced commit that touched it, how
  many items it wrote there and one of their paths; when a partition's query
  shows fewer of that commit's items, the GSI is behind: query again, after a
  short wait. When it shows none, a strongly consistent GetItem of that path's
  version tells a GSI that is behind (the item exists) from a commit that never
  landed (it does not: nothing is missing). A pull the GSI never catches
  up with fails rather than claim a view it does not have. A scoped pull
  (two-phase) reads the registry for this too: one GetItem more than before.
  The legacy layout's one ``FILE`` partition is checked against the lock
  item's ``lastc`` (the domain's newest sealed commit, which its seal sets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.core.item_size import item_size
from harness.core.work import Work, for_fencing, recording
from harness.datastore.backends.base import PullResult, partition_of
from harness.datastore.backends.dynamodb.cursor import DynamoCursor, Known
from harness.datastore.backends.dynamodb.items import (
    GSI_NAME,
    DomainState,
    Resolved,
    file_key,
    gsi_keys,
    in_partition,
    registry_key,
    resolve,
    s_,
    seq_sk,
)
from harness.datastore.backends.dynamodb.registry import ABSENT, newest_sealed, records_of, stale, view_digest
from harness.datastore.errors import TornReadError
from harness.datastore.lock import LockGrant

if TYPE_CHECKING:
    from harness.core.clock import Clock

PULL_TRIES = 4  # a pull whose queries straddled a seal starts over; so many tries in all
GSI_TRIES = 4  # queries of a partition whose GSI is behind the registry; so many in all
GSI_WAIT_S = 0.05  # the first wait before querying a lagging partition again (doubling)


class _Moved(Exception):
    """The sequence moved while the pull's queries ran: its view may be torn; start over."""


class GsiBehindError(TornReadError):
    """The GSI never showed a sealed commit the registry names: the pull cannot vouch for its view."""


class DynamoReads:
    """The pull side of ``DynamoBackend`` (a mixin: it uses the backend's client, table, pool and lock store)."""

    client: Any
    table: str
    gsi_layout: str
    clock: Clock
    lock_store: Any
    parallel: Any
    batch_get: Any
    _states: Any
    _versions_of: Any
    pulling: FencedPull | UnfencedPull  # the backend's pull rules, chosen once (choose.py)

    def _registry_item(self, namespace: str | None, work: Work) -> dict:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=registry_key(namespace), ConsistentRead=True)
        item = out.get("Item") or {}
        work.items_read += 1 if item else 0
        if item:
            name = f"{item['pk']['S']}/{item['sk']['S']}"
            work.item_bytes[name] = max(work.item_bytes.get(name, 0), item_size(item))
        return item

    def _fencing_registry(self, namespace: str | None, work: Work) -> dict:
        """A scoped pull's registry read: only fencing's checks need it (counted apart, ``for_fencing``)."""
        with for_fencing(work) as fw:
            return self._registry_item(namespace, fw)

    def _fencing_state(self, key: str, work: Work) -> DomainState:
        """The lock item read again after a fenced pull's queries (one sealed state: fencing's, counted apart)."""
        with for_fencing(work) as fw:
            return self.lock_store.state(key, fw)

    def registry(self, namespace: str | None, work: Work) -> dict[str, tuple[int, int]]:
        """Registered partitions: ``{partition: (born at, last changed at)}``."""
        return _parts_of(self._registry_item(namespace, work))

    def partitions(self, namespace: str | None, work: Work) -> list[str]:
        return sorted(self.registry(namespace, work))

    def _query(self, kwargs: dict, work: Work) -> list[dict]:
        """Run a paginated GSI query; every item returned counts as read, every page as one index read."""
        items: list[dict] = []
        kwargs = dict(kwargs, TableName=self.table, IndexName=GSI_NAME)
        while True:
            with recording(work):
                out = self.client.query(**kwargs)
            work.queries += 1
            got = out.get("Items", [])
            work.items_read += len(got)
            items.extend(got)
            if "LastEvaluatedKey" not in out:
                return items
            kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def _query_partition(self, part: str, after: int, by_seq: bool, work: Work) -> list[dict]:
        """A partition's index items past ``after``: a sequence (fenced) or a time in ms (swamp's unfenced key)."""
        low = seq_sk(after + 1) if by_seq else f"{after + 1:013d}"
        keys = gsi_keys(self.gsi_layout, part)
        got = [i for k in keys for i in self._query({"KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :s",
                                                     "ExpressionAttributeValues": {":p": s_(f"FILE#{k}"),
                                                                                   ":s": s_(low)}}, work)]
        return got if keys == [part] else [i for i in got if in_partition(i, part)]

    def changes(self, namespace: str | None, since_ms: int, partitions: Iterable[str] | None, work: Work, *,
                lock_key: str | None = None, cursor: dict | None = None,
                grant: LockGrant | None = None) -> PullResult:
        """What changed since this worker's cursor, as readers see it (sealed versions only), by the backend's
        pull rules (``FencedPull``, ``UnfencedPull``)."""
        cur = DynamoCursor.of(cursor)
        scoped = partitions is not None
        parts = list(partitions) if partitions is not None else None
        key = lock_key or self.default_lock_key(namespace)  # type: ignore[attr-defined]
        with recording(work):
            for attempt in range(PULL_TRIES):
                state = self.lock_store.state(key, work)
                # per-model: nothing sealed since this worker's view, nothing to read. legacy is swamp's
                # queryAllFileMeta as it was: every pull reads every file item (the sequence shortcut came with the fix)
                if not scoped and cur.seq is not None and state.seq == cur.seq and self.gsi_layout != "legacy":
                    return PullResult([], state.seq, short_cut=True)
                # Under this worker's own grant no other holder can seal: another commit's pending items are dead
                # for good (safe to delete). Without it they may belong to the holder committing right now.
                own = grant is not None and not grant.lost and state.nonce == grant.nonce
                # read again after the queries: the same sequence, and (own) the same holder all along. A grant
                # can run out mid-pull (a frozen holder); then another holder's seal, or its pending items taken
                # for dead, would be read across.
                recheck = self.pulling.recheck(self, key, state, own, work)
                try:
                    if self.gsi_layout == "legacy":
                        res, full = self._pull_legacy(namespace, parts, state, key, cur, own, work, recheck)
                        dropped: list[str] = []
                    else:
                        res, full, dropped = self._pull_partitions(namespace, since_ms, parts, state, key, cur,
                                                                   own, work, recheck)
                except _Moved:
                    if attempt == PULL_TRIES - 1:
                        raise TornReadError(f"the index of {namespace or 'the datastore'} kept changing during the "
                                          f"pull ({PULL_TRIES} tries)") from None
                    continue
                return self._absorb(res, cur, namespace, state.seq, scoped, full, dropped)
        raise AssertionError("unreachable")

    def _pull_legacy(self, namespace: str | None, partitions: list[str] | None, state: DomainState, key: str,
                     cur: DynamoCursor, own: bool, work: Work, recheck: Callable[[], bool]
                     ) -> tuple[Resolved, list[str]]:
        """swamp's queryAllFileMeta: read every file item of every namespace, keep ours on the client."""
        query = {"KeyConditionExpression": "gsi1pk = :p", "ExpressionAttributeValues": {":p": s_("FILE")}}
        root = f"{namespace}/" if namespace else ""
        everything = self.pulling.legacy_items(self, namespace, self._query(query, work), query, state, key, cur,
                                               work)
        if not recheck():
            raise _Moved()
        wanted = set(partitions) if partitions is not None else None
        mine = [i for i in everything if i["relPath"]["S"].startswith(root)
                and (wanted is None or partition_of(i["relPath"]["S"], namespace) in wanted)]
        res = resolve(mine, self._states(mine, {key: state}, work), _alive(state, own))
        first = cur.seq is None and not cur.refs and wanted is None  # a first look: everything it sees is new
        _mark_gone(res, cur, wanted, namespace)
        self.pulling.hold(cur, wanted if wanted is not None else {"*"})
        return res, ["*"] if first else []

    def _legacy_verified(self, namespace: str | None, everything: list[dict], query: dict, state: DomainState,
                         key: str, cur: DynamoCursor, work: Work) -> list[dict]:
        """Fenced legacy: the namespace's items once they match the lock item's digest (for a consistent read of
        what the cursor knows, if need be); the cursor takes the namespace's epoch."""
        root = f"{namespace}/" if namespace else ""
        known = [r for r in [*cur.refs, *cur.tombs] if r.startswith(root)]
        everything = self._verified(namespace or "", everything, {}, state.digests.get(namespace or "", 0),
                                    state, key, work, lambda: self._query(query, work), known=known,
                                    keep=lambda i: i["relPath"]["S"].startswith(root)
                                    and i.get("dom", {}).get("S") == key)
        cur.epoch = state.epochs.get(namespace or "")
        return everything

    def _pull_partitions(self, namespace: str | None, since_ms: int, partitions: list[str] | None,
                         state: DomainState, key: str, cur: DynamoCursor, own: bool,
                         work: Work, recheck: Callable[[], bool]) -> tuple[Resolved, list[str], list[str]]:
        """The per-model layouts' pull: the registry says which partitions changed; each is queried past what the
        worker read of it (fenced: by sequence, each checked against its newest sealed record's digest)."""
        rules = self.pulling
        reg, recs, newest = rules.registry_view(self, namespace, partitions, state, work)
        plan = _plan_partitions(partitions, reg, newest, cur, rules)
        # (fenced) what the worker's next commit of these partitions needs: the registry as read here
        rules.note(cur, partitions if partitions is not None else reg, reg, recs, newest, state)
        query = rules.reader(self, plan, namespace, since_ms, state, key, cur)
        items = [i for got in self.parallel(query, plan.reads, work) for i in got]
        if not recheck():
            raise _Moved()
        res = resolve(items, self._states(items, {key: state}, work), _alive(state, own))
        for p in plan.reborn:
            cur.drop_partition(p, namespace)
        for p, _ in plan.reads:
            cur.parts[p] = state.seq
        for p in plan.dropped:
            cur.parts.pop(p, None)
        # (fenced) held whole now: what is listed, and (empty) what was dropped or is not there
        rules.hold(cur, partitions if partitions is not None else [*plan.live, *plan.dropped])
        return res, plan.full, plan.dropped

    def _verified(self, part: str, got: list[dict], held: dict[str, str], expect: int, state: DomainState,
                  key: str, work: Work, again: Any, *, after: int = 0, keep: Any = None,
                  known: Iterable[str] = ()) -> list[dict]:
        """The partition's items, once what the pull holds of it (``held`` from before, ``got`` now) has the
        digest of its newest sealed record: every sealed version, tombstones included, below the newest commit
        too. A GSI answer that is behind (or out of write order) is read again after a short wait; one that never
        catches up gives way to a consistent read of every path the pull holds or was shown there; after that
        the pull refuses (it cannot vouch for its view). Fewer may also mean a newer commit sealed meanwhile (and
        its superseded versions were collected): then the pull starts over (``_Moved``), whoever holds the lock.
        """
        ours = (lambda items: [i for i in items if keep(i)]) if keep is not None else (lambda items: items)
        wait = GSI_WAIT_S
        for attempt in range(GSI_TRIES):
            if view_digest(held, ours(got), self._states(got, {key: state}, work)) == expect:
                return got
            if self._fencing_state(key, work).seq != state.seq:
                raise _Moved()
            if attempt == GSI_TRIES - 1:
                break
            self.clock.sleep(wait)
            wait *= 2
            got = again()
        rels = sorted(set(held) | set(known) | {i["relPath"]["S"] for i in ours(got)})
        consistent = [i for found in self.parallel(lambda r, w: self._versions_of(r, w), rels, work) for i in found
                      if "s" not in i or int(i["s"]["N"]) > after]
        if view_digest(held, ours(consistent), self._states(consistent, {key: state}, work)) == expect:
            return consistent if keep is None else consistent + [i for i in got if not keep(i)]
        if self._fencing_state(key, work).seq != state.seq:
            raise _Moved()
        raise GsiBehindError(f"the GSI of partition {part} never showed every sealed version its record counts "
                             f"({GSI_TRIES} queries and a consistent read): the pull cannot vouch for its view")

    def _absorb(self, res: Resolved, cur: DynamoCursor, namespace: str | None, seq: int, scoped: bool,
                full: list[str], dropped: list[str]) -> PullResult:
        """The cursor takes in what the pull saw; the result lists what the worker's view must change."""
        changed = []
        reread = set(full)
        for rel, v in res.visible.items():
            known = cur.refs.get(rel)
            # (swamp's entries change in place); a partition read whole reports all it holds: the worker drops
            # what such a read does not name, its own commits' entries included
            if known is None or known.sk != v.ref or known.meta != v.meta or "*" in reread \
                    or partition_of(rel, namespace) in reread:
                changed.append(v.meta)
            cur.refs[rel] = Known(v.ref, v.meta)
            cur.tombs.pop(rel, None)
        removed = []
        for rel, v in res.removed.items():
            removed.append(rel)
            cur.refs.pop(rel, None)
            if v is None or v.gone:  # (a prune's tombstone: the path counts no more)
                cur.tombs.pop(rel, None)
            else:
                cur.tombs[rel] = Known(v.ref, v.meta)
        DynamoCursor.add(cur.garbage, [file_key(v.rel, v.ref) for v in [*res.superseded, *res.dead]])
        for p in dropped:
            cur.drop_partition(p, namespace)
        if not scoped:
            cur.seq = seq
        return PullResult(changed, seq, removed=removed, dropped=dropped, full=full)



@dataclass
class _Plan:
    """What a per-model pull reads: (partition, read past) each, which it reads whole, which it drops."""

    live: dict[str, tuple[int, int]]  # listed partitions not pruned: (born, last changed)
    reads: list[tuple[str, int]] = field(default_factory=list)
    full: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    reborn: list[str] = field(default_factory=list)  # pruned and born again since the worker looked
    expect: dict[str, int] = field(default_factory=dict)  # fenced: the digest of each one's newest sealed record


def _plan_partitions(partitions: list[str] | None, reg: dict[str, tuple[int, int]], newest: dict,
                     cur: DynamoCursor, rules: FencedPull | UnfencedPull) -> _Plan:
    """Which partitions the pull reads and from where; a partition whose newest sealed record is a prune's is
    gone for readers, as if no longer listed."""
    plan = _Plan(live={p: v for p, v in reg.items() if not (newest.get(p) and newest[p].pruned)})
    for p in (partitions if partitions is not None else plan.live):
        seen = cur.parts.get(p)
        if rules.unlisted(plan, p, seen):
            continue  # nothing sealed is there: nothing to read
        born, changed = plan.live.get(p, (0, 0))
        if seen is None or born > seen:  # new to this worker, or pruned and born again since it looked
            plan.reads.append((p, rules.read_from(born)))
            plan.full.append(p)
            if seen is not None:  # what it knew of the old partition is gone with it
                plan.reborn.append(p)
        elif changed > seen or partitions is not None:
            plan.reads.append((p, seen))
        rules.expect(plan, p, newest.get(p), born)
    if partitions is None:
        plan.dropped = [p for p in cur.parts if p not in plan.live]
    return plan


def _note_registry(cur: DynamoCursor, parts: Iterable[str], reg: dict[str, tuple[int, int]], recs: dict,
                   newest: dict, state: DomainState) -> None:
    """Fenced: what the worker's next commit of these partitions checks, the registry as this pull read it."""
    for p in parts:
        cur.seen_c[p] = reg[p][1] if p in reg else ABSENT
        cur.stale[p] = stale(recs.get(p, []), state)
        if newest.get(p) is not None:
            cur.newest[p] = newest[p].name
        else:
            cur.newest.pop(p, None)


def _mark_gone(res: Resolved, cur: DynamoCursor, wanted: set[str] | None, namespace: str | None) -> None:
    """Legacy reads every entry every time: anything the cursor knew (in the wanted partitions) that is not
    there now is gone."""
    for rel in [r for r in [*cur.refs, *cur.tombs] if wanted is None or partition_of(r, namespace) in wanted]:
        if rel not in res.visible and rel not in res.removed:
            res.removed[rel] = None  # type: ignore[assignment]

def _parts_of(item: dict) -> dict[str, tuple[int, int]]:
    return {k[2:]: (int(item.get(f"b:{k[2:]}", {}).get("N", 0)), int(v["N"]))
            for k, v in item.items() if k.startswith("c:")}


def _same(now: DomainState, then: DomainState, own: bool) -> bool:
    """Nothing sealed between two reads of the lock item (and, for a holder's own pull, no other grant)."""
    return now.seq == then.seq and (not own or now.nonce == then.nonce)


def _alive(state: DomainState, own: bool) -> frozenset[str] | None:
    """Pending commit ids that may still seal: none but this worker's own claim when it holds the lock."""
    return frozenset() if own else None


# ---- the two systems' pull rules (chosen once: choose.py) ----------------------------------------------------
Query = Callable[[tuple[str, int], Work], list[dict]]


class FencedPull:
    """The harness's fenced pull: by sequence, each partition checked against its newest sealed record, the lock
    item read again after the queries (one sealed state), the registry noted for the next commit's checks."""

    def pull(self, be: DynamoReads, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             work: Work, *, lock_key: str | None, cursor: dict | None, grant: LockGrant | None) -> PullResult:
        return be.changes(namespace, since_ms, partitions, work, lock_key=lock_key, cursor=cursor, grant=grant)

    def lookup_items(self, be: DynamoReads, paths: Sequence[str], work: Work) -> list[dict]:
        """Fenced entries are one item per version: a Query per path (concurrently)."""
        return [i for got in be.parallel(lambda p, w: be._versions_of(p, w), list(paths), work) for i in got]

    def recheck(self, be: DynamoReads, key: str, state: DomainState, own: bool, work: Work) -> Callable[[], bool]:
        return lambda: _same(be._fencing_state(key, work), state, own)

    def legacy_items(self, be: DynamoReads, namespace: str | None, everything: list[dict], query: dict,
                     state: DomainState, key: str, cur: DynamoCursor, work: Work) -> list[dict]:
        """What it holds of the namespace is what the lock item's digest says."""
        return be._legacy_verified(namespace, everything, query, state, key, cur, work)

    def registry_view(self, be: DynamoReads, namespace: str | None, partitions: list[str] | None,
                      state: DomainState, work: Work) -> tuple[dict[str, tuple[int, int]], dict, dict]:
        """The registry as this pull reads it: partitions (born, changed), their records and newest sealed
        record. A scoped pull reads the registry only for fencing's checks (counted apart)."""
        item = be._registry_item(namespace, work) if partitions is None else be._fencing_registry(namespace, work)
        reg = _parts_of(item)
        recs = records_of(item)
        return reg, recs, {p: newest_sealed(recs.get(p), state) for p in reg}

    def unlisted(self, plan: _Plan, p: str, seen: int | None) -> bool:
        """A partition not listed (or pruned) has nothing sealed to read; one the worker read is dropped."""
        if p in plan.live:
            return False
        if seen is not None:
            plan.dropped.append(p)  # pruned since this worker read it: nothing of it is left
        return True

    def read_from(self, born: int) -> int:
        return max(born - 1, 0)

    def expect(self, plan: _Plan, p: str, rec: Any, born: int) -> None:
        plan.expect[p] = rec.digest if rec is not None and rec.seq >= born and rec.digest is not None else 0

    def note(self, cur: DynamoCursor, parts: Iterable[str], reg: dict[str, tuple[int, int]], recs: dict,
             newest: dict, state: DomainState) -> None:
        _note_registry(cur, parts, reg, recs, newest, state)

    def reader(self, be: DynamoReads, plan: _Plan, namespace: str | None, since_ms: int, state: DomainState,
               key: str, cur: DynamoCursor) -> Query:
        """A planned partition's items by sequence, verified against its record."""
        whole = set(plan.full)
        holds = cur.held(namespace)

        def query(job: tuple[str, int], w: Work) -> list[dict]:
            part, after = job
            got = be._query_partition(part, after, True, w)
            held = {} if part in whole else holds.get(part, {})
            return be._verified(part, got, held, plan.expect[part], state, key, w,
                                lambda: be._query_partition(part, after, True, w), after=after)

        return query

    def hold(self, cur: DynamoCursor, parts: Iterable[str]) -> None:
        cur.known.update(parts)


class UnfencedPull:
    """swamp's unfenced pull on the harness's items: by ``updatedAt`` (its in-place entries' key), nothing
    verified, no lock item read again, nothing noted for a commit that checks nothing."""

    def pull(self, be: DynamoReads, namespace: str | None, since_ms: int, partitions: Iterable[str] | None,
             work: Work, *, lock_key: str | None, cursor: dict | None, grant: LockGrant | None) -> PullResult:
        return be.changes(namespace, since_ms, partitions, work, lock_key=lock_key, cursor=cursor, grant=grant)

    def lookup_items(self, be: DynamoReads, paths: Sequence[str], work: Work) -> list[dict]:
        """swamp's scoped push: its in-place entries, one BatchGetItem per 100 paths."""
        return be.batch_get([file_key(p) for p in paths], work)

    def recheck(self, be: DynamoReads, key: str, state: DomainState, own: bool, work: Work) -> Callable[[], bool]:
        return lambda: True

    def legacy_items(self, be: DynamoReads, namespace: str | None, everything: list[dict], query: dict,
                     state: DomainState, key: str, cur: DynamoCursor, work: Work) -> list[dict]:
        return everything

    def registry_view(self, be: DynamoReads, namespace: str | None, partitions: list[str] | None,
                      state: DomainState, work: Work) -> tuple[dict[str, tuple[int, int]], dict, dict]:
        """The registry's partitions (a scoped pull reads no registry)."""
        return _parts_of(be._registry_item(namespace, work) if partitions is None else {}), {}, {}

    def unlisted(self, plan: _Plan, p: str, seen: int | None) -> bool:
        return False

    def read_from(self, born: int) -> int:
        return 0

    def expect(self, plan: _Plan, p: str, rec: Any, born: int) -> None:
        """Nothing is checked against a record."""

    def note(self, cur: DynamoCursor, parts: Iterable[str], reg: dict[str, tuple[int, int]], recs: dict,
             newest: dict, state: DomainState) -> None:
        """Nothing for a commit that checks nothing."""

    def reader(self, be: DynamoReads, plan: _Plan, namespace: str | None, since_ms: int, state: DomainState,
               key: str, cur: DynamoCursor) -> Query:
        """A planned partition's items by time: all of a new one, those since the watermark of a known one."""
        def query(job: tuple[str, int], w: Work) -> list[dict]:
            part, after = job
            return be._query_partition(part, -1 if after == 0 else since_ms, False, w)

        return query

    def hold(self, cur: DynamoCursor, parts: Iterable[str]) -> None:
        """An unfenced cursor vouches for nothing."""
