"""The capacity bound beside the rate forecast: the rate at which a throttled bucket of the model is full.

The forecast composes step times against counts (``forecast.py``); it cannot see a fleet that DynamoDB's
capacity holds back. The run's capacity model (``[fidelity]``: ``harness/aws/fidelity/throttle.py``) throttles
on buckets: per table or index, per kind (read, write), per partition (``partition_of``: the model's own rule),
and the table's own limit when provisioned or given an on-demand maximum. From ``keys.csv`` each bucket's units
in windows of the run, over the fleet's successful iterations in the same window, are its units per iteration;
they grow as the items they write grow (a catalog export's units with the catalog's rows), fitted against the
fleet's iterations with the forecast's own linear-or-power choice (``fit.py``). At a later fleet iteration N the
fleet can go no faster than ``min over buckets of limit_b / units_per_iteration_b(N)``.

What is left out: S3 prefixes (their 3,500 writes / 5,500 reads a second are per request, not per unit, and no
run records requests per prefix); burst credit (a bucket's ``burst_s`` of unused capacity lets it run above its
limit for a minute or two: ignored, so the bound is conservative by that much); the keys outside each interval's
top 20 (``keys.csv`` sums them under ``""``: no partition is known for them, they count only towards a table's
own limit).

Pure functions: a run's keys.csv and run.json in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.aws.fidelity.throttle import DynamoCapacity, partition_of
from harness.report.forecast import fit as fits

SAMPLES_PER_WINDOW = 2  # a bucket's units per iteration are read over this many of keys.csv's intervals (3 s each)
MOST_BUCKETS = 6  # the buckets carried: the fullest over the run's last third
KEYS_SAID = 3  # a bucket's keys named (the most units first)
MOST_UNITS = 0.8  # a bucket's main keys: the fewest that spent this share of its units
KINDS = ("read", "write")


@dataclass(frozen=True)
class Bucket:
    """One bucket the model throttles on: ``partition`` None for the table's (or index's) own limit."""

    table: str
    index: str
    kind: str
    partition: int | None
    limit: float  # units/s
    keys: tuple[str, ...]  # the keys that spent most of its units (``MOST_UNITS``), the most first
    key_count: int  # every key that spent from it

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "index": self.index or None, "kind": self.kind, "partition": self.partition,
                "limit": self.limit, "keys": list(self.keys[:KEYS_SAID]), "main_keys": len(self.keys),
                "key_count": self.key_count}

    def words(self) -> str:
        """``partition 3 of the table's writes (3 keys: FILE#w0-0/.catalog-export.json, FILE#w0-1/..., ...)``: its
        main keys, named when they are few."""
        where = f"index {self.index}'s" if self.index else "the table's"
        kind = "writes" if self.kind == "write" else "reads"
        head = f"partition {self.partition} of {where} {kind}" if self.partition is not None else f"{where} {kind}"
        if not self.keys or self.partition is None:
            return head
        n = len(self.keys)
        named = ", ".join(self.keys) if n <= KEYS_SAID else f"{', '.join(self.keys[:KEYS_SAID])}, ..."
        return f"{head} ({n} key{'s' if n != 1 else ''}: {named})"


@dataclass
class Capacity:
    """The forecast's capacity inputs: the buckets and, per window of the run that had successes, the fleet's
    iterations at its middle (``x``, counted from the load's start) and each bucket's units per iteration in it
    (``y``: windows x buckets); or why there are none."""

    buckets: list[Bucket]
    x: np.ndarray
    y: np.ndarray
    model: str | None = None
    why: str | None = None


def none(why: str, model: str | None = None) -> Capacity:
    return Capacity([], np.zeros(0), np.zeros((0, 0)), model, why)


def model_of(info: dict[str, Any]) -> tuple[DynamoCapacity | None, str | None]:
    """The DynamoDB capacity model the run ran with, or None and why there is none."""
    if info.get("backend") not in (None, "dynamodb"):
        return None, f"the {info.get('backend')} backend: S3's per-prefix request rates are not forecast"
    resolved = info.get("fidelity")
    fid = (info.get("scenario") or {}).get("fidelity") or {}
    if (isinstance(resolved, dict) and resolved.get("enabled") is False) or fid.get("mode") == "off":
        return None, "the fidelity model was off ([fidelity] enabled = false): no modelled capacity to bound the rate"
    if fid.get("mode") == "auto" and info.get("endpoint_kind") == "aws":
        return None, "a run on AWS: its capacity is AWS's own, not a model the report can read"
    ddb = (resolved if isinstance(resolved, dict) and isinstance(resolved.get("dynamodb"), dict)
           else fid.get("config") or {}).get("dynamodb")
    if not isinstance(ddb, dict):
        return None, "the run records no DynamoDB capacity model"
    known = {k: ddb[k] for k in DynamoCapacity.__dataclass_fields__ if k in ddb}
    return DynamoCapacity(**known), None


def describe(cap: DynamoCapacity) -> str:
    """``on-demand, 4 partitions of 3,000 read / 1,000 write units/s``: the model in words."""
    s = (f"{cap.mode}, {cap.partitions()} partitions of {cap.partition_limit('read'):,.0f} read / "
         f"{cap.partition_limit('write'):,.0f} write units/s")
    limits = [f"table {k} {v:,.0f} units/s" for k in KINDS if (v := cap.table_limit(k)) is not None]
    return s + ("; " + ", ".join(limits) if limits else "")


def bucket_units(keys: pd.DataFrame, cap: DynamoCapacity) -> pd.DataFrame:
    """keys.csv's rows as units per bucket: ``t`` (seconds), ``table``, ``index``, ``kind``, ``partition``
    (-1: the table's own limit), ``key``, ``units``; a key's units spend from its partition's bucket and, when
    the table has a limit of that kind, from the table's."""
    parts = cap.partitions()
    out = []
    for kind in KINDS:
        k = keys.loc[keys[f"{kind}_units"] > 0, ["t", "table", "index", "key", f"{kind}_units"]]
        k = k.rename(columns={f"{kind}_units": "units"}).assign(kind=kind)
        if not len(k):
            continue
        named = k.loc[k["key"] != ""]
        part = np.fromiter((partition_of(x, parts) for x in named["key"]), dtype=int, count=len(named))
        out.append(named.assign(partition=part))
        if cap.table_limit(kind) is not None:
            out.append(k.assign(partition=-1))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=["t", "table", "index", "key", "units", "kind", "partition"])


def capacity_of(info: dict[str, Any], keys: pd.DataFrame | None, t_ok: np.ndarray, run_s: float,
                warmup_s: float, before: int = 0) -> Capacity:
    """The buckets and their units per iteration, window by window. ``keys``: keys.csv with ``t`` in seconds
    since the load's start; ``t_ok``: the successful iterations' ends after the warm-up (same clock); ``before``:
    the successes before the warm-up's end (the fleet's iterations are counted from the load's start)."""
    cap, why = model_of(info)
    if cap is None:
        return none(why or "")
    model = describe(cap)
    if keys is None or not len(keys):
        return none("the run recorded no per-key units (no keys.csv)", model)
    # windows between keys.csv's own drains (each row holds the units since the one before): the successes that
    # ended within a window against the units drained at its end, so no window holds part of a drain
    edges = np.unique(keys["t"].to_numpy(dtype=float))
    edges = edges[(edges >= warmup_s) & (edges <= run_s)][::SAMPLES_PER_WINDOW]
    u = bucket_units(keys, cap)
    u = u.loc[(u["t"] > edges[0]) & (u["t"] <= edges[-1])] if len(edges) > 1 else u.iloc[:0]
    if not len(u):
        return none("keys.csv holds no units after the warm-up", model)
    done = np.searchsorted(np.sort(t_ok), edges, side="right").astype(float)  # the successes by each edge
    its = np.diff(done)  # the fleet's successes per window
    had = its > 0
    x = before + done[:-1] + its / 2  # the fleet's iterations at each window's middle
    u = u.assign(w=np.searchsorted(edges, u["t"].to_numpy(), side="left") - 1)
    late = u["t"] >= run_s - (run_s - warmup_s) / 3
    place = ["table", "index", "kind", "partition"]
    full = u.loc[late].groupby(place)["units"].sum()
    limits = {g: _limit(cap, g[2], g[3]) for g in full.index}
    order = sorted(full.index, key=lambda g: -full[g] / limits[g])[:MOST_BUCKETS]
    buckets, cols = [], []
    for g in order:
        b = u.loc[(u[place] == pd.Series(g, index=place)).all(axis=1)]
        by_key = b.loc[b["key"] != ""].groupby("key")["units"].sum().sort_values(ascending=False)
        main = int(np.searchsorted(by_key.cumsum().to_numpy(), MOST_UNITS * by_key.sum()) + 1) if len(by_key) else 0
        buckets.append(Bucket(g[0], g[1], g[2], None if g[3] < 0 else int(g[3]), limits[g],
                              tuple(by_key.index[:main]), int(len(by_key))))
        per_w = np.bincount(b["w"].to_numpy(), weights=b["units"].to_numpy(), minlength=len(its))
        cols.append(per_w[had] / its[had])
    if not buckets:
        return none("no bucket took units over the run's last third", model)
    return Capacity(buckets, x[had], np.column_stack(cols), model, None)


def _limit(cap: DynamoCapacity, kind: str, partition: int) -> float:
    return float(cap.table_limit(kind) or 0.0) if partition < 0 else cap.partition_limit(kind)


class Bound:
    """The buckets' units-per-iteration fits against the fleet's iterations, with bootstrap draws (index 0 the
    point); ``rate(n)``: the capacity-bound rate per draw. Each of the forecast's draws refits them on a resample
    of the windows (``redraw``), so the band carries this fit's uncertainty beside the step fits'. Windows, not
    iterations: the units are measured per window, and its iterations share one value."""

    def __init__(self, cap: Capacity):
        y = cap.y
        self.i = np.asarray(cap.x, dtype=float)
        self.buckets: list[Bucket] = []
        self.fits: list[fits.Fit] = []
        self.y: list[np.ndarray] = []
        for j, b in enumerate(cap.buckets):
            f = fits.choose(self.i, y[:, j])
            if f is not None:
                self.buckets.append(b)
                self.fits.append(f)
                self.y.append(y[:, j])
        self.limits = np.array([b.limit for b in self.buckets], dtype=float)
        self.draws: list[list[fits.Params]] = [[f.params] for f in self.fits]
        self.params: list[tuple[np.ndarray, ...]] = []

    @property
    def ok(self) -> bool:
        return bool(self.fits)

    def redraw(self, rng: np.random.Generator) -> None:
        """Each bucket's fit on one resample of the windows; a resample its shape cannot take keeps the point's."""
        pick = rng.integers(0, len(self.i), len(self.i))
        for f, y, d in zip(self.fits, self.y, self.draws, strict=True):
            p = pick[np.isfinite(y[pick])]
            got = fits.refit(self.i[p], y[p], f) if len(p) >= fits.MIN_POINTS else None
            d.append(got if got is not None and all(np.isfinite(got[:2])) else f.params)

    def seal(self) -> None:
        self.params = [tuple(np.array(v) for v in zip(*d, strict=True)) for d in self.draws]

    def units_at(self, n: np.ndarray | float) -> np.ndarray:
        """Units per iteration (buckets x draws x points) once the fleet has made ``n`` successful iterations."""
        x = np.atleast_1d(np.asarray(n, dtype=float))[None, :]
        return np.stack([fits.evaluate(f.shape, tuple(q[:, None] for q in p), x)
                         for f, p in zip(self.fits, self.params, strict=True)])

    def per_bucket(self, n: np.ndarray | float) -> np.ndarray:
        """Each bucket's bound rate (buckets x draws x points): its limit over its units per iteration."""
        return self.limits[:, None, None] / np.clip(self.units_at(n), 1e-9, None)

    def rate(self, n: np.ndarray | float) -> np.ndarray:
        """The capacity-bound rate (draws x points): the fullest bucket's."""
        return self.per_bucket(n).min(axis=0)
