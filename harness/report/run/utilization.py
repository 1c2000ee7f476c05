"""Utilization of every resource the fleet shares, per stretch of the run, from the run's own records.

- each lock key (``history/*.jsonl``): busy and held shares, grants/s, waiters, timeouts
  (``harness.metrics.lockuse``); a key only one holder ever took is shown but cannot bind the fleet;
- the table's and each GSI's read and write units per second against the modelled capacity
  (run.json's scenario ``[fidelity]``): per table and index from ``keys.csv`` when recorded, else every
  unit the rows carry against the table's limit; an on-demand table without a maximum has no hard limit
  (DynamoDB scales it), so it is shown against its warm throughput and cannot bind;
- the hottest partition key (``keys.csv``) against DynamoDB's per-partition 3,000 RCU / 1,000 WCU (scaled); and,
  where the model hashes two keys or more to one of its partitions (``harness/aws/fidelity/throttle.partition_of``,
  the rule its throttle spends by), the busiest such partition against the same limit: three keys at a third
  each fill it, which no key's own row shows;
- each load-generating Locust process's CPU (``generator.csv``);
- the stand-in (``probes.csv``): its constant-cost probe against its quickest, read as a single queue's
  utilization, 1 - baseline / now;
- the workers themselves (``step``): the share of time they were inside an iteration, and the step it went to.

Each utilization carries a rough 95 % interval from its values in sub-windows of the stretch. Which of them
binds the fleet is ``harness.metrics.bound``'s rule, shared with the web UI's harness tab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import machine
from harness.metrics.bound import Resource, spinning
from harness.metrics.lockuse import Intervals, Timeline, mean_interval, timelines
from harness.report.forecast.capacity import KINDS, bucket_units, model_of
from harness.report.load import STEP_COLUMNS
from harness.report.run.causes import STEP_LABELS
from harness.report.series import Span, seconds_since, user_spans, users_alive

MIN_WINDOWS = 4  # sub-windows per stretch for an interval
PROBE_BASELINE_Q = 10  # the probe's quickest: its 10th percentile over the load


@dataclass(frozen=True)
class Limits:
    """The modelled capacity, whole fleet (units/s), from run.json's scenario ``[fidelity]``."""

    read: float | None  # a hard table limit (provisioned, or on-demand maximum); None: DynamoDB scales
    write: float | None
    soft_read: float  # the warm throughput an on-demand table starts with
    soft_write: float
    partition_read: float
    partition_write: float
    basis: str

    def table(self, kind: str) -> tuple[float, bool]:
        """(limit, hard) for read or write units."""
        hard = self.read if kind == "read" else self.write
        soft = self.soft_read if kind == "read" else self.soft_write
        return (hard, True) if hard else (soft, False)

    def partition(self, kind: str) -> float:
        return self.partition_read if kind == "read" else self.partition_write


def limits(info: dict) -> Limits | None:
    """The capacity model the run ran with (None: S3, no model, or the fidelity layer off)."""
    if info.get("backend") not in (None, "dynamodb"):
        return None
    resolved = info.get("fidelity")
    if isinstance(resolved, dict) and resolved.get("enabled") is False:
        return None
    fid = ((info.get("scenario") or {}).get("fidelity") or {})
    if fid.get("mode") == "off" or (fid.get("mode") == "auto" and info.get("endpoint_kind") == "aws"):
        return None
    ddb = (fid.get("config") or {}).get("dynamodb")
    if not isinstance(ddb, dict):
        return None
    scale = float(ddb.get("scale", 1.0) or 1.0)
    mode = ddb.get("mode", "on-demand")
    read, write = float(ddb.get("read", 12_000.0)), float(ddb.get("write", 4_000.0))
    if mode == "provisioned":
        hard_r, hard_w, basis = read * scale, write * scale, "provisioned"
    else:
        mr, mw = float(ddb.get("max_read") or 0), float(ddb.get("max_write") or 0)
        hard_r, hard_w = (mr * scale or None), (mw * scale or None)
        basis = "on-demand maximum" if (mr or mw) else "on-demand warm throughput, no hard limit"
    if scale != 1:
        basis += f", scale {scale:g}"
    return Limits(hard_r, hard_w, read * scale, write * scale, float(ddb.get("partition_read", 3000.0)) * scale,
                  float(ddb.get("partition_write", 1000.0)) * scale, basis)


KEYS_KEPT = 20  # a modelled partition's keys named in its evidence, the busiest first
OUTSIDE = "outside_ms"  # a command-driver iteration's time in no step's span: its processes' start and exit
OUTSIDE_LABEL = "the commands' own start and exit (outside every step's span)"


class Usage:
    """A run's records, prepared once, asked for any stretch (seconds since the load's start)."""

    def __init__(self, rows: pd.DataFrame, info: dict, span: Span, window: float, *,
                 locks: pd.DataFrame | dict[str, Intervals] | None = None, keys: pd.DataFrame | None = None,
                 generator: pd.DataFrame | None = None, probes: pd.DataFrame | None = None,
                 processes: pd.DataFrame | None = None) -> None:
        self.span, self.window, self.info = span, window, info
        self.t0 = span.t0.timestamp()
        self.start = seconds_since(rows["ts_start"], span.t0)
        self.end = seconds_since(rows["ts_end"], span.t0)
        self.users = user_spans(rows, span)
        self._s, self._e = np.sort(self.start), np.sort(self.end)
        self._cs, self._ce = np.cumsum(self._s), np.cumsum(self._e)
        self.ok = rows["ok"].to_numpy(dtype=bool)
        self.kind = rows["error_kind"].to_numpy()
        self.steps = {c: rows[c].to_numpy(dtype=float) for c in STEP_COLUMNS}
        if "command_ms" in rows.columns and rows["command_ms"].notna().any():  # the command driver: time no span has
            inside = rows[STEP_COLUMNS].sum(axis=1, min_count=1).fillna(0.0).to_numpy(dtype=float)
            self.steps[OUTSIDE] = np.clip(rows["total_ms"].to_numpy(dtype=float) - inside, 0.0, None)
        self.units = {k: rows[f"{k}_units"].to_numpy(dtype=float) for k in ("read", "write")}
        self.limits = limits(info)
        self.model = model_of(info)[0]
        self.locks: dict[str, Timeline] = timelines(locks, span.t1.timestamp()) if locks is not None else {}
        self.keys = self._keys(keys)
        self.gen = generator
        self.gen_t = seconds_since(generator["ts"], span.t0) if generator is not None else None
        self.probes = probes
        self.probe = self._probe(probes)
        self.procs = processes
        self.procs_t = seconds_since(processes["ts"], span.t0) if processes is not None else None

    # ---- preparation ------------------------------------------------------------------------------

    def _keys(self, keys: pd.DataFrame | None) -> pd.DataFrame | None:
        if keys is None or keys.empty:
            return None
        k = keys.copy()
        k["t"] = seconds_since(k["ts"], self.span.t0)
        if "throttles" not in k.columns:
            k["throttles"] = 0.0
        return k

    def _probe(self, probes: pd.DataFrame | None) -> tuple[str, np.ndarray, np.ndarray, float] | None:
        if probes is None or probes.empty:
            return None
        t = seconds_since(probes["ts"], self.span.t0)
        inside = probes[(t >= 0) & (t <= self.span.seconds)]
        if len(inside) < 6:
            return None
        op = str(inside["op"].mode().iloc[0])
        p = inside[inside["op"] == op]
        ms = p["ms"].to_numpy(dtype=float)
        return op, seconds_since(p["ts"], self.span.t0), ms, float(np.percentile(ms, PROBE_BASELINE_Q))

    def _inside(self, t: np.ndarray) -> np.ndarray:
        """Iteration-seconds spent inside iterations up to each ``t``: the integral of iterations in progress."""
        def ramp(sorted_x: np.ndarray, cum: np.ndarray) -> np.ndarray:
            k = np.searchsorted(sorted_x, t, side="right")
            return k * t - np.concatenate([[0.0], cum])[k]
        return ramp(self._s, self._cs) - ramp(self._e, self._ce)

    def _edges(self, a: float, b: float) -> np.ndarray:
        n = max(MIN_WINDOWS, int(round((b - a) / max(self.window, 1e-9))))
        return np.linspace(a, b, n + 1)

    # ---- per resource -----------------------------------------------------------------------------

    def step(self, a: float, b: float) -> Resource:
        """The workers: time inside iterations over user-time, and the step most of it went to."""
        users = users_alive(*self.users, a, b)
        busy = float(self._inside(np.array([b]))[0] - self._inside(np.array([a]))[0]) / max(users * (b - a), 1e-9)
        edges = self._edges(a, b)
        inside = np.diff(self._inside(edges))
        alive = np.array([users_alive(*self.users, x, y) for x, y in zip(edges[:-1], edges[1:], strict=True)])
        per = np.where(alive > 0, inside / np.clip(alive * np.diff(edges), 1e-9, None), np.nan)
        ending = (self.end >= a) & (self.end <= b)
        means = {c: float(np.nanmean(v[ending])) if ending.any() and not np.isnan(v[ending]).all() else 0.0
                 for c, v in self.steps.items()}  # a step no span timed (the command driver's null) is 0 here
        total = sum(means.values())
        top = max(means, key=means.get) if total > 0 else None
        names = {**STEP_LABELS, OUTSIDE: OUTSIDE_LABEL}
        shares = {names[c]: (m / total if total else 0.0) for c, m in means.items()}
        return Resource("step", names[top] if top else "", min(busy, 1.0), mean_interval(per),
                        {"share": shares.get(names[top]) if top else None, "users": users,
                         "step_shares": shares, "iterations": int(ending.sum())})

    def lock(self, key: str, tl: Timeline, a: float, b: float) -> Resource:
        use = tl.use(self.t0 + a, self.t0 + b)
        busy, _ = tl.busy_share(self.t0 + self._edges(a, b))
        ev = use.as_dict()
        ev["holders_in_run"] = tl.holder_count
        return Resource("lock", key, use.busy, mean_interval(busy), ev, candidate=tl.holder_count >= 2)

    def capacity(self, a: float, b: float) -> list[Resource]:
        lim = self.limits
        if lim is None:
            return []
        out = []
        ending = (self.end >= a) & (self.end <= b)
        throttled = int((ending & (self.kind == "throttled")).sum())
        edges = self._edges(a, b)
        for kind in ("read", "write"):
            limit, hard = lim.table(kind)
            if not limit:
                continue
            if self.keys is not None:
                k = self.keys[(self.keys["t"] >= a) & (self.keys["t"] < b)]
                for (table, index), g in k.groupby(["table", "index"]):
                    used = float(g[f"{kind}_units"].sum()) / (b - a)
                    per = np.histogram(g["t"], edges, weights=g[f"{kind}_units"])[0] / np.diff(edges)
                    iv = mean_interval(per / limit)
                    what = f"{table}" + (f" index {index}" if index else " (table)")
                    out.append(Resource("capacity", f"{what} {kind}", used / limit, iv,
                                        {"units": kind, "used_per_s": used, "limit_per_s": limit, "basis": lim.basis,
                                         "hard": hard, "what": what, "throttled": throttled,
                                         "throttles": int(g["throttles"].sum()), "source": "keys.csv"},
                                        candidate=hard))
                continue
            units = self.units[kind]
            used = float(np.nansum(units[ending])) / (b - a)
            per = np.histogram(self.end[ending], edges, weights=np.nan_to_num(units[ending]))[0] / np.diff(edges)
            out.append(Resource("capacity", f"table {kind}", used / limit, mean_interval(per / limit),
                                {"units": kind, "used_per_s": used, "limit_per_s": limit, "basis": lim.basis,
                                 "hard": hard, "what": "the table and its GSIs together (the rows do not split "
                                                       "them; keys.csv would)", "throttled": throttled,
                                 "source": "rows"}, candidate=hard))
        return out

    def partitions(self, a: float, b: float) -> list[Resource]:
        if self.keys is None or self.limits is None:
            return []
        k = self.keys[(self.keys["t"] >= a) & (self.keys["t"] < b)]
        if k.empty:
            return []
        out = []
        edges = self._edges(a, b)
        for kind in ("read", "write"):
            limit = self.limits.partition(kind)
            per_key = k.groupby(["table", "index", "key"])[f"{kind}_units"].sum()
            per_key = per_key[per_key.index.get_level_values("key") != ""]
            if per_key.empty or per_key.max() <= 0:
                continue
            table, index, key = per_key.idxmax()
            used = float(per_key.max()) / (b - a)
            g = k[(k["table"] == table) & (k["index"] == index) & (k["key"] == key)]
            per = np.histogram(g["t"], edges, weights=g[f"{kind}_units"])[0] / np.diff(edges)
            out.append(Resource("partition", key, used / limit, mean_interval(per / limit),
                                {"units": kind, "table": table, "index": index or None, "used_per_s": used,
                                 "limit_per_s": limit, "throttles": int(g["throttles"].sum()),
                                 "keys_seen": int(len(per_key))}))
        return out + self._model_partitions(k, a, b, edges)

    def _model_partitions(self, k: pd.DataFrame, a: float, b: float, edges: np.ndarray) -> list[Resource]:
        """Each kind's busiest partition of the model's, when it holds two keys or more (``keys``: the busiest
        ``KEYS_KEPT`` first, ``keys_seen`` of them in all; ``model_partition`` of ``partitions``): the bucket the
        model's throttle spends from."""
        if self.model is None:
            return []
        u = bucket_units(k, self.model)
        u = u[u["partition"] >= 0]
        out = []
        for kind in KINDS:
            g = u[u["kind"] == kind]
            if g.empty:
                continue
            per = g.groupby(["table", "index", "partition"])["units"].sum()
            table, index, part = per.idxmax()
            inside = g[(g["table"] == table) & (g["index"] == index) & (g["partition"] == part)]
            names = inside.groupby("key")["units"].sum().sort_values(ascending=False)
            if len(names) < 2:  # one key: its own row says it
                continue
            limit = self.model.partition_limit(kind)
            used = float(per.max()) / (b - a)
            series = np.histogram(inside["t"], edges, weights=inside["units"])[0] / np.diff(edges)
            mine = k[(k["table"] == table) & (k["index"] == index) & k["key"].isin(names.index)]
            out.append(Resource("partition", f"partition {part} of {self.model.partitions()}", used / limit,
                                mean_interval(series / limit),
                                {"units": kind, "table": table, "index": index or None, "used_per_s": used,
                                 "limit_per_s": limit, "throttles": int(mine["throttles"].sum()),
                                 "keys": [str(x) for x in names.index[:KEYS_KEPT]], "keys_seen": int(len(names)),
                                 "model_partition": int(part), "partitions": self.model.partitions()}))
        return out

    def generator(self, a: float, b: float) -> list[Resource]:
        if self.gen is None or self.gen_t is None:
            return []
        out = []
        inside = (self.gen_t >= a) & (self.gen_t <= b)
        for name, g in self.gen[inside].groupby("process"):
            cpu = g["cpu_percent"].to_numpy(dtype=float) / 100
            if len(cpu) == 0:
                continue
            out.append(Resource("generator", str(name), float(cpu.mean()), mean_interval(cpu),
                                {"samples": int(len(cpu)), "saturated_share": float((cpu >= 0.9).mean()),
                                 "median": float(np.median(cpu))}, candidate=str(name) != "master"))
        return out

    def stand_in(self, a: float, b: float) -> list[Resource]:
        if self.probe is None:
            return []
        op, t, ms, base = self.probe
        inside = (t >= a) & (t <= b)
        if inside.sum() < 3 or base <= 0:
            return []
        now = float(np.median(ms[inside]))
        rho = max(0.0, 1 - base / now) if now > 0 else 0.0
        edges = self._edges(a, b)
        idx = np.searchsorted(edges, t[inside], side="right") - 1
        per = [max(0.0, 1 - base / float(np.median(ms[inside][idx == i]))) for i in range(len(edges) - 1)
               if (idx == i).sum() >= 1]
        return [Resource("stand-in", op, rho, mean_interval(np.array(per)),
                         {"op": op, "now_ms": now, "baseline_ms": base, "samples": int(inside.sum())})]

    def machine(self, a: float, b: float) -> list[Resource]:
        """The machine and each stand-in by its own CPU (``processes.csv``; ``harness/metrics/machine.py``)."""
        if self.procs is None or self.procs_t is None:
            return []
        inside = (self.procs_t >= a) & (self.procs_t <= b)
        p = self.procs[inside]
        return machine.resources(np.asarray(self.procs_t)[inside], p["process"].to_numpy(),
                                 p["role"].to_numpy(), p["cpu_percent"].to_numpy(), int(p["cores"].max() or 1)
                                 if len(p) else 1)

    def resources(self, a: float, b: float) -> list[Resource]:
        """Every resource over ``[a, b]`` (seconds since the load's start)."""
        out = [self.step(a, b)]
        out += [self.lock(k, tl, a, b) for k, tl in sorted(self.locks.items())]
        out += self.capacity(a, b) + self.partitions(a, b) + self.generator(a, b) + self.stand_in(a, b)
        return spinning(out + self.machine(a, b), self.connection_share(a, b))

    def connection_share(self, a: float, b: float) -> float:
        """The share of the iterations ending in ``[a, b]`` that failed to connect (the endpoint was gone)."""
        ending = (self.end >= a) & (self.end <= b)
        n = int(ending.sum())
        return float((ending & (self.kind == "connection")).sum()) / n if n else 0.0


def table_rows(resources: list[Resource]) -> list[dict[str, Any]]:
    """The utilization table: one row per resource, busiest first (JSON-ready)."""
    out = []
    for r in sorted(resources, key=lambda r: -r.utilization):
        out.append({"kind": r.kind, "name": r.name, "utilization": r.utilization,
                    "interval": list(r.interval) if r.interval else None, "saturated": r.saturated,
                    "can_bind": r.candidate, "evidence": r.evidence})
    return out
