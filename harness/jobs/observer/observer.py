"""The observer's loop: each group of reads on its own cadence, every sample a row of ``observed.csv``.

``RUN_DIR/observed.csv`` has the columns ``time,what,key,value``: ``time`` in
seconds since the epoch (when the group's reads came back), ``what`` the
measure, ``key`` what it is of (a GSI key, a namespace, a lock key, an
object), ``value`` a number (a lock's holder and a gap's reason are text).
What the datastore holds:

- ``gsi_items`` (GSI key), ``index_entries`` (namespace, "" for the shared datastore), ``partitions`` and
  ``registry_bytes`` (registry item), ``export_bytes`` (export path), ``lock_held`` / ``lock_holder``
  (lock key); S3: ``index_seq``, ``shards``, ``index_bytes`` (head), ``shard_entries`` and
  ``shard_bytes`` (shard);

and what reading it cost (the observer's own, apart from the fleet's):

- ``observer_budget`` (unit: ``read units`` or ``requests``; value per second) and ``observer_capacity``
  (key: where the figure came from; value: the capacity it is a share of, empty for a fixed rate),
  once at the start;
- after each group's sample: ``observer_requests``, ``observer_read_units`` and ``observer_bytes`` (the
  group's totals so far), ``observer_interval_s`` (how often the group is read now) and
  ``observer_read_s`` (how long the sample took);
- ``gap`` (group; value: the error code): a sample that failed; the series has a hole there. The first
  failure of each kind is one line in the log; a failed read never fails the run.

One loop reads the groups in turn, each request paced by the budget: while a costly group's pages wait
for their share, the groups behind it wait too (``observer_read_s`` says how long each sample took).
"""

from __future__ import annotations

import csv
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.core.aws_errors import error_code, is_throttle
from harness.core.clock import Clock
from harness.jobs.observer.budget import Allowance, Pacer, intervals
from harness.jobs.observer.reads import Meter, Obs, Sender

OBSERVED_CSV = "observed.csv"
COLUMNS = ("time", "what", "key", "value")
FINAL_S = 10.0  # the last sample, when the load has stopped, gets at most this long
REFRESH_S = 60.0  # DescribeTable again this often (a capacity change moves the budget)

log = logging.getLogger("harness")


class Reader(Protocol):
    def groups(self) -> list[str]: ...

    def read(self, group: str) -> list[Obs]: ...


class ObservedLog:
    """``observed.csv``, appended to and flushed after every sample (a crash loses at most the one in flight)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / OBSERVED_CSV
        new = not self.path.exists()
        self._f = self.path.open("a", newline="")
        self._w = csv.writer(self._f)
        if new:
            self._w.writerow(COLUMNS)
        self._lock = threading.Lock()

    def write(self, t: float, rows: list[Obs]) -> None:
        with self._lock:
            if self._f.closed:
                return
            self._w.writerows([(f"{t:.3f}", what, key, _value(v)) for what, key, v in rows])
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


def _value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


class Observer:
    """Samples ``reader``'s groups: each when due, at most as fast as ``pacer`` allows, into ``out``."""

    def __init__(self, reader: Reader, sender: Sender, out: ObservedLog, every_s: float, clock: Clock, *,
                 allowance: Callable[[], Allowance] | None = None, say: Callable[[str], None] | None = None,
                 refresh_s: float = REFRESH_S, pause: Callable[[float], None] | None = None) -> None:
        self.reader, self.send, self.out, self.every_s, self.clock = reader, sender, out, every_s, clock
        self.pacer: Pacer = sender.pacer
        self.meter: Meter = sender.meter
        self.allowance, self.refresh_s = allowance, refresh_s
        self.say = say or (lambda line: log.warning("%s", line))
        self.groups = reader.groups()
        now = clock.now()
        self.due = dict.fromkeys(self.groups, now)
        self.interval = dict.fromkeys(self.groups, every_s)
        self.backoff = dict.fromkeys(self.groups, 1.0)  # doubles after a throttle, until a sample succeeds
        self.cost: dict[str, float] = {}
        self.samples = dict.fromkeys(self.groups, 0)
        self.gaps = dict.fromkeys(self.groups, 0)
        self._said: set[tuple[str, str]] = set()
        self._refreshed = now
        self._stop = threading.Event()
        self._final = threading.Event()
        self._done = threading.Event()
        self._wake = threading.Event()
        # between samples: woken early by finish() or stop(); a FakeClock's sleep in tests
        self.pause = pause or (lambda s: self._wake.wait(min(s, 1.0)))
        a = self.pacer.allow
        out.write(now, [("observer_budget", a.unit, a.rate), ("observer_capacity", a.source, a.capacity)])

    # ---- one group ------------------------------------------------------------------------
    def sample(self, group: str, deadline: float | None = None) -> bool:
        """Read one group now; True if it was read (a failure is a gap, said once per kind)."""
        before = self.meter.cost(group, self.pacer.allow.unit)
        t0 = self.clock.now()
        self.send.group, self.send.deadline = group, deadline
        try:
            rows = self.reader.read(group)
        except Exception as e:  # noqa: BLE001 - a failed read is a gap in the series, never a failed run
            self._gap(group, e)
            return False
        finally:
            self.send.deadline = None
        t = self.clock.now()
        self.samples[group] += 1
        self.cost[group] = self.meter.cost(group, self.pacer.allow.unit) - before
        self.backoff[group] = 1.0
        self._plan()
        self.out.write(t, rows + self._costs(group, t - t0))
        return True

    def _gap(self, group: str, e: BaseException) -> None:
        code = error_code(e) or type(e).__name__
        self.gaps[group] += 1
        if is_throttle(e):
            self.backoff[group] = min(self.backoff[group] * 2, 32.0)
            self._plan()
        self.out.write(self.clock.now(), [("gap", group, code)])
        if (group, code) not in self._said:
            self._said.add((group, code))
            self.say(f"harness: observer: could not read {group} ({code}: {str(e)[:200]}); its series has a gap "
                     "there (said once; the run goes on)")

    def _costs(self, group: str, took: float) -> list[Obs]:
        m = self.meter
        return [("observer_requests", group, m.requests[group]), ("observer_read_units", group, m.read_units[group]),
                ("observer_bytes", group, m.bytes_received[group]),
                ("observer_interval_s", group, self.interval[group]), ("observer_read_s", group, round(took, 3))]

    def _plan(self) -> None:
        """Each group's interval from its last cost: stretched when a round would outspend the budget."""
        costs = {g: self.cost.get(g, 0.0) for g in self.groups}
        planned = intervals(costs, self.pacer.allow.rate, self.every_s)
        self.interval = {g: planned[g] * self.backoff[g] for g in self.groups}

    def _refresh(self) -> None:
        if self.allowance is None or self.clock.now() - self._refreshed < self.refresh_s:
            return
        self._refreshed = self.clock.now()
        self.send.group = "describe"
        try:
            a = self.allowance()
        except Exception:  # noqa: BLE001 - keep the last known budget through a failed describe
            return
        if a.rate != self.pacer.allow.rate or a.unit != self.pacer.allow.unit:
            self.pacer.set_rate(a)
            self.out.write(self.clock.now(), [("observer_budget", a.unit, a.rate),
                                              ("observer_capacity", a.source, a.capacity)])
            self._plan()

    # ---- the loop -------------------------------------------------------------------------
    def step(self) -> list[str]:
        """Read every group that is due now (in the order they are due); the groups read."""
        self._refresh()
        now = self.clock.now()
        done = []
        for g in sorted((g for g in self.groups if self.due[g] <= now), key=lambda g: self.due[g]):
            if self._stop.is_set() or self._final.is_set():
                break
            self.sample(g)
            self.due[g] = max(self.due[g] + self.interval[g], self.clock.now())
            done.append(g)
        return done

    def run(self) -> None:
        """Sample until told to finish (then once more, every group) or to stop."""
        try:
            while not (self._stop.is_set() or self._final.is_set()):
                self.step()
                wait = min(self.due.values()) - self.clock.now()
                if wait > 0:
                    self.pause(wait)
            if self._final.is_set() and not self._stop.is_set():
                deadline = self.clock.now() + FINAL_S
                for g in self.groups:
                    if self.clock.now() >= deadline:
                        self.say(f"harness: observer: the last sample ran out of time before {g}")
                        break
                    self.sample(g, deadline)
        finally:
            self._done.set()

    def finish(self) -> None:
        """The load has stopped: one last sample of every group, then the loop ends."""
        self._final.set()
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def close(self) -> None:
        self.pacer.close()
        self.out.close()

    def totals(self) -> dict[str, Any]:
        """What the observer did and cost, for the log line at the end."""
        return {"samples": dict(self.samples), "gaps": dict(self.gaps),
                "requests": sum(self.meter.requests.values()), "read_units": sum(self.meter.read_units.values()),
                "intervals": dict(self.interval), "budget": self.pacer.allow.as_dict()}
