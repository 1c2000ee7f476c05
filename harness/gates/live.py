"""The early stop: a test's ``abort = true`` thresholds, judged while it runs from the rows the master collects.

The Locust master (or the single process) hands every row it records to ``LiveGate.add`` (beside the
harness tab's ``Live``); every window the session asks ``judge``, and the first threshold that is
*credibly* breached stops the test through the session's own stop (``Session.stop_test``: the run time's
path, so every worker's rows are collected, ``run.json`` is written and ``harness run`` builds the report),
with ``run.json`` ``aborted`` saying which threshold, when and its line; ``harness run`` then exits 3.

A threshold is looked at again every window, so each look uses a 99 % interval (the end of the run's
judgement a 95 % one): repeated looks at a test sitting on its limit do not stop it by chance. A look needs
``MIN_OBSERVATIONS`` behind it, and a rate is counted from when every user has started (the plan's
users over its spawn rate), so a ramp-up does not read as a rate that fell.

Memory: one float a row per column the abort thresholds read, beside the success flag, error kind and end.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from harness.gates.expr import Threshold
from harness.gates.judge import LockShare, Observed, judge
from harness.metrics.lockuse import mean_interval

Z99 = 2.5758293035489004  # two-sided 99 %: each live look
MIN_OBSERVATIONS = 20


class LiveGate:
    """One test's abort thresholds and the arrays they are judged on."""

    def __init__(self, thresholds: list[Threshold], started_at: float, ready_s: float = 0.0,
                 lag_s: float = 0.0, undecided: str = "pass") -> None:
        self.thresholds = [t for t in thresholds if t.abort]
        self.started_at, self.ready_s, self.lag_s, self.undecided = started_at, ready_s, lag_s, undecided
        self.columns = sorted({t.column for t in self.thresholds if t.column and t.stat != "utilization"})
        self.ok = array("b")
        self.t_end = array("d")
        self.kinds: list[str | None] = []
        self.values = {c: array("d") for c in self.columns}

    def add(self, rows: list[dict]) -> None:
        """Rows as they arrive (any order): what the thresholds read, nothing else."""
        for r in rows:
            self.ok.append(bool(r["ok"]))
            self.t_end.append(float(r["ts_end"]) - self.started_at)
            self.kinds.append(r.get("error_kind"))
            for c, v in self.values.items():
                x = r.get(c)
                if x is None and c == "wait_ms":  # a closed fleet's wait is its total (harness/report/run/wait.py)
                    x = r.get("total_ms")
                v.append(float("nan") if x is None else float(x))

    def observed(self, now: float, live: Any = None, locks: bool = False) -> Observed:
        """The rows so far, as the judge reads them; the span ends ``lag_s`` ago (a master's rows come late)."""
        seconds = max(0.0, now - self.lag_s - self.started_at)
        # copies, not views: a view would stop the arrays growing while an Observed is alive
        cols = {c: np.array(v, dtype=float) for c, v in self.values.items()}
        n = len(self.ok)
        obs = Observed(seconds, np.array(self.ok, dtype=bool), np.array(self.kinds, dtype=object),
                       np.array(self.t_end, dtype=float), lambda c: cols.get(c, np.full(n, np.nan)))
        if locks and live is not None:
            obs.locks = lock_shares(live, self.started_at, self.started_at + seconds)
        return obs

    def judge(self, now: float, live: Any = None) -> dict | None:
        """The first abort threshold credibly breached now (run.json's ``aborted``), or None."""
        if len(self.ok) < MIN_OBSERVATIONS:
            return None
        obs = self.observed(now, live, locks=any(t.stat == "utilization" for t in self.thresholds))
        for t in self.thresholds:
            if t.stat == "rate" and not self._rate_ready(t, obs.seconds):
                continue
            j = judge(t, _from_ready(obs, self.ready_s) if t.stat == "rate" else obs, self.undecided, z=Z99)
            if j.breached:
                return {"check": t.text, "line": j.line, "at_s": round(obs.seconds, 1), "value": j.value,
                        "limit": j.limit, "interval": list(j.interval) if j.interval else None}
        return None

    def _rate_ready(self, t: Threshold, seconds: float) -> bool:
        """A rate is judged once its window lies wholly after every user has started."""
        return seconds - self.ready_s >= (t.last_s or 0.0) and seconds > self.ready_s


def _from_ready(obs: Observed, ready_s: float) -> Observed:
    """The rows after the ramp-up, the span from there (a rate over the whole test is one over the full fleet)."""
    keep = obs.t_end > ready_s
    return Observed(obs.seconds - ready_s, obs.ok[keep], obs.error_kind[keep], obs.t_end[keep] - ready_s,
                    lambda c: obs.column(c)[keep], obs.locks)


def lock_shares(live: Any, a: float, b: float) -> list[LockShare]:
    """Each lock key's busy share between epoch seconds a and b, from the harness tab's lock timelines
    (``Live.lock_busy_shares``: per 2 s bin), with the bins' mean interval."""
    out = []
    for key, (busy, holders) in live.lock_busy_shares(a, b).items():
        busy = np.asarray(busy, dtype=float)
        if len(busy):
            out.append(LockShare(key, float(busy.mean()), mean_interval(busy, Z99), holders))
    return out


def live_gate(checks: Any, started_at: float, ready_s: float, lag_s: float) -> LiveGate | None:
    """A test's gate from its scenario's checks (None when no threshold aborts)."""
    from harness.gates.expr import parse

    specs = getattr(checks, "thresholds", ()) or ()
    ths = [parse(s.check, abort=s.abort) for s in specs if s.abort]
    if not ths:
        return None
    return LiveGate(ths, started_at, ready_s, lag_s, getattr(checks, "undecided", "pass") or "pass")
