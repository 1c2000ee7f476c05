"""What the observer saw (``observed.csv``): the datastore's own counts over time, beside the rows' (pure).

A measure is a level (what the datastore holds), not a per-iteration count:
each key's last sample carries forward until its next, and a measure over
several keys (every namespace's entries, every GSI key's items) is their sum
at each sample. What this module gives the findings:

- ``changes``: each measure's first and last level over the load, and whether it grew;
- ``agreement``: the observer against the rows' own counts at the same moments: the legacy ``FILE``
  key against the pulls that ended in the second before each sample (``pull_items_read``); a
  namespace's entries against the rows' ``index_entries_written`` under a full commit, and the
  registry's bytes against the rows' ``registry_bytes`` (a sample lies between the last row whose commit
  had landed before it and the next: a row's count is in the store from its commit's end, not its own);
- ``row_levels``: for rows that carry no counts (the command driver's), the observed level at each
  row's end, in its own namespace: the drivers "what grew" reads instead;
- ``cost``: what the observer spent, against its budget and beside the fleet.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.report.series import Span, seconds_since

MEASURES = {"gsi_items": "items under the GSI keys", "index_entries": "index entries per namespace",
            "partitions": "partitions registered per namespace", "registry_bytes": "registry item bytes",
            "export_bytes": "catalog export bytes per namespace", "index_bytes": "index bytes",
            "shards": "index shards"}
# how a measure's keys combine at a sample: the largest of one growing item, a namespace's mean (so it reads
# beside a row's own count), or the sum over the datastore
COMBINE = {"registry_bytes": "max", "index_entries": "mean", "partitions": "mean", "export_bytes": "mean"}
BESIDE = {"gsi_items": "pull_items_read", "index_entries": "index_entries_written",
          "registry_bytes": "registry_bytes", "export_bytes": "catalog_rows"}
# the per-row drivers from the observer, for a step whose own driver the rows do not carry
ROW_LEVELS = {"observed_index_entries": "index_entries", "observed_gsi_items": "gsi_items",
              "observed_export_bytes": "export_bytes"}
ROW_LABELS = {"observed_index_entries": "index entries in the namespace (observed)",
              "observed_gsi_items": "items under the GSI key FILE (observed)",
              "observed_export_bytes": "catalog export bytes (observed)"}
OBSERVED_DRIVERS = {"commit_ms": "observed_index_entries", "pull_ms": "observed_gsi_items",
                    "export_ms": "observed_export_bytes", "prune_ms": "observed_index_entries"}
GROWTH = 0.2  # a level grew when late it is a fifth above early ...
QUARTER = 0.25  # early and late: the load's first and last quarter
AGREE = 0.02  # the legacy FILE key and the pulls agree within 2 %
PAIR_S = 1.0  # a sample pairs with the pulls that ended in the second before it
EXACT_SHARE = 0.5  # ... and at least half the samples equal the row before them exactly
PAIR_MIN = 50  # ... when it counts this many items at least (2 % of fewer is less than one item)
AFTER_S = 30.0  # the last sample, taken once the load has stopped, still counts


# keys that come and go between samples (a pruned partition's GSI key is no longer read): a group's sample
# names all of its keys, so these are summed per sample and carried forward per group of reads, not per key
PER_SAMPLE = {"gsi_items"}


def data(obs: pd.DataFrame | None) -> pd.DataFrame:
    """The observations of the datastore (not the observer's own costs, gaps or holders), numbers only, each
    with the group of reads its sample came from (``group``: its observer_* rows share its time)."""
    if obs is None or obs.empty:
        return pd.DataFrame(columns=["time", "what", "key", "num", "group"])
    d = obs[obs["what"].isin(MEASURES)].dropna(subset=["num"])
    by_time = obs.loc[obs["what"] == "observer_requests"].groupby("time")["key"].first()
    group = d["time"].map(by_time).astype(object)
    return d.assign(group=group.where(group.notna(), d["key"]).astype(str))


def level(d: pd.DataFrame, what: str, t0: float, keys: list[str] | None = None) -> pd.Series:
    """One measure's level at each of its samples (seconds since ``t0``): keys (or, for keys that come and go,
    groups of reads) carried forward, then combined."""
    m = d[d["what"] == what]
    if keys is not None:
        m = m[m["key"].isin(keys)]
    if m.empty:
        return pd.Series(dtype=float)
    if what in PER_SAMPLE and keys is None:
        m = m.groupby(["time", "group"], as_index=False)["num"].sum().rename(columns={"group": "key"})
    wide = m.pivot_table(index="time", columns="key", values="num", aggfunc="last").sort_index().ffill()
    how = COMBINE.get(what, "sum")
    s = wide.max(axis=1) if how == "max" else wide.mean(axis=1) if how == "mean" else wide.sum(axis=1, min_count=1)
    s.index = s.index.to_numpy(dtype=float) - t0
    return s.dropna()


def _inside(s: pd.Series, span: Span) -> pd.Series:
    return s[(s.index >= -PAIR_S) & (s.index <= span.seconds + AFTER_S)]


def changes(obs: pd.DataFrame | None, span: Span) -> dict[str, dict[str, Any]]:
    """Each measure early in the load against late (its first and last quarter, the last sample after the
    load included; at least one sample each): it grew when everything late is above everything early, by a
    fifth and by one at least (a level that swings with each iteration, as a pruned one does, did not)."""
    d, t0 = data(obs), span.t0.timestamp()
    out = {}
    for what, label in MEASURES.items():
        s = _inside(level(d, what, t0), span)
        if s.empty:
            continue
        t = s.index.to_numpy(dtype=float)
        early, late = s[t <= max(t[0], span.seconds * QUARTER)], s[t >= min(t[-1], span.seconds * (1 - QUARTER))]
        first, last = float(early.median()), float(late.median())
        growth = last / first if first > 0 else None
        grew = bool(late.min() > early.max() and last > first * (1 + GROWTH) and last - first >= 1)
        out[what] = {"label": label, "first": first, "last": last, "growth": growth, "grew": grew,
                     "samples": int(len(s)), "keys": int(d.loc[d["what"] == what, "key"].nunique()),
                     "first_s": [float(early.index[0]), float(early.index[-1])],
                     "last_s": [float(late.index[0]), float(late.index[-1])]}
    return out


def namespace_of(users: pd.Series, scenario: dict) -> pd.Series:
    """Each row's namespace from its user (``w<p>-<n>``), as the scenario assigns them; "" when shared."""
    ds = scenario.get("datastore") or {}
    if ds.get("namespaces", "per-worker") == "shared":
        return pd.Series("", index=users.index)
    n = int(ds.get("workers_per_namespace", 1) or 1)
    if n == 1:
        return users.astype(str)
    parts = users.astype(str).str.extract(r"^(w\d+)-(\d+)$")
    grouped = parts[0] + "-ns" + (parts[1].astype(float) // n).astype("Int64").astype(str)
    return grouped.fillna(users.astype(str))


def _judge(start: np.ndarray, end: np.ndarray, obs_v: np.ndarray, row_t: np.ndarray,
           row_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (its reads ran from ``start`` to ``end``): does it lie between the rows' values from the last
    row whose count landed (``row_t``) before its reads began to the first that landed after they came back
    (a commit may land while they run)? And is it exactly one of the values the rows had meanwhile?"""
    order = np.argsort(row_t, kind="stable")
    row_t, row_v = row_t[order], row_v[order]
    between, exact = np.zeros(len(obs_v), dtype=bool), np.zeros(len(obs_v), dtype=bool)
    for j, (a, b, v) in enumerate(zip(start, end, obs_v, strict=True)):
        i, k = np.searchsorted(row_t, a, side="right"), np.searchsorted(row_t, b, side="right")
        seen = list(row_v[max(i - 1, 0):k]) if i > 0 else [0.0, *row_v[:k]]  # the values while it read
        around = seen + ([row_v[k]] if k < len(row_v) else [])
        between[j] = min(around) <= v <= max(around)
        exact[j] = v in seen
    return between, exact


def read_times(obs: pd.DataFrame | None) -> pd.Series:
    """How long each sample's reads took, by its time (``observer_read_s``: a group's sample shares one time)."""
    if obs is None or obs.empty:
        return pd.Series(dtype=float)
    r = obs[obs["what"] == "observer_read_s"].dropna(subset=["num"])
    return r.groupby("time")["num"].max()


# the steps of an iteration in their order, up to the pull's end and up to the commit's (its export included)
TO_PULL_END = ("lock_wait_ms", "pull_ms")
TO_COMMIT_END = (*TO_PULL_END, "method_ms", "push_ms", "commit_lock_ms", "commit_ms", "export_ms")


def _ended(rows: pd.DataFrame, t0: pd.Timestamp, steps: tuple[str, ...]) -> np.ndarray:
    """When each row had done ``steps`` (both profiles run them in this order from the row's start), in seconds
    since ``t0``, never past the row's end; a step a row did not record counts 0."""
    start = seconds_since(rows["ts_start"], t0)
    took = sum((rows[c].fillna(0).to_numpy(dtype=float) for c in steps if c in rows.columns),
               np.zeros(len(rows)))
    done = start + took / 1000.0
    return np.minimum(done, seconds_since(rows["ts_end"], t0)) if "ts_end" in rows.columns else done


def legacy_agreement(obs: pd.DataFrame | None, rows: pd.DataFrame, span: Span) -> dict[str, Any] | None:
    """Items under ``FILE``, each sample against the pulls that ended in the second before it: how far apart,
    and whether they grew alike (within 2 %).

    A pull's ``pull_items_read`` is the ``FILE`` key's items and then one item per file whose content it
    fetched (``files_pulled``: a chunk each, below 256 KB); the pull's own index read is the first part.
    """
    d = data(obs)
    s = level(d, "gsi_items", span.t0.timestamp(), ["FILE"])
    if s.empty or "pull_items_read" not in rows.columns:
        return None
    ok = rows[rows["ok"].to_numpy(dtype=bool)]
    fetched = ok["files_pulled"].fillna(0).to_numpy(dtype=float) if "files_pulled" in ok.columns else 0.0
    reads = ok["pull_items_read"].to_numpy(dtype=float) - fetched
    if not np.isfinite(reads).any():
        return None
    ends = _ended(ok, span.t0, TO_PULL_END)
    pairs = []
    for t, v in s.items():
        inside = (ends > t - PAIR_S) & (ends <= t) & np.isfinite(reads)
        if inside.any() and v >= PAIR_MIN:
            pairs.append((float(t), float(v), float(reads[inside].mean()), int(inside.sum())))
    if not pairs:
        return {"pairs": 0, "agrees": None, "note": f"no pull ended in the second before a sample of {PAIR_MIN} "
                                                    "items or more"}
    t, o, p, n = (np.array(x) for x in zip(*pairs, strict=True))
    dev = np.divide(o - p, p, out=np.full_like(o, np.nan), where=p > 0)
    finite = np.abs(dev[np.isfinite(dev)])
    # how the observed count grows with the pulls' over the whole run: least squares through zero (the large
    # late counts weigh most; an early pair is a few commits apart in a small count)
    slope = float((o * p).sum() / (p * p).sum()) if (p * p).sum() > 0 else None
    return {"pairs": int(len(t)), "pulls": int(n.sum()), "slope": slope,
            "median_deviation": float(np.median(finite)) if len(finite) else None,
            "max_deviation": float(finite.max()) if len(finite) else None,
            "within": float((finite <= AGREE).mean()) if len(finite) else None,
            "observed_first": float(o[0]), "observed_last": float(o[-1]), "pulls_first": float(p[0]),
            "pulls_last": float(p[-1]), "observed_growth": float(o[-1] / o[0]) if o[0] > 0 else None,
            "pulls_growth": float(p[-1] / p[0]) if p[0] > 0 else None,
            "agrees": bool(slope is not None and abs(slope - 1) <= AGREE),
            "series": {"t": t.tolist(), "observed": o.tolist(), "pulls": p.tolist()}}


def level_agreement(obs: pd.DataFrame | None, rows: pd.DataFrame, span: Span, info: dict, what: str,
                    column: str) -> dict[str, Any] | None:
    """Samples of ``what`` that lie between the rows' ``column`` before and after them (per namespace for
    the index entries; the one registry item for its bytes)."""
    d = data(obs)
    m = d[d["what"] == what]
    if m.empty or column not in rows.columns:
        return None
    ok = rows[rows["ok"].to_numpy(dtype=bool)]
    vals = ok[column].to_numpy(dtype=float)
    if not (np.isfinite(vals) & (vals > 0)).any():
        return None
    # a row's count is in the store once its commit has landed, not when the row ends: on a starved machine
    # the release, delete and prune after it take most of a cycle, and a sample read then is the new value
    t_end = _ended(ok, span.t0, TO_COMMIT_END)
    t0 = span.t0.timestamp()
    if what == "index_entries":
        groups = namespace_of(ok["user"], info.get("scenario") or {})
        keys = [(k, groups.to_numpy() == k) for k in sorted(m["key"].unique())]
    else:
        keys = [(k, np.ones(len(ok), dtype=bool)) for k in sorted(m["key"].unique())
                if k == "PARTITIONS#registry/LIST"]
    reads = read_times(obs)
    total = agree = exact = 0
    off: list[str] = []  # the keys whose samples do not all agree
    for key, mine in keys:
        sel = mine & np.isfinite(vals) & (vals > 0)
        if not sel.any():
            continue
        s = m[m["key"] == key]
        took = s["time"].map(reads).fillna(0.0).to_numpy(dtype=float)
        ot, ov = s["time"].to_numpy(dtype=float) - t0, s["num"].to_numpy(dtype=float)
        keep = (ot >= t_end[sel].min()) & (ot <= t_end[sel].max())  # from the first row to the last
        ot, ov, took = ot[keep], ov[keep], took[keep]
        if not len(ot):
            continue
        hit, same_at = _judge(ot - took, ot, ov, t_end[sel], vals[sel])
        same = int(same_at.sum())
        total += len(ot)
        agree += int(hit.sum())
        exact += same
        # every sample between its neighbours (a commit may be landing), most of them the one before exactly
        if not (hit.all() and same >= EXACT_SHARE * len(ot)):
            off.append(key)
    if not total:
        return None
    return {"what": what, "column": column, "samples": total, "between": agree, "exact": exact,
            "keys": len(keys), "keys_off": off, "agrees": not off}


def row_levels(obs: pd.DataFrame | None, rows: pd.DataFrame, span: Span, info: dict) -> pd.DataFrame:
    """Per row, the observed level at its end: its namespace's entries and export, the FILE key's items."""
    d = data(obs)
    out = pd.DataFrame(index=rows.index)
    if d.empty:
        return out
    t_end = seconds_since(rows["ts_end"], span.t0)
    ns = namespace_of(rows["user"], info.get("scenario") or {}).to_numpy()
    t0 = span.t0.timestamp()
    for col, what in ROW_LEVELS.items():
        m = d[d["what"] == what]
        if m.empty:
            continue
        if what == "gsi_items":
            per = {"*": level(d, what, t0, ["FILE"])}
        elif what == "export_bytes":
            per = {k: level(d, what, t0, [f"{k}/.catalog-export.json" if k else ".catalog-export.json"])
                   for k in set(ns)}
        else:
            per = {k: level(d, what, t0, [k]) for k in set(ns)}
        v = np.full(len(rows), np.nan)
        for k, s in per.items():
            if s.empty:
                continue
            sel = np.ones(len(rows), dtype=bool) if k == "*" else ns == k
            i = np.searchsorted(s.index.to_numpy(), t_end[sel], side="right") - 1
            v[sel] = np.where(i >= 0, s.to_numpy()[np.clip(i, 0, None)], np.nan)
        if np.isfinite(v).any():
            out[col] = v
    return out


def cost(obs: pd.DataFrame | None, rows: pd.DataFrame, span: Span, every_s: float | None) -> dict[str, Any] | None:
    """What the observer's reads cost (its own rows of observed.csv), against its budget, beside the fleet."""
    if obs is None or obs.empty:
        return None
    own = obs[obs["what"].str.startswith("observer_") | (obs["what"] == "gap")]
    if own.empty:
        return None
    last = own.dropna(subset=["num"]).groupby(["what", "key"])["num"].last()

    def total(what: str) -> float:
        return float(last[what].sum()) if what in last.index.get_level_values(0) else 0.0

    budget = own[own["what"] == "observer_budget"]
    unit = str(budget["key"].iloc[-1]) if len(budget) else None
    rate = float(budget["num"].iloc[-1]) if len(budget) else None
    source = own.loc[own["what"] == "observer_capacity", "key"]
    t = obs["time"].to_numpy(dtype=float)
    seconds = max(float(t.max() - t.min()), 1e-6) if len(t) else span.seconds
    spent = total("observer_read_units") if unit == "read units" else total("observer_requests")
    intervals = own[own["what"] == "observer_interval_s"].dropna(subset=["num"]).groupby("key")["num"].max()
    gaps = own[own["what"] == "gap"]
    fleet_units = float(rows["read_units"].sum()) if "read_units" in rows.columns else None
    fleet_requests = float(rows["requests"].sum()) if "requests" in rows.columns else None
    return {"requests": total("observer_requests"), "read_units": total("observer_read_units"),
            "bytes": total("observer_bytes"), "seconds": seconds, "unit": unit, "budget_rate": rate,
            "budget_source": str(source.iloc[-1]) if len(source) else None, "spent": spent,
            "rate": spent / seconds, "within_budget": None if rate is None else bool(spent / seconds <= rate * 1.05),
            "every_s": every_s,
            "intervals": {str(k): float(v) for k, v in intervals.items()},
            "stretched": {str(k): float(v) for k, v in intervals.items() if every_s and v > every_s * 1.01},
            "gaps": {str(k): {"count": int(len(g)), "first": str(g["value"].iloc[0])}
                     for k, g in gaps.groupby("key")},
            "fleet_read_units": fleet_units, "fleet_requests": fleet_requests,
            "share_of_fleet_units": (total("observer_read_units") / fleet_units) if fleet_units else None,
            "share_of_fleet_requests": (total("observer_requests") / fleet_requests) if fleet_requests else None}


def findings(obs: pd.DataFrame | None, rows: pd.DataFrame, span: Span, info: dict) -> dict[str, Any] | None:
    """``summary.json``'s ``observed``: the changes, the agreement with the rows, the cost; None without it."""
    if obs is None or obs.empty:
        return None
    scenario = info.get("scenario") or {}
    every = ((scenario.get("observe") or {}).get("every_s")) or None
    grew = changes(obs, span)
    # a full commit writes every live entry of its namespace: the rows' count is the namespace's entries, until
    # a delete (disposable models) or a prune removes some after the commit, within the same row
    full = (scenario.get("datastore") or {}).get("index_commit") == "full" and \
        (scenario.get("workload") or {}).get("lifecycle", "long-lived") != "disposable"
    agreement = {"legacy": legacy_agreement(obs, rows, span),
                 "index_entries": level_agreement(obs, rows, span, info, "index_entries", "index_entries_written")
                 if full else None,
                 "registry_bytes": level_agreement(obs, rows, span, info, "registry_bytes", "registry_bytes")}
    for what, entry in grew.items():
        col = BESIDE.get(what)
        entry["beside"] = col if col in rows.columns and rows[col].notna().any() and rows[col].fillna(0).any() \
            else None
    return {"every_s": every, "changes": grew, "agreement": {k: v for k, v in agreement.items() if v is not None},
            "cost": cost(obs, rows, span, every)}
