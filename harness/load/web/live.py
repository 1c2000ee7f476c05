"""The harness tab's numbers, computed from iteration rows as they arrive, with the run's one set of definitions.

The report and this tab must agree, or a user sees one number live and another afterwards: both compute the
rate, the failure ratio, the step shares and the quantiles with ``harness.metrics.numbers`` (its docstring
says each definition), over rows as they arrive here instead of a DataFrame at the end. What this module
keeps is only the running sums those definitions are applied to:

- work counts: their mean per successful iteration;
- lock wait p50 / p95: over successful iterations (failed ones count in the failure rows);
- read / write units: their sum over the span, per second (every iteration's: a failed one consumed them too).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.metrics import bound as bounds
from harness.metrics import machine, numbers
from harness.metrics.bound import Resource
from harness.metrics.lockuse import LOCK_EVENTS, Timeline, mean_interval, timelines
from harness.metrics.numbers import STACKED_STEPS
from harness.record.schema import STEP_LABELS

REPORT_STEPS = STACKED_STEPS
STEP_NAMES = STEP_LABELS
BIN_S = 2.0  # the charts' resolution (merged when a test is long: at most MAX_POINTS points)
MAX_POINTS = 150
MAX_LOCK_EVENTS = 50_000  # older lock events are folded into per-bin figures and dropped ...
FOLD_SPAN_S = 300.0  # ... and so are they once the kept ones span this long (a long headless run stays flat)
MAX_LOCK_KEYS = 200  # folded figures kept for the busiest keys (a disposable model's lock is used once)
ALIVE_GRACE_S = 30.0  # a user whose last iteration ended this recently is still running one
COUNTS = ("pull_items_read", "index_entries_written", "catalog_rows", "files_pushed")
UNITS = ("read_units", "write_units")


def _event_s(e: dict) -> float:
    """When a lock event happened, in epoch seconds (its grant, else its end, else its start)."""
    return float(e.get("granted_ms") or e.get("end_ms") or e.get("invoke_ms") or 0) / 1000


@dataclass
class Summary:
    """Numbers over one span of a test."""

    seconds: float
    iterations: int
    ok: int
    lock_p50: float | None
    lock_p95: float | None
    step_shares: dict[str, float]
    counts: dict[str, float | None]
    units_per_s: dict[str, float]
    resources: list[Resource] = field(default_factory=list)  # what the span's bound is chosen from
    charts: dict[str, Any] | None = None  # the whole test's series, for the tab's charts

    @property
    def failed(self) -> int:
        return self.iterations - self.ok

    @property
    def ok_per_s(self) -> float:
        return numbers.per_second(self.ok, self.seconds)

    @property
    def failed_per_s(self) -> float:
        return numbers.per_second(self.failed, self.seconds)

    @property
    def failure_ratio(self) -> float | None:
        return numbers.failure_ratio(self.failed, self.iterations)


@dataclass
class Totals:
    """Running sums over rows: a whole test's summary without keeping its rows."""

    iterations: int = 0
    ok: int = 0
    steps: dict[str, float] = field(default_factory=lambda: dict.fromkeys(REPORT_STEPS, 0.0))
    counts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0.0))
    units: dict[str, float] = field(default_factory=lambda: dict.fromkeys(UNITS, 0.0))
    lock_waits: array = field(default_factory=lambda: array("d"))
    first_start: float | None = None
    last_end: float | None = None

    def add(self, row: dict) -> None:
        self.iterations += 1
        for c in UNITS:
            self.units[c] += float(row.get(c) or 0.0)
        if numbers.outcome(row)[0]:
            self.ok += 1
            for c in REPORT_STEPS:
                self.steps[c] += float(row.get(c) or 0.0)
            for c in COUNTS:
                self.counts[c] += float(row.get(c) or 0)
            self.lock_waits.append(float(row.get("lock_wait_ms") or 0.0))
        start, end = float(row["ts_start"]), float(row["ts_end"])
        self.first_start = start if self.first_start is None else min(self.first_start, start)
        self.last_end = end if self.last_end is None else max(self.last_end, end)

    def summary(self, seconds: float) -> Summary:
        n = self.ok  # step times and work counts are per successful iteration
        means = {c: (v / n if n else 0.0) for c, v in self.steps.items()}
        p50, p95 = numbers.quantiles(np.frombuffer(self.lock_waits, dtype=np.float64), (0.5, 0.95))
        return Summary(
            seconds=seconds, iterations=self.iterations, ok=self.ok,
            lock_p50=p50, lock_p95=p95,
            step_shares=numbers.shares(means), counts={c: (v / n if n else None) for c, v in self.counts.items()},
            units_per_s={c: numbers.per_second(v, seconds) for c, v in self.units.items()})


def summarize(rows: list[dict], seconds: float) -> Summary:
    """The summary of ``rows`` over a span of ``seconds``."""
    t = Totals()
    for r in rows:
        t.add(r)
    return t.summary(seconds)


@dataclass
class Bin:
    """One chart bin's sums: iterations by outcome, step ms (successful; all), time inside iterations."""

    ok: int = 0
    failed: int = 0
    ok_steps: dict[str, float] = field(default_factory=lambda: dict.fromkeys(REPORT_STEPS, 0.0))
    all_steps: dict[str, float] = field(default_factory=lambda: dict.fromkeys(REPORT_STEPS, 0.0))
    inside_s: float = 0.0
    units: dict[str, float] = field(default_factory=lambda: dict.fromkeys(UNITS, 0.0))
    connection: int = 0  # failed to connect (the endpoint was gone): the bound's ``spinning``


class Live:
    """One test's rows as they arrive: a recent window, and the whole test so far.

    ``lag_s`` is how late rows arrive (a worker reports every 3 s): the recent
    window ends that long ago, so it is not read before its rows are in.
    Beside the rows, the history's lock events (``add_events``) and the load
    generator's CPU (``add_generator``) feed the utilization the bound is chosen
    from (``harness.metrics.bound``, the report's rule), and every row lands in a
    chart bin (``BIN_S``) for the tab's charts.
    """

    def __init__(self, window_s: float = 10.0, lag_s: float = 0.0, keep_s: float = 60.0) -> None:
        self.window_s, self.lag_s, self.keep_s = window_s, lag_s, keep_s
        self.recent: deque[dict] = deque()
        self.whole = Totals()
        self.bins: dict[int, Bin] = {}
        self.user_span: dict[str, list[float]] = {}
        self.lock_events: list[dict] = []
        self.lock_folded: dict[str, dict[int, tuple[float, float]]] = {}  # key -> bin -> (busy, held)
        self.lock_holders: dict[str, set[str]] = {}
        self.generator: deque[tuple[float, str, float]] = deque(maxlen=100_000)
        self.processes: deque[tuple[float, str, str, float, int]] = deque(maxlen=100_000)  # processes.csv's
        # processes.csv's ``worker@<pid>`` -> ``worker-N``: the session's, refreshed as workers report their pids
        self.worker_names: dict[str, str] = {}
        self._timelines: tuple[tuple[int, int], dict[str, Timeline]] | None = None
        self.taps: list[Any] = []  # more consumers of the same rows and events (harness.telemetry.meters.Tap)

    def add(self, rows: list[dict]) -> None:
        """Rows as they arrive: into the whole test's sums and its chart bins, and the recent window.

        The window keeps ``keep_s`` seconds behind the newest row: a headless run never asks for a window
        until its end, and must not keep every row until then.
        """
        for r in rows:
            self.whole.add(r)
            self.recent.append(r)
            start, end = float(r["ts_start"]), float(r["ts_end"])
            b = self.bins.setdefault(int(math.floor(end / BIN_S)), Bin())
            ok, kind = numbers.outcome(r)
            b.ok += ok
            b.failed += not ok
            b.connection += kind == "connection"
            for c in REPORT_STEPS:
                v = float(r.get(c) or 0.0)
                b.all_steps[c] += v
                if ok:
                    b.ok_steps[c] += v
            for c in UNITS:
                b.units[c] += float(r.get(c) or 0.0)
            b.inside_s += max(0.0, end - start)
            span = self.user_span.setdefault(str(r.get("user", "")), [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
        if self.whole.last_end is not None:
            while self.recent and float(self.recent[0]["ts_end"]) < self.whole.last_end - self.keep_s:
                self.recent.popleft()
        for tap in self.taps:
            tap.rows(rows)

    def add_events(self, events: list[dict]) -> None:
        """The history's events as they arrive (the lock's grants, releases and timeouts are kept)."""
        for e in events:
            if e.get("type") in LOCK_EVENTS and e.get("key") is not None:
                self.lock_events.append(e)
                if e.get("type") == "grant":
                    self.lock_holders.setdefault(e["key"], set()).add(str(e.get("holder", "")))
        for tap in self.taps:
            tap.events(events)
        kept = self.lock_events
        if kept and (len(kept) > MAX_LOCK_EVENTS or _event_s(kept[-1]) - _event_s(kept[0]) > FOLD_SPAN_S):
            self._fold()

    def add_generator(self, ts: float, cpu_by_process: dict[str, float]) -> None:
        """One sample of the load generator's CPU per Locust process (``generator.csv``'s numbers)."""
        for proc, cpu in cpu_by_process.items():
            self.generator.append((float(ts), str(proc), float(cpu)))

    def add_processes(self, rows: list[tuple[float, str, str, float, int]]) -> None:
        """``processes.csv``'s new rows (ts, process, role, cpu %, cores): the machine and the stand-in's CPU."""
        self.processes.extend(rows)

    def _fold(self) -> None:
        """Freeze the lock figures of bins older than the newest events' last minute, and drop their events.

        Only bins where a key was busy or held are stored (a missing bin is an idle one), from the oldest
        event kept on; then only the ``MAX_LOCK_KEYS`` busiest keys keep their folded figures, with every key
        that still has events kept. A key used by one disposable model once is a few bins, then nothing.
        """
        times = [_event_s(e) for e in self.lock_events]
        cut = math.floor((max(times) - 60.0) / BIN_S) * BIN_S
        first = max(min(self.bins, default=int(cut / BIN_S)), int(math.floor(min(times) / BIN_S)))
        edges = np.arange(first * BIN_S, cut + BIN_S / 2, BIN_S)
        if len(edges) >= 2:
            for key, tl in timelines(self.lock_events).items():
                busy, held = tl.busy_share(edges)
                folded = self.lock_folded.setdefault(key, {})
                for i in np.flatnonzero((busy > 0) | (held > 0)):
                    folded.setdefault(first + int(i), (float(busy[i]), float(held[i])))
        self.lock_events = [e for e, t in zip(self.lock_events, times, strict=True) if t >= cut - 60.0]
        live = {e["key"] for e in self.lock_events}
        folded = {k: v for k, v in self.lock_folded.items() if v or k in live}
        if len(folded) > MAX_LOCK_KEYS:
            ranked = sorted(folded, key=lambda k: sum(b for b, _ in folded[k].values()), reverse=True)
            keep = set(ranked[:MAX_LOCK_KEYS]) | live
            folded = {k: v for k, v in folded.items() if k in keep}
        self.lock_folded = folded
        self.lock_holders = {k: v for k, v in self.lock_holders.items() if k in folded or k in live}

    def window(self, now: float, started_at: float) -> Summary:
        """The last ``window_s`` seconds that have all their rows (or less, early in a test)."""
        end = now - self.lag_s
        start = max(end - self.window_s, started_at)
        while self.recent and float(self.recent[0]["ts_end"]) < now - self.keep_s:
            self.recent.popleft()
        rows = [r for r in self.recent if start < float(r["ts_end"]) <= end]
        s = summarize(rows, max(end - start, 1e-9))
        s.resources = self.resources(start, end, now)
        return s

    def test(self, now: float, started_at: float) -> Summary:
        """The whole test so far; its span runs from the test's start to the last row's end."""
        end = self.whole.last_end if self.whole.last_end is not None else now
        s = self.whole.summary(max(end - started_at, 1e-9))
        s.resources = self.resources(started_at, end, now)
        s.charts = self.charts(started_at, end, now)
        return s

    # ---- utilization -------------------------------------------------------------------------------------

    def _alive(self, a: float, b: float, now: float) -> float:
        """Users running between a and b, averaged (a user whose last row is recent is still running)."""
        total = 0.0
        for first, last in self.user_span.values():
            last = now if last >= now - ALIVE_GRACE_S else last
            total += max(0.0, min(last, b) - max(first, a))
        return total / max(b - a, 1e-9)

    def _bin_range(self, a: float, b: float) -> range:
        return range(int(math.floor(a / BIN_S)), int(math.floor(b / BIN_S)) + 1)

    def step(self, a: float, b: float, now: float) -> Resource:
        """The workers' share of time inside iterations (rows by their end, like the report's windows)."""
        bins = [self.bins[i] for i in self._bin_range(a, b) if i in self.bins]
        inside = sum(x.inside_s for x in bins)
        users = self._alive(a, b, now)
        busy = inside / max(users * (b - a), 1e-9) if users > 0 else 0.0
        steps = {c: sum(x.all_steps[c] for x in bins) for c in REPORT_STEPS}
        total = sum(steps.values())
        top = max(steps, key=steps.get) if total > 0 else None
        return Resource("step", STEP_NAMES[top] if top else "", min(busy, 1.0), None,
                        {"share": steps[top] / total if top else None, "users": users})

    def _locks(self) -> dict[str, Timeline]:
        """The kept events' timelines, built once per batch of events (a tab poll asks three times)."""
        mark = (len(self.lock_events), id(self.lock_events[-1]) if self.lock_events else 0)
        if self._timelines is None or self._timelines[0] != mark:
            self._timelines = (mark, timelines(self.lock_events) if self.lock_events else {})
        return self._timelines[1]

    def lock_busy(self, key: str, tl: Timeline | None, bins: range) -> tuple[np.ndarray, np.ndarray]:
        """Busy and held share per bin: folded bins as frozen, the rest from the events kept."""
        edges = np.array([i * BIN_S for i in bins] + [(bins[-1] + 1) * BIN_S]) if len(bins) else np.zeros(1)
        busy, held = tl.busy_share(edges) if tl is not None else (np.zeros(len(bins)), np.zeros(len(bins)))
        folded = self.lock_folded.get(key, {})
        for j, i in enumerate(bins):
            if i in folded:
                busy[j], held[j] = folded[i]
        return busy, held

    def lock_busy_shares(self, a: float, b: float) -> dict[str, tuple[np.ndarray, int]]:
        """Each lock key's busy share per bin between a and b, and its holders so far (the live abort's
        ``utilization(lock)``, harness.gates.live)."""
        locks, bins = self._locks(), self._bin_range(a, b)
        return {key: (self.lock_busy(key, locks.get(key), bins)[0], len(self.lock_holders.get(key, set())))
                for key in sorted(set(locks) | set(self.lock_folded))}

    def resources(self, a: float, b: float, now: float) -> list[Resource]:
        out = [self.step(a, b, now)]
        locks = self._locks()
        for key in sorted(set(locks) | set(self.lock_folded)):
            tl = locks.get(key)
            if tl is not None and not self.lock_folded.get(key):
                ev = tl.use(a, b).as_dict()
            else:  # partly folded: the per-bin figures
                busy, held = self.lock_busy(key, tl, self._bin_range(a, b))
                ev = {"key": key, "busy": float(busy.mean()), "held": float(held.mean())}
            holders = len(self.lock_holders.get(key, set()))
            ev["holders_in_run"] = holders
            out.append(Resource("lock", key, float(ev["busy"]), None, ev, candidate=holders >= 2))
        gen: dict[str, list[float]] = {}
        for ts, proc, cpu in self.generator:
            if a <= ts <= b:
                gen.setdefault(proc, []).append(cpu / 100)
        for proc, cpu in sorted(gen.items()):
            v = np.array(cpu)
            out.append(Resource("generator", proc, float(v.mean()), mean_interval(v),
                                {"samples": len(v), "saturated_share": float((v >= 0.9).mean())},
                                candidate=proc != "master"))
        p = [r for r in self.processes if a <= r[0] <= b]
        if p:  # the report's machine and stand-in CPU, from the same samples (harness/metrics/machine.py)
            ts, proc, role, cpu, cores = zip(*p, strict=True)
            proc = tuple(self.worker_names.get(n, n) for n in proc)  # as known now, not when the row came
            out += machine.resources(np.array(ts), np.array(proc), np.array(role), np.array(cpu), max(cores))
        bins = [self.bins[i] for i in self._bin_range(a, b) if i in self.bins]
        n = sum(x.ok + x.failed for x in bins)
        return bounds.spinning(out, sum(x.connection for x in bins) / n if n else 0.0)

    # ---- charts --------------------------------------------------------------------------------------------

    def chart_bins(self, started_at: float, end: float, now: float) -> tuple[int, int]:
        """The first and last chart bin that are over and hold all their rows (last < first: none yet).

        The bin holding the newest row (or the test's stop), and any a worker has not reported yet (``lag_s``),
        is left out: its few rows over the first hundredths of a second of it drew 240 it/s against a real 6
        (issue 54). So is a first bin the test entered in its second half.
        """
        edge = min(end, now - self.lag_s)
        first, last = int(math.floor(started_at / BIN_S)), int(math.floor(edge / BIN_S)) - 1
        if (first + 1) * BIN_S - started_at < BIN_S / 2:
            first += 1
        return first, last

    def _utilization_series(self, chosen: Resource | None, groups: list[range],
                            busy_step: list[float | None]) -> dict[str, Any]:
        """The bound's utilization per chart point: a lock's busy and held shares, a Locust process's CPU, else
        the workers' time inside an iteration (``busy_step``)."""
        if chosen is not None and chosen.kind == "lock":
            tl = self._locks().get(chosen.name)
            busy, held = [], []
            for g in groups:
                bu, he = self.lock_busy(chosen.name, tl, g)
                busy.append(float(bu.mean()))
                held.append(float(he.mean()))
            return {"label": f"lock {chosen.name}: busy", "kind": "lock", "values": busy, "held": held}
        if chosen is not None and chosen.kind == "generator":
            vals = []
            for g in groups:
                a, b = g[0] * BIN_S, (g[-1] + 1) * BIN_S
                cpu = [c / 100 for ts, p, c in self.generator if p == chosen.name and a <= ts < b]
                vals.append(float(np.mean(cpu)) if cpu else None)
            return {"label": f"Locust process {chosen.name}: CPU", "kind": "generator", "values": vals}
        return {"label": "workers inside an iteration", "kind": "step", "values": busy_step}

    def charts(self, started_at: float, end: float, now: float) -> dict[str, Any]:
        """The test so far, at most MAX_POINTS points: rate with its 95 % band, each step's share of a
        successful iteration, and the utilization of the busiest resource that can bind (lock, step, generator).

        Whole bins only (``chart_bins``): a bin still filling would divide its few rows by a sliver of time.
        """
        first, last = self.chart_bins(started_at, end, now)
        n = max(0, last - first + 1)
        m = max(1, math.ceil(n / MAX_POINTS))
        groups = [range(first + j, min(first + j + m, last + 1)) for j in range(0, n, m)]
        t, ok, failed, width = [], [], [], []
        shares: dict[str, list[float | None]] = {STEP_NAMES[c]: [] for c in REPORT_STEPS}
        busy_step: list[float | None] = []
        for g in groups:
            bins = [self.bins[i] for i in g if i in self.bins]
            a = max(g[0] * BIN_S, started_at)
            b = min((g[-1] + 1) * BIN_S, max(end, a + 1e-9))
            t.append(a - started_at)
            width.append(max(b - a, 1e-9))
            ok.append(sum(x.ok for x in bins))
            failed.append(sum(x.failed for x in bins))
            part = numbers.shares({c: sum(x.ok_steps[c] for x in bins) for c in REPORT_STEPS}, empty=None)
            for c in REPORT_STEPS:
                shares[STEP_NAMES[c]].append(part[c])
            users = self._alive(a, b, now)
            busy_step.append(min(1.0, sum(x.inside_s for x in bins) / (users * (b - a))) if users > 0 else None)
        w = np.array(width)
        lo, hi = numbers.poisson_band(np.array(ok, dtype=float))
        chosen = bounds.choose(self.resources(started_at, end, now))
        util = self._utilization_series(chosen, groups, busy_step)
        keep = {k: v for k, v in shares.items() if any(x for x in v)}
        return {"t": t, "ok_rate": list(np.array(ok) / w), "ok_lo": list(lo / w), "ok_hi": list(hi / w),
                "failed_rate": list(np.array(failed) / w), "shares": keep, "utilization": util,
                "bound": None if chosen is None else {"kind": chosen.kind, "name": chosen.name}}
