"""How busy each lock key was, from the run's history (grant, release and lock_timeout events).

A lock passes one holder at a time, so a fleet that needs it every iteration runs
at most ``1 / mean hold`` iterations a second. Whether it is the fleet's bound
shows in its utilization: the share of time it was *busy*, held or free with a
waiter retrying for it. Beside it the *held* share, so capacity lost to retry
gaps shows (a lock free for 150 ms between holders because nobody retried
sooner is busy, but not held).

From the events the lock records (``harness/datastore/lock.py``), in epoch ms:

- ``grant``: the holder waited from ``started_ms`` to ``granted_ms``, then held
  the lock from ``granted_ms`` until its ``release`` (matched by ``nonce``:
  ``invoke_ms``); a grant never released is held until its expiry, the next
  grant of the key or the end of the run, whichever comes first;
- ``lock_timeout``: a waiter that gave up waited from ``invoke_ms`` to ``end_ms``.

Pure functions of events (the report reads them from ``history/*.jsonl``, the
web UI's harness tab as they arrive), so both say the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

LOCK_EVENTS = ("grant", "release", "lock_timeout", "renew")  # the history's event types lock use reads


@dataclass(frozen=True)
class LockUse:
    """One key over one stretch ``[a, b]`` (epoch seconds)."""

    key: str
    a: float
    b: float
    busy: float  # share of the stretch held or wanted
    held: float  # share of the stretch held
    grants: int  # grants made in the stretch
    timeouts: int  # waiters that gave up in the stretch
    waiters: float  # mean number of waiters (time-averaged)
    holders: int  # distinct holders granted the key in the stretch
    mean_hold_ms: float | None  # mean hold of the grants made in the stretch
    gap_ms: tuple[float, float] | None  # middle half (25th-75th percentile) of the retry gaps: free, but wanted
    gaps: int  # retry gaps in the stretch

    @property
    def seconds(self) -> float:
        return max(self.b - self.a, 1e-9)

    @property
    def gap_share(self) -> float:
        """Share of the stretch the lock was free while someone waited for it."""
        return max(0.0, self.busy - self.held)

    @property
    def grants_per_s(self) -> float:
        return self.grants / self.seconds

    @property
    def max_grants_per_s(self) -> float | None:
        """What the lock could pass if it were held back to back: 1 / mean hold."""
        return 1000.0 / self.mean_hold_ms if self.mean_hold_ms else None

    def as_dict(self) -> dict:
        return {"key": self.key, "busy": self.busy, "held": self.held, "gap_share": self.gap_share,
                "grants": self.grants, "grants_per_s": self.grants_per_s, "timeouts": self.timeouts,
                "timeouts_per_s": self.timeouts / self.seconds, "waiters": self.waiters, "holders": self.holders,
                "mean_hold_ms": self.mean_hold_ms, "max_grants_per_s": self.max_grants_per_s,
                "gap_ms": list(self.gap_ms) if self.gap_ms else None, "gaps": self.gaps}


@dataclass
class Intervals:
    """One key's intervals (epoch seconds, ``(n, 2)`` arrays): held (with each grant's holder) and waiting;
    the ends of the waits that timed out."""

    key: str
    held: np.ndarray
    holders: np.ndarray
    waits: np.ndarray
    timeouts: np.ndarray


EVENT_FIELDS = ("type", "key", "nonce", "holder", "started_ms", "granted_ms", "invoke_ms", "end_ms", "expires_ms",
                "ok")


def frame(events: Iterable[dict]) -> pd.DataFrame:
    """Lock events as columns (the fields ``intervals`` reads; missing ones null)."""
    df = pd.DataFrame.from_records([{k: e.get(k) for k in EVENT_FIELDS} for e in events
                                    if e.get("type") in LOCK_EVENTS], columns=list(EVENT_FIELDS))
    return df


def _codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(integer code per row, -1 for null; the values): categoricals as they are, anything else factorized.

    Codes keep their own width (a categorical's int8, a report's int32 nonces): a nine-hour run's millions of
    events would otherwise hold an int64 copy of each.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), np.asarray(col.cat.categories, dtype=object)
    if pd.api.types.is_integer_dtype(col.dtype):  # already codes (a report's nonces: -1 for none)
        return col.to_numpy(), np.zeros(0, dtype=object)
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    return codes, np.asarray(uniques, dtype=object)


def _seconds(df: pd.DataFrame, col: str, rows: np.ndarray) -> np.ndarray:
    """``col`` (epoch ms) at ``rows``, in seconds: only the rows asked for are copied."""
    values = df[col]
    if not pd.api.types.is_float_dtype(values.dtype):  # event dicts: None for a missing field
        values = pd.to_numeric(values, errors="coerce")
    return values.to_numpy(dtype=float)[rows] / 1000


def _by_key(sorted_keys: np.ndarray, idx: np.ndarray) -> dict[int, np.ndarray]:
    """Runs of equal (sorted) key codes -> the indices in each run."""
    if len(sorted_keys) == 0:
        return {}
    cut = np.flatnonzero(np.diff(sorted_keys)) + 1
    starts = np.concatenate([[0], cut])
    return dict(zip(sorted_keys[starts].tolist(), np.split(idx, cut), strict=True))


def _finite(df: pd.DataFrame, rows: np.ndarray, *cols: str) -> tuple[np.ndarray, ...]:
    """The rows where every one of ``cols`` is a number, and those columns there (seconds)."""
    values = [_seconds(df, c, rows) for c in cols]
    keep = np.logical_and.reduce([np.isfinite(v) for v in values]) if values else np.ones(len(rows), bool)
    return (rows[keep], *(v[keep] for v in values))


def intervals(events: Iterable[dict] | pd.DataFrame, end_s: float | None = None) -> dict[str, Intervals]:
    """Each lock key's held and waiting intervals from its events (any order; other event types are ignored).

    ``events`` is a list of event dicts or a frame of their fields (``frame``; key, holder and nonce may be
    categoricals), so a report of a nine-hour run reads millions of events as columns, not dicts. Each event
    type's fields are taken at that type's rows only: the run's report holds its rows beside these.
    """
    df = events if isinstance(events, pd.DataFrame) else frame(events)
    type_code, type_names = _codes(df["type"])
    kind_of = {str(n): i for i, n in enumerate(type_names)}
    rows = {k: np.flatnonzero(type_code == kind_of.get(k, -2)) for k in LOCK_EVENTS}
    del type_code
    key, keys = _codes(df["key"])
    nonce, _ = _codes(df["nonce"])
    n_nonce = int(nonce.max()) + 1 if len(nonce) else 0
    rel = np.full(n_nonce + 1, np.inf)  # the last slot catches events without a nonce (code -1)
    r, r_at = _finite(df, rows["release"], "invoke_ms")
    np.minimum.at(rel, nonce[r], r_at)
    lease = np.full(n_nonce + 1, -np.inf)
    w = rows["renew"]
    ok = df["ok"].iloc[w].fillna(False).astype(bool).to_numpy() if "ok" in df else np.zeros(len(w), bool)
    w, w_at = _finite(df, w[ok], "expires_ms")
    np.maximum.at(lease, nonce[w], w_at)
    del r, r_at, w, w_at, ok

    g = rows["grant"]
    g = g[key[g] >= 0]
    granted, invoke = _seconds(df, "granted_ms", g), _seconds(df, "invoke_ms", g)
    at = np.where(np.isfinite(granted), granted, invoke)
    keep = np.isfinite(at)
    g, at = g[keep], at[keep]
    order = np.lexsort((at, key[g]))  # by key, then by grant time
    g, ga = g[order], at[order]
    del granted, invoke, at, keep, order
    gk = key[g]
    same_next = np.concatenate([gk[1:] == gk[:-1], [False]])
    nxt = np.where(same_next, np.concatenate([ga[1:], [np.inf]]), np.inf)
    del same_next
    gn = nonce[g]
    released = rel[gn]
    expires = _seconds(df, "expires_ms", g)
    leased = np.fmax(np.where(np.isfinite(expires), expires, -np.inf), lease[gn])
    del gn, rel, lease, expires
    cap = np.fmin(np.where(np.isfinite(leased), leased, np.inf), nxt)
    del leased, nxt
    if end_s is not None:
        cap = np.fmin(cap, end_s)
    end = np.where(np.isfinite(released), released, np.where(np.isfinite(cap), cap, ga))
    end = np.maximum(end, ga)
    del released, cap
    gs = _seconds(df, "started_ms", g)

    t, t_invoke, t_end = _finite(df, rows["lock_timeout"], "invoke_ms", "end_ms")
    keep = key[t] >= 0
    t, t_invoke, t_end = t[keep], t_invoke[keep], t_end[keep]
    order = np.argsort(key[t], kind="stable")
    t, t_invoke, t_end = t[order], t_invoke[order], t_end[order]
    holder, holders = _codes(df["holder"])
    out: dict[str, Intervals] = {}
    name_of = np.empty(len(holders) + 1, dtype=object)  # code -1 (no holder) is the last: ""
    name_of[:-1] = [str(h) for h in holders]
    name_of[-1] = ""
    g_parts = _by_key(gk, np.arange(len(g)))
    t_parts = _by_key(key[t], np.arange(len(t)))
    for k in sorted(set(g_parts) | set(t_parts)):
        gi = g_parts.get(k, np.zeros(0, dtype=np.int64))
        ti = t_parts.get(k, np.zeros(0, dtype=np.int64))
        a_, s_ = ga[gi], gs[gi]
        waited = np.isfinite(s_) & (s_ < a_)
        waits = np.concatenate([np.column_stack([s_[waited], a_[waited]]),
                                np.column_stack([t_invoke[ti], t_end[ti]])])
        # each grant's holder name: the same str objects, picked by code (no new string per grant: a
        # nine-hour run has millions); "" without a holder
        names = name_of[holder[g[gi]]]
        out[str(keys[k])] = Intervals(str(keys[k]), np.column_stack([a_, end[gi]]), names, waits, t_end[ti])
    return out


class Timeline:
    """A key's busy / held / waiting time as cumulative functions of time, so any stretch is two lookups."""

    def __init__(self, iv: Intervals) -> None:
        self.key = iv.key
        held = np.asarray(iv.held, dtype=float).reshape(-1, 2)
        waits = np.asarray(iv.waits, dtype=float).reshape(-1, 2)
        waits = waits[waits[:, 1] > waits[:, 0]]
        pts = np.concatenate([held[:, 0], held[:, 1], waits[:, 0], waits[:, 1]])
        dh = np.concatenate([np.ones(len(held)), -np.ones(len(held)), np.zeros(2 * len(waits))])
        dw = np.concatenate([np.zeros(2 * len(held)), np.ones(len(waits)), -np.ones(len(waits))])
        order = np.argsort(pts, kind="stable")
        t = pts[order]
        h = np.cumsum(dh[order])[:-1] if len(t) else np.zeros(0)
        w = np.cumsum(dw[order])[:-1] if len(t) else np.zeros(0)
        seg = np.diff(t) if len(t) else np.zeros(0)
        self.t = t
        self.cum_held = np.concatenate([[0.0], np.cumsum(seg * (h > 0))]) if len(t) else np.zeros(0)
        self.cum_busy = np.concatenate([[0.0], np.cumsum(seg * ((h > 0) | (w > 0)))]) if len(t) else np.zeros(0)
        self.cum_wait = np.concatenate([[0.0], np.cumsum(seg * np.clip(w, 0, None))]) if len(t) else np.zeros(0)
        # retry gaps: maximal stretches free but wanted (runs of consecutive such segments, merged)
        idx = np.flatnonzero((h <= 0) & (w > 0) & (seg > 0))
        breaks = np.flatnonzero(np.diff(idx) > 1)
        first = idx[np.concatenate([[0], breaks + 1])] if len(idx) else idx
        last = idx[np.concatenate([breaks, [len(idx) - 1]])] if len(idx) else idx
        starts, lengths = t[first], t[last + 1] - t[first]
        self.gap_start = np.asarray(starts, dtype=float)
        self.gap_len = np.asarray(lengths, dtype=float)
        self.grant_at = held[:, 0]
        self.hold_s = held[:, 1] - held[:, 0]
        self.holders = np.asarray(iv.holders, dtype=object)
        self.timeout_at = np.asarray(iv.timeouts, dtype=float)

    def _measure(self, cum: np.ndarray, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
        if len(self.t) == 0:
            return np.zeros_like(np.asarray(a, dtype=float))
        return np.interp(b, self.t, cum) - np.interp(a, self.t, cum)

    def busy_share(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(busy, held) share per window between consecutive ``edges`` (epoch seconds)."""
        edges = np.asarray(edges, dtype=float)
        a, b = edges[:-1], edges[1:]
        width = np.clip(b - a, 1e-9, None)
        return self._measure(self.cum_busy, a, b) / width, self._measure(self.cum_held, a, b) / width

    def use(self, a: float, b: float) -> LockUse:
        width = max(b - a, 1e-9)
        busy = float(self._measure(self.cum_busy, a, b)) / width
        held = float(self._measure(self.cum_held, a, b)) / width
        waiters = float(self._measure(self.cum_wait, a, b)) / width
        inside = (self.grant_at >= a) & (self.grant_at < b)
        holds = self.hold_s[inside]
        g = (self.gap_start >= a) & (self.gap_start < b)
        gaps = self.gap_len[g] * 1000
        return LockUse(self.key, a, b, min(busy, 1.0), min(held, 1.0), int(inside.sum()),
                       int(((self.timeout_at >= a) & (self.timeout_at < b)).sum()), waiters,
                       len(set(self.holders[inside].tolist())), float(holds.mean() * 1000) if len(holds) else None,
                       (float(np.percentile(gaps, 25)), float(np.percentile(gaps, 75))) if len(gaps) else None,
                       int(len(gaps)))

    @property
    def holder_count(self) -> int:
        return len(set(self.holders.tolist()))


def timelines(events: Iterable[dict] | pd.DataFrame | dict[str, Intervals],
              end_s: float | None = None) -> dict[str, Timeline]:
    """Each key's timeline, from events or from the keys' ``intervals`` (made with ``end_s`` already).

    Given intervals, each key's are let go (popped from the dict) once its timeline is built: a long run's
    intervals and timelines are each a hundred MB or more, and need never be whole at once.
    """
    ivs = events if isinstance(events, dict) else intervals(events, end_s)
    return {k: Timeline(ivs.pop(k)) for k in list(ivs)}


def mean_interval(values: np.ndarray, z: float = 1.96) -> tuple[float, float] | None:
    """A rough 95 % interval for the mean of per-window values (normal; None with fewer than 3 windows)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 3:
        return None
    half = z * float(v.std(ddof=1)) / math.sqrt(len(v))
    return float(v.mean() - half), float(v.mean() + half)
