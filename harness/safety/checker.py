"""The safety checker: the run's history against the final remote state (pure functions).

Definitions (these are what ``safety.json`` counts):

- **acknowledged**: a commit whose call returned a sealed sequence to its worker.
- Per path, the **expected** final entry is the last acknowledged operation on
  it in sequence order (the order the store sealed commits in): a write
  (version, digest) or a delete.
- **lost**: the expected write is not what readers see (the entry is missing,
  or an older or foreign version replaced it), or an acknowledged delete was
  undone, or an acknowledged write was overwritten by a later commit whose
  holder had never seen it (a lost update). A write superseded by a later
  acknowledged commit that saw it is not lost. A path a commit names in
  ``overwrites`` (swamp's S3 catalog export: every worker of a namespace
  writes it from its own catalog, the last writer's kept) has no lost
  update, and a commit of it whose outcome is unknown may be the last.
- **phantom**: readers see a version of a path that no acknowledged commit
  wrote: one from a commit that failed, or from nowhere in the history. A
  commit whose outcome is unknown (cut short by the end of the run, or its
  answer lost: **indeterminate**) may or may not have landed: either is fine.
- **corrupt**: an entry whose content is missing or does not match its digest.
- **sequence anomalies**, per commit domain, over acknowledged commits:
  two with the same sequence; a commit whose holder's view (the sequence its
  pull saw, else the one its commit started from) misses a commit sealed
  between that view and its own seal (a lost update); a commit sealed after
  one with a higher fencing token of the same lock (a stale holder sealed).
  Under two-phase sync a commit's view is its own model's (a scoped pull):
  only commits of the same model in between are missed; and the model's lock
  is checked the same way (its fence, its overlaps: a commit belongs to both
  its global grant and its model grant).
- A grant is **believed held** from the moment its holder got it until the
  holder stopped acting on it: its release, or the moment it learned the grant
  was lost (a refused renewal, a refused commit), whichever came first; if
  none is recorded, until its last known expiry. Its **lease** is shorter:
  from the grant to the expiry set by its last successful renewal (or its
  release). Two grants of one key **overlap** when their believed intervals
  intersect: expected when a holder pauses past its TTL.
- An overlap is **unsafe** when the older grant had a commit acknowledged
  whose seal was first sent after the newer grant was issued (``seal_ms``,
  taken at botocore's before-send; older histories: the commit's start):
  fencing should have refused it, whether or not anything was lost by it. A
  seal sent before the newer grant and answered after it was in flight across
  it: **uncertain** (counted, not a violation: the store ordered the two).
  Two *leases* that intersect mean the lock itself is broken.
- A **torn read** is a pull whose view is no sealed state (``views.py``).
- **unexplained seals** and **lost reads** (``undone.py``): a sequence sealed
  by no commit that may have landed (one its worker was told had failed), and
  entries a fenced reader held that are gone at the end with no commit after
  its view touching them: data undone under readers.
- **unreadable** (``fresh.py``): a namespace the history's fenced commits
  wrote that a fresh fenced reader, pulling at the end, cannot read, or reads
  other than the final state holds it (availability: a user's next pull).
- **violations** = lost + phantom + corrupt + sequence anomalies + unsafe
  overlaps + lease overlaps + torn reads + unexplained seals + lost reads +
  unreadable.
- A grant is **contended** when it had to retry, or when another holder was
  waiting for the same key at the moment it was made (a holder that releases
  and re-acquires at once still takes the lock from under waiting workers).

Times are the workers' clocks (one host: comparable); sequence order is the store's.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from harness.safety.undone import lost_reads, unexplained_seals
from harness.safety.views import torn_reads

DETAIL_LIMIT = 25
# the counts that are violations, in the order reports name them
FINDINGS = ("lost", "phantom", "corrupt", "sequence_anomalies", "unsafe_overlaps", "lease_overlaps", "torn_reads",
            "unexplained_seals", "lost_reads", "unreadable")
REFUSALS = ("FencedError", "LockLostError")


@dataclass
class _Op:
    seq: int
    at: float
    kind: str  # write | delete
    version: int
    digest: str
    cid: str
    view: int | None  # the sequence its commit's holder had seen (its pull, else its commit's start)
    blind: bool = False  # an overwrite: its holder claims no view of the path (the last writer's is kept)


@dataclass
class _Grant:
    key: str
    nonce: str
    fence: int
    holder: str
    granted: float
    expiry: float
    released: float | None = None
    learned_lost: float | None = None
    commits: list[dict] = field(default_factory=list)

    @property
    def lease_end(self) -> float:
        return min(self.expiry, self.released) if self.released is not None else self.expiry

    @property
    def believed_end(self) -> float:
        ends = [t for t in (self.released, self.learned_lost) if t is not None]
        return min(ends) if ends else self.expiry


def _limited(items: list) -> list:
    return items[:DETAIL_LIMIT]


def check(events: list[dict], state: dict, *, untracked_ok: bool = False) -> dict[str, Any]:
    """Compare the history with the final state; returns the safety report (JSON-ready)."""
    commits = [e for e in events if e.get("type") == "commit"]
    acked = [c for c in commits if c.get("ok")]
    content = _content_findings(state)
    lost, phantom, untracked = _entry_findings(commits, state, untracked_ok)
    anomalies = _sequence_anomalies(acked)
    grants = _grants(events, commits)
    overlaps, unsafe, lease, uncertain = _overlaps(grants)
    torn = torn_reads(events, untracked_ok=untracked_ok)
    seals = unexplained_seals(events, state, untracked_ok=untracked_ok)
    gone = lost_reads(events, state)
    reads = _fresh_reads(state)
    unreadable = [r for r in reads if not r.get("ok")]
    grant_events = [e for e in events if e.get("type") == "grant"]
    report = {
        "acknowledged": len(acked),
        "attempted": len(commits),
        "refused": sum(1 for c in commits if not c.get("ok") and not c.get("indeterminate")),
        "indeterminate": sum(1 for c in commits if c.get("indeterminate")),
        "lost": len(lost),
        "phantom": len(phantom),
        "corrupt": len(content),
        "sequence_anomalies": len(anomalies),
        "overlaps": len(overlaps),
        "unsafe_overlaps": len(unsafe),
        "lease_overlaps": len(lease),
        "uncertain_overlaps": len(uncertain),
        "torn_reads": len(torn),
        "unexplained_seals": sum(f["unexplained"] for f in seals),
        "lost_reads": len(gone),
        "unreadable": len(unreadable),
        "fresh_reads": len(reads),
        "pulls_checked": sum(1 for e in events if e.get("type") == "pull" and e.get("view") is not None),
        "acquisitions": len(grant_events),
        "contended": _contended(events),
        "lock_timeouts": sum(1 for e in events if e.get("type") == "lock_timeout"),
        "pauses": sum(1 for e in events if e.get("type") == "pause"),
        "entries": len(state.get("entries", [])),
        "untracked": len(untracked),
        "fencing": sorted({bool(c.get("fencing", True)) for c in commits}),
        "details": {"lost": _limited(lost), "phantom": _limited(phantom), "corrupt": _limited(content),
                    "sequence_anomalies": _limited(anomalies), "unsafe_overlaps": _limited(unsafe),
                    "lease_overlaps": _limited(lease), "uncertain_overlaps": _limited(uncertain),
                    "torn_reads": _limited(torn), "unexplained_seals": _limited(seals),
                    "lost_reads": _limited(gone), "unreadable": _limited(unreadable)},
    }
    report["violations"] = sum(report[k] for k in FINDINGS)
    return report


def _fresh_reads(state: dict) -> list[dict]:
    """What fresh fenced readers pulled of the final state (``fresh.py``; none in an older state file)."""
    return list(state.get("fresh_reads") or [])


def _contended(events: list[dict]) -> int:
    """Grants that had to retry, or that were made while another holder was waiting for the same key."""
    waits: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e.get("type") == "grant" and e.get("started_ms", e["granted_ms"]) < e["granted_ms"]:
            waits[e["key"]].append((e["started_ms"], e["granted_ms"]))
        elif e.get("type") == "lock_timeout" and e.get("end_ms", e["invoke_ms"]) > e["invoke_ms"]:
            waits[e["key"]].append((e["invoke_ms"], e["end_ms"]))
    starts = {k: sorted(s for s, _ in v) for k, v in waits.items()}
    ends = {k: sorted(x for _, x in v) for k, v in waits.items()}
    n = 0
    for e in events:
        if e.get("type") != "grant":
            continue
        t, key = e["granted_ms"], e["key"]
        waiting = (bisect.bisect_left(starts.get(key, []), t) - bisect.bisect_right(ends.get(key, []), t))
        n += e.get("attempts", 1) > 1 or waiting > 0  # (its own wait, if any, ends at t: not counted)
    return n


def _view(commit: dict) -> int | None:
    """The sequence a commit's holder had seen: its pull's, else the one its commit started from."""
    return commit.get("view_seq") if commit.get("view_seq") is not None else commit.get("base")


def _content_findings(state: dict) -> list[dict]:
    out = []
    for e in state.get("entries", []):
        if e.get("content_digest") is None:
            out.append({"path": e["path"], "version": e["version"], "problem": "content missing"})
        elif e["content_digest"] != e["digest"]:
            out.append({"path": e["path"], "version": e["version"], "problem": "content does not match its digest"})
    out += [{"path": ref, "problem": "referenced shard missing"} for ref in state.get("missing_shards", [])]
    return out


@dataclass
class _Ledger:
    """What the history says of each path: the acknowledged operations, and the versions each kind of commit
    (acknowledged, failed, indeterminate) wrote."""

    ops: dict[str, list[_Op]] = field(default_factory=lambda: defaultdict(list))
    acked: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    failed: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    maybe: dict[str, dict] = field(default_factory=lambda: defaultdict(dict))  # indeterminate: version -> its view
    maybe_deleted: dict[str, float] = field(default_factory=dict)  # indeterminate deletes: path -> latest start
    blind: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, commits: list[dict]) -> _Ledger:
        led = cls(blind={p for c in commits for p in c.get("overwrites", ())})
        for c in commits:
            if c.get("ok"):
                led.acknowledged(c)
            elif c.get("indeterminate"):  # cut short, or its answer lost: it may or may not have landed
                led.indeterminate(c)
            else:
                for path, version, digest, *_ in c.get("writes", []):
                    led.failed[path].add((version, digest))
        return led

    def acknowledged(self, c: dict) -> None:
        view = _view(c)
        at, cid = c.get("complete_ms", 0), c.get("cid", "")
        for path, version, digest, *_ in c.get("writes", []):
            self.ops[path].append(_Op(c["seq"], at, "write", version, digest, cid, view,
                                      path in c.get("overwrites", ())))
            self.acked[path].add((version, digest))
        for path, version, digest in c.get("deletes", []):
            self.ops[path].append(_Op(c["seq"], at, "delete", version, digest, cid, view))

    def indeterminate(self, c: dict) -> None:
        for path, version, digest, *_ in c.get("writes", []):
            view = _view(c)
            self.maybe[path][(version, digest)] = max(view if view is not None else -1,
                                                      self.maybe[path].get((version, digest), -1))
        for path, *_ in c.get("deletes", []):
            self.maybe_deleted[path] = max(c.get("invoke_ms", 0), self.maybe_deleted.get(path, 0))


def _entry_findings(commits: list[dict], state: dict, untracked_ok: bool) -> tuple[list, list, list]:
    led = _Ledger.of(commits)
    final = {e["path"]: e for e in state.get("entries", [])}
    lost: list[dict] = []
    phantom: list[dict] = []
    untracked: list[dict] = []
    for path in sorted(set(led.ops) | set(final)):
        seen = final.get(path)
        got = (seen["version"], seen["digest"]) if seen else None
        history = sorted(led.ops.get(path, []), key=lambda o: (o.seq, o.at))
        lost += _blind_overwrites(path, history, got)
        last = history[-1] if history else None
        if last is not None:
            lost += _final_loss(path, last, got, led)
        if got is not None and got not in led.acked[path] and got not in led.maybe[path]:
            item = {"path": path, "found": list(got),
                    "from": "a failed commit" if got in led.failed[path] else "no commit in the history"}
            if untracked_ok and last is None and got not in led.failed[path]:
                untracked.append(item)
            else:
                phantom.append(item)
    return lost, phantom, untracked


def _blind_overwrites(path: str, history: list[_Op], got: tuple | None) -> list[dict]:
    """Acknowledged writes overwritten by a later commit whose view never saw them."""
    lost = []
    for earlier, later in zip(history, history[1:], strict=False):
        if not later.blind and later.view is not None and later.view < earlier.seq and (
                later.version, later.digest) != (earlier.version, earlier.digest):
            lost.append({"path": path, "expected": [earlier.version, earlier.digest],
                         "found": list(got) if got else None, "seq": earlier.seq, "cid": earlier.cid,
                         "why": f"overwritten by commit {later.cid}, whose view (sequence {later.view}) "
                                f"never saw it"})
    return lost


def _final_loss(path: str, last: _Op, got: tuple | None, led: _Ledger) -> list[dict]:
    """The path's last acknowledged operation against what the final state holds: a write missing or replaced
    (unless an indeterminate commit may explain it), or a delete undone."""
    if last.kind == "delete":
        if got is not None and got in led.acked[path]:
            return [{"path": path, "expected": None, "found": list(got), "seq": last.seq, "cid": last.cid,
                     "why": "an acknowledged delete was undone"}]
        return []
    expected = (last.version, last.digest)
    superseded = got in led.maybe[path] and (path in led.blind  # (an overwrite's view says nothing)
                                             or led.maybe[path][got] >= last.seq)
    # a delete cut short after the last acknowledged write may have landed: the entry may be gone
    maybe_gone = got is None and led.maybe_deleted.get(path, -1) >= last.at
    if got == expected or superseded or maybe_gone:
        return []
    why = ("missing" if got is None else "replaced by an older acknowledged version"
           if got in led.acked[path] else "replaced by a version no acknowledged commit wrote")
    return [{"path": path, "expected": list(expected), "found": list(got) if got else None,
             "seq": last.seq, "cid": last.cid, "why": why}]


def _sequence_anomalies(acked: list[dict]) -> list[dict]:
    by_domain: dict[str, list[dict]] = defaultdict(list)
    for c in acked:
        by_domain[c.get("domain") or c.get("key", "")].append(c)
    out = []
    for domain, cs in by_domain.items():
        cs.sort(key=lambda c: (c["seq"], c.get("complete_ms", 0)))
        seqs = [c["seq"] for c in cs]
        max_fence: dict[str, tuple[int, str]] = {}
        for i, c in enumerate(cs):
            if i and seqs[i - 1] == c["seq"]:
                out.append({"domain": domain, "cid": c["cid"], "seq": c["seq"], "kind": "duplicate sequence",
                            "with": cs[i - 1]["cid"]})
                continue
            view = _view(c)
            if view is not None:
                lo, hi = bisect.bisect_right(seqs, view), bisect.bisect_left(seqs, c["seq"])
                if c.get("view_scope") == "model":  # two-phase: its pull saw its own model only
                    between = sum(1 for x in cs[lo:hi] if x.get("model_key") == c.get("model_key"))
                else:
                    between = hi - lo
                if between > 0:
                    out.append({"domain": domain, "cid": c["cid"], "seq": c["seq"], "view": view,
                                "kind": f"stale view: {between} commit(s) sealed between its view and its seal"})
                    continue
            # the commit domain's lock, and (two-phase) the model's own lock: fences only go up in seal order
            for key, fence, what in ((c["key"], c["fence"], "the same lock"),
                                     (c.get("model_key"), c.get("model_fence"), "its model's lock")):
                if key is None or fence is None:
                    continue
                best = max_fence.get(key)
                if best is not None and fence < best[0]:
                    out.append({"domain": domain, "cid": c["cid"], "seq": c["seq"], "fence": fence,
                                "kind": f"sealed after fence {best[0]} of {what}"})
                if best is None or fence > best[0]:
                    max_fence[key] = (fence, c["cid"])
    return out


def _grants(events: list[dict], commits: list[dict]) -> dict[str, _Grant]:
    grants: dict[str, _Grant] = {}
    for e in events:
        if e.get("type") == "grant":
            grants[e["nonce"]] = _Grant(e["key"], e["nonce"], e["fence"], e.get("holder", ""), e["granted_ms"],
                                        e["expires_ms"])
    for e in events:
        g = grants.get(e.get("nonce", ""))
        if g is None:
            continue
        kind = e.get("type")
        if kind == "renew" and e.get("ok"):
            g.expiry = max(g.expiry, e["expires_ms"])
        elif kind == "release":
            g.released = e["invoke_ms"] if g.released is None else min(g.released, e["invoke_ms"])
        elif kind == "lost":
            g.learned_lost = e["at_ms"] if g.learned_lost is None else min(g.learned_lost, e["at_ms"])
    for c in commits:  # a two-phase commit belongs to two grants: the global lock's and its model's
        for g in (grants.get(c.get("nonce", "")), grants.get(c.get("model_nonce", ""))):
            if g is None:
                continue
            g.commits.append(c)
            if not c.get("ok") and str(c.get("error", "")).startswith(REFUSALS):
                t = c.get("complete_ms", c["invoke_ms"])
                g.learned_lost = t if g.learned_lost is None else min(g.learned_lost, t)
    return grants


def _overlaps(grants: dict[str, _Grant]) -> tuple[list, list, list, list]:
    by_key: dict[str, list[_Grant]] = defaultdict(list)
    for g in grants.values():
        by_key[g.key].append(g)
    overlaps, unsafe, lease, uncertain = [], [], [], []
    for key, gs in by_key.items():
        gs.sort(key=lambda g: g.granted)
        for i, a in enumerate(gs):
            end = max(a.believed_end, a.lease_end)
            for b in gs[i + 1:]:
                if b.granted >= end:
                    break  # sorted by start: no later grant starts inside ``a``
                older, newer = (a, b) if a.fence < b.fence else (b, a)
                pair = {"key": key, "older": {"holder": older.holder, "fence": older.fence},
                        "newer": {"holder": newer.holder, "fence": newer.fence, "granted_ms": newer.granted}}
                if b.granted < a.believed_end:
                    overlaps.append(pair)
                    ok = [c for c in older.commits if c.get("ok")]
                    accepted = [c["cid"] for c in ok if _sent(c) > newer.granted]
                    if accepted:
                        unsafe.append({**pair, "accepted_commits": accepted})
                    in_flight = [c["cid"] for c in ok if _sent(c) <= newer.granted < c.get("complete_ms", 0)]
                    if in_flight:
                        uncertain.append({**pair, "in_flight_commits": in_flight})
                if b.granted < a.lease_end:
                    lease.append({**pair, "older_lease_end_ms": a.lease_end})
    return overlaps, unsafe, lease, uncertain


def _sent(commit: dict) -> float:
    """When the commit's seal was first sent (older histories: when the commit started)."""
    return commit.get("seal_ms") or commit["invoke_ms"]

