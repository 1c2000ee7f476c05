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


def judged_pulls(events: list[dict]) -> list[dict]:
    """The pulls a view can be judged by: fenced ones whose view was recorded whole (not only by its size)."""
    return [e for e in events if e.get("type") == "pull" and e.get("view") is not None and e.get("fencing", True)
            and len(e["view"]) == e.get("view_size", len(e["view"]))]


def torn_reads(events: list[dict], *, untracked_ok: bool = False) -> list[dict]:
    """Every pull whose view is no sealed state (at most one finding per pull, the first few paths named)."""
    pulls = judged_pulls(events)
    if not pulls:
        return []
    commits = [e for e in events if e.get("type") == "commit"]
    ops, unsure = _sealed_ops(commits)
    known = {p for c in commits for p, *_ in [*c.get("writes", []), *c.get("deletes", [])]}
    out = []
    for p in pulls:
        key, seq = p.get("domain", ""), p["seq"]
        sealed = _sealed_at(ops.get(key, []), seq, p.get("namespace"),
                            set(p["scope"]) if p.get("scope") is not None else None)
        view = {path: (version, digest) for path, version, digest in p["view"]}
        wrong = _differences(sealed, view, unsure.get(key, set()), known if untracked_ok else None)
        if wrong:
            out.append({"holder": p.get("holder"), "domain": key, "seq": seq, "at_ms": p.get("complete_ms"),
                        "paths": wrong[:5], "wrong": len(wrong),
                        "why": f"the view at sequence {seq} is no sealed state: {len(wrong)} path(s) differ"})
    return out


def _sealed_ops(commits: list[dict]) -> tuple[dict[str, list[tuple[int, str, tuple[int, str] | None]]],
                                               dict[str, set[str]]]:
    """Per commit domain: the acknowledged commits' operations in sequence order (seq, path, (version, digest)
    or None for a delete), and the paths an indeterminate commit touched."""
    ops: dict[str, list[tuple[int, str, tuple[int, str] | None]]] = defaultdict(list)
    unsure: dict[str, set[str]] = defaultdict(set)
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
    return ops, unsure


def _sealed_at(ops: list[tuple[int, str, tuple[int, str] | None]], seq: int, ns: str | None,
               scope: set[str] | None) -> dict[str, tuple[int, str] | None]:
    """The sealed state at ``seq`` within the pull's scope (its namespace; two-phase: its model's partitions)."""
    sealed: dict[str, tuple[int, str] | None] = {}
    for s, path, v in ops:
        if s > seq:
            break
        if ns and not path.startswith(f"{ns}/"):
            continue
        if scope is None or partition_of(path, ns) in scope:
            sealed[path] = v
    return sealed


def _differences(sealed: dict[str, tuple[int, str] | None], view: dict[str, tuple[int, str]], unsure: set[str],
                 known: set[str] | None) -> list[dict]:
    """Where the view and the sealed state disagree, on paths the history decides (``known``: with
    ``untracked_ok``, the paths a commit of the history touched; None: every path)."""
    wrong = []
    for path, want in sealed.items():
        if path in unsure:
            continue
        got = view.get(path)
        if got != want:
            wrong.append({"path": path, "sealed": list(want) if want else None, "seen": list(got) if got else None})
    for path, got in view.items():  # entries no acknowledged commit up to ``seq`` wrote
        if path in sealed or path in unsure or (known is not None and path not in known):
            continue
        wrong.append({"path": path, "sealed": None, "seen": list(got),
                      "why": "no acknowledged commit sealed at or below the view's sequence wrote it"})
    return wrong
