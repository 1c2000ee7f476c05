"""A fresh fenced reader at the end: can a worker that knows nothing pull the final state, all of it?

The checker compares the history with the final state read straight from the
table or bucket (``state.py``); a user meets the store through a pull. A commit
undone under the records that count it (issue 55: a registry record or a legacy
digest naming items that are gone) leaves entries the snapshot lists but no
fenced pull can read: every fresh pull fails (``GsiBehindError``) from then on.
So each namespace the history's fenced commits wrote is pulled by a new reader
(an empty cursor, the commit domain's lock its commits used), and its view is
compared with the snapshot's entries of that namespace. A pull that fails, or a
view that differs, is an availability violation (``unreadable``, checker.py).
"""

from __future__ import annotations

from typing import Any

from harness.core.work import Work

DETAIL_PATHS = 5


def domains_read(events: list[dict]) -> dict[str | None, str]:
    """namespace -> the lock whose commits seal it, from the history's fenced commits (the newest wins)."""
    out: dict[str | None, str] = {}
    for c in events:
        if c.get("type") == "commit" and c.get("fencing", True) and c.get("key"):
            out[c.get("namespace")] = c["key"]
    return out


def fresh_reads(backend: Any, events: list[dict], state: dict) -> list[dict]:
    """One fresh fenced pull per namespace the history's fenced commits wrote, against the snapshot."""
    out = []
    for ns, key in sorted(domains_read(events).items(), key=lambda kv: str(kv[0])):
        prefix = f"{ns}/" if ns else ""
        want = {e["path"]: (e["version"], e["digest"]) for e in state.get("entries", [])
                if e["path"].startswith(prefix)}
        read: dict[str, Any] = {"namespace": ns, "key": key, "entries": len(want)}
        try:
            res = backend.pull(ns, 0, None, Work(), lock_key=key, cursor={}, grant=None)  # (the run's: fenced)
        except Exception as e:  # noqa: BLE001 - what a user meets: the namespace cannot be read
            out.append({**read, "ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        got = {m.rel_path: (m.version, m.digest) for m in res.changed}
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        different = sorted(p for p in set(want) & set(got) if want[p] != got[p])
        read.update(ok=not (missing or extra or different), read=len(got))
        if not read["ok"]:
            read.update(missing=missing[:DETAIL_PATHS], extra=extra[:DETAIL_PATHS],
                        different=different[:DETAIL_PATHS], mismatched=len(missing) + len(extra) + len(different))
        out.append(read)
    return out


def with_fresh_reads(backend: Any, events: list[dict], state: dict) -> dict:
    """The state with what fresh fenced readers could pull of it (``state["fresh_reads"]``)."""
    state["fresh_reads"] = fresh_reads(backend, events, state)
    return state


__all__ = ["fresh_reads", "with_fresh_reads"]
