"""Torn reads: a pull's view that is no sealed state of the index (a pure function of the history).

A pull is recorded with the sequence it claims its view is complete up to
(``seq``, in its commit domain: the lock whose commits it reads), its scope (a
namespace, and for two-phase's scoped pull the model's partitions) and the
entries it then held. The sealed state at ``seq`` is what the acknowledged
commits of that domain up to ``seq`` left, applied in sequence order: per path
the last write (version, digest) or delete. A view that disagrees with it on a
path — missing an entry that was sealed there, holding another version, or
holding one a sealed delete removed — was read across a seal: *torn*. So is a view holding an entry that no
acknowledged commit sealed at or below ``seq`` wrote at all (a refused commit's, undone or not: issue 43's
hole 8, where readers built on a seal their writer was then told had failed).

Only paths the history decides are judged: a path touched by a commit whose
outcome is unknown (indeterminate) is skipped, and so (``untracked_ok``: a run
pre-aged by ``--seed-models``) is a path no commit of the history touched; so
is a view recorded only by its size (too large to keep), and an
unfenced one: swamp's own entries change in place before its sequence moves,
so its views have no sealed state to be measured against (its damage shows as
lost writes and stale views instead).
"""

from __future__ import annotations

from collections import defaultdict

from harness.datastore.backends.base import partition_of


def torn_reads(events: list[dict], *, untracked_ok: bool = False) -> list[dict]:
    """Every pull whose view is no sealed state (at most one finding per pull, the first few paths named)."""
    pulls = [e for e in events if e.get("type") == "pull" and e.get("view") is not None and e.get("fencing", True)
             and len(e["view"]) == e.get("view_size", len(e["view"]))]
    if not pulls:
        return []
    commits = [e for e in events if e.get("type") == "commit"]
    ops: dict[str, list[tuple[int, str, tuple[int, str] | None]]] = defaultdict(list)  # key -> (seq, path, v)
    unsure: dict[str, set[str]] = defaultdict(set)  # key -> paths an indeterminate commit touched
    known = {p for c in commits for p, *_ in [*c.get("writes", []), *c.get("deletes", [])]}
    for c in commits:
        key = c.get("key", "")
        if c.get("ok"):
            for path, version, digest, *_ in c.get("writes", []):
                ops[key].append((c["seq"], path, (version, digest)))
            for path, *_ in c.get("deletes", []):
                ops[key].append((c["seq"], path, None))
        elif c.get("indeterminate"):
            unsure[key].update(p for p, *_ in c.get("writes", []))
            unsure[key].update(p for p, *_ in c.get("deletes", []))
    for key in ops:
        ops[key].sort(key=lambda o: o[0])
    out = []
    for p in pulls:
        key, seq, ns = p.get("domain", ""), p["seq"], p.get("namespace")
        scope = set(p["scope"]) if p.get("scope") is not None else None

        def in_scope(path: str, ns: str | None = ns, scope: set[str] | None = scope) -> bool:
            if ns and not path.startswith(f"{ns}/"):
                return False
            return scope is None or partition_of(path, ns) in scope

        sealed: dict[str, tuple[int, str] | None] = {}
        for s, path, v in ops.get(key, []):
            if s > seq:
                break
            if in_scope(path):
                sealed[path] = v
        view = {path: (version, digest) for path, version, digest in p["view"]}
        wrong = []
        for path, want in sealed.items():
            if path in unsure.get(key, ()):
                continue
            got = view.get(path)
            if got != want:
                wrong.append({"path": path, "sealed": list(want) if want else None, "seen": list(got) if got else None})
        for path, got in view.items():  # entries no acknowledged commit up to ``seq`` wrote
            if path in sealed or path in unsure.get(key, ()) or (untracked_ok and path not in known):
                continue
            wrong.append({"path": path, "sealed": None, "seen": list(got),
                          "why": "no acknowledged commit sealed at or below the view's sequence wrote it"})
        if wrong:
            out.append({"holder": p.get("holder"), "domain": key, "seq": seq, "at_ms": p.get("complete_ms"),
                        "paths": wrong[:5], "wrong": len(wrong),
                        "why": f"the view at sequence {seq} is no sealed state: {len(wrong)} path(s) differ"})
    return out
