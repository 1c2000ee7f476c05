"""Undone data: sealed sequences no commit that may have landed explains, and readers losing what they read.

Two tests of the history against itself and the final state (pure functions), for what a commit's word about
itself cannot be trusted with: a commit told "refused" whose seal had landed, and then undone (issue 43's
hole 8), shows nowhere in the entries the acknowledged commits explain, but it shows here:

- **unexplained seals**: per commit domain, every sequence up to the highest one anything saw sealed (the final
  state's, a pull's, an acknowledged commit's) must be an acknowledged commit's, or one of the domain's
  indeterminate commits may have sealed it (each at most one), and only one whose domain's final fate record
  allows it (DynamoDB: its id no longer pending; S3: the head's ``sealed`` naming it, or older than its
  window); a sequence left over was sealed by a commit its worker was told had failed;
- **lost reads**: an entry a fenced reader held in its view at sequence s (what was sealed there, or what no
  acknowledged commit wrote) is, at the end, still there at that version or a newer one, unless an
  acknowledged commit sealed after s (or an indeterminate one) wrote or removed that path: otherwise readers
  lost what they had read, with nothing in the history removing it. (A view holding what a commit at or below
  s had replaced is a torn read, ``views.py``, not a loss.)

A run pre-aged by ``--seed-models`` (``untracked_ok``) has commits the history never saw: no seal is judged.
Views recorded by their size only, and unfenced ones (swamp's in-place entries have no sealed state), are not.
"""

from __future__ import annotations

from collections import defaultdict

from harness.safety.views import judged_pulls


def _domains(events: list[dict], state: dict) -> dict[str, int]:
    """The highest sequence seen sealed, per commit domain (the lock whose commits it counts)."""
    commits = [e for e in events if e.get("type") == "commit"]
    key_of = {c["domain"]: c.get("key", c["domain"]) for c in commits if c.get("ok") and c.get("domain")}
    keys = {c.get("key") for c in commits}
    high: dict[str, int] = defaultdict(int)
    for domain, d in (state.get("domains") or {}).items():
        key = key_of.get(domain, domain if domain in keys else None)
        if key is not None and d.get("seq"):
            high[key] = max(high[key], int(d["seq"]))
    for c in commits:
        if c.get("ok") and c.get("seq") is not None:
            high[c.get("key", "")] = max(high[c.get("key", "")], int(c["seq"]))
    for p in events:
        if p.get("type") == "pull" and p.get("seq") is not None and p.get("domain") in keys:
            high[p["domain"]] = max(high[p["domain"]], int(p["seq"]))
    return dict(high)


def _records(events: list[dict], state: dict) -> dict[str, dict]:
    """The final state's fate record per commit domain, keyed as the history keys it (the lock's key)."""
    key_of = {c["domain"]: c.get("key", c["domain"]) for c in events
              if c.get("type") == "commit" and c.get("ok") and c.get("domain")}
    return {key_of.get(d, d): rec for d, rec in (state.get("domains") or {}).items()}


def may_have_sealed(commit: dict, record: dict | None, missing: list[int]) -> bool:
    """Can this indeterminate commit have sealed, as its domain's final fate record says (issue 55)?

    DynamoDB: only if its id is no longer pending (only its seal removes it). S3: only if the head's ``sealed``
    names it, or the sequences left to explain are older than the head's window. No record (an older
    snapshot): it may have."""
    if not record:
        return True
    cid = commit.get("cid")
    if "pending" in record:
        return cid not in set(record["pending"])
    if "sealed" in record:
        sealed = record["sealed"] or {}
        if cid in set(sealed.values()):
            return True
        oldest = min((int(k) for k in sealed), default=None)
        return oldest is None or any(s < oldest for s in missing)
    return True


def unexplained_seals(events: list[dict], state: dict, *, untracked_ok: bool = False) -> list[dict]:
    """Per domain, the sealed sequences that neither an acknowledged commit nor an indeterminate one that its
    domain's fate record allows to have sealed explains."""
    if untracked_ok:
        return []
    commits = [e for e in events if e.get("type") == "commit"]
    acked: dict[str, set[int]] = defaultdict(set)
    maybe: dict[str, list[dict]] = defaultdict(list)
    for c in commits:
        if c.get("ok") and c.get("seq") is not None:
            acked[c.get("key", "")].add(int(c["seq"]))
        elif c.get("indeterminate"):
            maybe[c.get("key", "")].append(c)
    records = _records(events, state)
    unsure: dict[str, int] = {}
    out = []
    for key, high in sorted(_domains(events, state).items()):
        missing = [s for s in range(1, high + 1) if s not in acked[key]]
        unsure[key] = sum(1 for c in maybe[key] if may_have_sealed(c, records.get(key), missing))
        if len(missing) > unsure[key]:
            refused = [c["cid"] for c in commits if c.get("key") == key and not c.get("ok")
                       and not c.get("indeterminate")]
            out.append({"domain": key, "sequences": missing[:10], "unexplained": len(missing) - unsure[key],
                        "indeterminate": unsure[key], "refused_commits": refused[:10],
                        "why": f"{len(missing)} sequence(s) up to {high} sealed by no acknowledged commit, "
                               f"{unsure[key]} indeterminate one(s) to explain them: a commit told it failed "
                               f"had sealed"})
    return out


def lost_reads(events: list[dict], state: dict) -> list[dict]:
    """Fenced pulls whose entries are gone (or older) at the end with no commit after them touching the path."""
    pulls = judged_pulls(events)
    if not pulls:
        return []
    touched, unsure = _touches(events)
    final = {e["path"]: (e["version"], e["digest"]) for e in state.get("entries", [])}
    out = []
    for p in pulls:
        seq = p["seq"]
        gone = [g for path, version, digest in p["view"]
                if (g := _gone(path, version, digest, seq, final, touched, unsure)) is not None]
        if gone:
            out.append({"holder": p.get("holder"), "domain": p.get("domain"), "seq": seq,
                        "at_ms": p.get("complete_ms"), "paths": gone[:5], "lost": len(gone),
                        "why": f"{len(gone)} entr{'y' if len(gone) == 1 else 'ies'} read at sequence {seq} "
                               "gone or older at the end, and no commit after it touched them"})
    return out


def _touches(events: list[dict]) -> tuple[dict[str, list[tuple[int, tuple | None]]], set[str]]:
    """Per path: (seq, what it left) of every acknowledged commit; and the paths an indeterminate commit touched."""
    touched: dict[str, list[tuple[int, tuple | None]]] = defaultdict(list)
    unsure: set[str] = set()
    for c in events:
        if c.get("type") != "commit":
            continue
        if c.get("ok") and c.get("seq") is not None:
            for p, v, d, *_ in c.get("writes", []):
                touched[p].append((int(c["seq"]), (v, d)))
            for p, *_ in c.get("deletes", []):
                touched[p].append((int(c["seq"]), None))
        elif c.get("indeterminate"):
            unsure.update(p for p, *_ in [*c.get("writes", []), *c.get("deletes", [])])
    return touched, unsure


def _gone(path: str, version: int, digest: str, seq: int, final: dict[str, tuple],
          touched: dict[str, list[tuple[int, tuple | None]]], unsure: set[str]) -> dict | None:
    """One entry a view read at ``seq``: lost if it is gone or older at the end and nothing after explains it."""
    got = final.get(path)
    if got is not None and (got[0] > version or got == (version, digest)):
        return None  # still there, or replaced by a newer version
    if path in unsure or any(s > seq for s, _ in touched.get(path, ())):
        return None  # a commit after the view wrote or removed it
    sealed = [what for s, what in sorted(touched.get(path, ()), key=lambda t: t[0]) if s <= seq]
    if sealed and sealed[-1] != (version, digest):
        return None  # the view held what was no longer sealed there: a torn read, not a loss
    return {"path": path, "read": [version, digest], "now": list(got) if got else None}


__all__ = ["lost_reads", "may_have_sealed", "unexplained_seals"]
