"""The job engine: dispatch items under the ceiling, the AIMD limits and the shared budget.

A job is a numbered sequence of items (``ItemSource``); each item is one paced
unit of work (a conditional PutItem, a batch of content chunks, a commit of
index entries) with a cost known up front (its write units, estimated from the
data). Before an item goes out it needs tokens from the job's own AIMD-paced
bucket and from the table's shared budget, and a free slot under the in-flight
limit. Throttles come back as errors (the engine's clients do not retry: it
does), halve the limits, and put the item back after a jittered wait.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.aws.fidelity.buckets import TokenBucket
from harness.core.aws_errors import error_code, is_throttle
from harness.core.clock import Clock, SystemClock
from harness.core.virtual_time import SystemThreads, Threads
from harness.core.work import Work
from harness.jobs.pacing.aimd import AIMD, backoff
from harness.jobs.pacing.budget import BUDGETS, Budgets
from harness.jobs.pacing.ceiling import CeilingWatcher
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.policy import FailurePolicy, Verdict

JOURNAL_EVERY_S = 0.25


class ItemSource(Protocol):
    """A job's items: numbered, regenerable from the job's parameters (so a resume rebuilds them)."""

    total: int

    def cost(self, idx: int) -> float:
        """Write units the item will take (an estimate; the real units are charged after)."""

    def run(self, idx: int, work: Work) -> None:
        """Do the item. Idempotent: a second run of an item that already landed must not duplicate it."""


@dataclass
class Progress:
    done: int
    failed: int
    total: int
    throttled: int
    rate: float  # units/s over the last second
    ceiling: float
    limit: float  # the AIMD rate right now
    in_flight: int
    state: str


class Job:
    def __init__(self, job_id: str, source: ItemSource, journal: Journal, watcher: CeilingWatcher,
                 budget_key: tuple, *, clock: Clock | None = None, budgets: Budgets = BUDGETS,
                 share: float = 1.0, period_s: float = 1.0, max_concurrency: int = 32,
                 on_progress: Callable[[Progress], None] | None = None, rng: random.Random | None = None,
                 threads: Threads | None = None) -> None:
        self.id, self.source, self.journal, self.watcher = job_id, source, journal, watcher
        # Time and concurrency come in together: tests run the engine on a VirtualClock as both.
        self.clock = clock or SystemClock()
        self.threads = threads or SystemThreads()
        self.share = share
        self.rng = rng or random.Random()
        self.aimd = AIMD(ceiling=watcher.current() * share, period_s=period_s, max_concurrency=max_concurrency)
        self.local = TokenBucket(self.aimd.rate, self.clock, burst_s=1.0)
        self.budget = budgets.get(budget_key, self.clock)
        self.budget.set(job_id, self.aimd.ceiling)
        self.policy = FailurePolicy()
        self.on_progress = on_progress
        self._lock = self.threads.condition()
        self._in_flight = 0
        self._retrying = 0  # throttled items waiting out their backoff before going back in the queue
        self._results: list[tuple[int, str, str | None]] = []
        self._verdict: Verdict | None = None
        self._stop_reason: str | None = None
        self.done = self.failed = self.throttled = 0
        self.units_log: deque[tuple[float, float]] = deque()
        self.requests = 0

    # ---- control -------------------------------------------------------------------
    def request_pause(self, reason: str) -> None:
        """Ctrl-C or quit: stop dispatching, let in-flight items finish, keep the place."""
        with self._lock:
            self._stop_reason = reason
            self._lock.notify_all()

    def _units_rate(self) -> float:
        """Units done in the last second. Read from a copy (one C call, so a worker thread's append cannot land
        mid-iteration: iterating the deque itself raced them, "deque mutated during iteration"); only the
        appender, under the lock, drops old entries."""
        now = self.clock.now()
        return sum(u for t, u in self.units_log.copy() if t >= now - 1.0)

    def _progress(self, state: str) -> Progress:
        return Progress(self.done, self.failed, self.source.total, self.throttled, self._units_rate(),
                        self.aimd.ceiling, self.aimd.rate, self._in_flight, state)

    def _acquire(self, units: float) -> None:
        """Wait for tokens in the job's own bucket and in the table's shared budget."""
        for bucket in (self.local, self.budget.bucket):
            while True:
                wait = bucket.wait_time(units)
                if wait <= 0:
                    break
                self.clock.sleep(min(wait, 0.25))

    # ---- one item --------------------------------------------------------------------
    def _run_item(self, idx: int, retry: int, retries: deque) -> None:
        work = Work()
        t0 = self.clock.now()
        error: BaseException | None = None
        try:
            self.source.run(idx, work)
        except Exception as e:  # noqa: BLE001 - classified below
            error = e
        latency_ms = (self.clock.now() - t0) * 1000
        code = error_code(error) or None
        with self._lock:
            self._in_flight -= 1
            self.requests += work.total_requests
            if error is not None and is_throttle(error):
                self.throttled += 1
                self.aimd.on_throttle(self.clock.now())
                self._lock.notify_all()
                self._retrying += 1
                delay = backoff(retry, self.rng)
                self.threads.start(self._requeue, idx, retry + 1, retries, delay, name=f"{self.id}-retry-{idx}")
                return
            if error is None:
                self.done += 1
                self.aimd.on_success(latency_ms)
                now = self.clock.now()
                self.units_log.append((now, work.write_units or self.source.cost(idx)))
                while self.units_log[0][0] < now - 1.0:
                    self.units_log.popleft()
                self._results.append((idx, "ok", None))
            else:
                self.failed += 1
                self._results.append((idx, "failed", f"{code or type(error).__name__}: {error}"[:300]))
            verdict = self.policy.record(error is None, code or (type(error).__name__ if error else None))
            if verdict and self._verdict is None:
                self._verdict = verdict
            self._lock.notify_all()

    def _requeue(self, idx: int, retry: int, retries: deque, delay: float) -> None:
        self.clock.sleep(delay)
        with self._lock:
            retries.append((idx, retry))
            self._retrying -= 1
            self._lock.notify_all()

    # ---- the loop ----------------------------------------------------------------------
    def run(self) -> str:
        """Run to the end, a pause or a failure; returns the final state."""
        done_before = self.journal.done_indexes(self.id)
        self.done = len(done_before)
        # Lazily: a job of millions of items must not build its whole to-do list before its first write.
        fresh = (i for i in range(self.source.total) if i not in done_before)
        retries: deque[tuple[int, int]] = deque()  # throttled items back from their backoff
        exhausted = False
        self.journal.set_state(self.id, "running")
        last_flush = last_tick = self.clock.now()
        try:
            while True:
                item = None
                with self._lock:
                    if self._verdict or self._stop_reason:
                        if self._in_flight == 0:
                            break
                        self._lock.wait(0.05)
                    elif self._in_flight >= self.aimd.concurrency:
                        self._lock.wait(0.05)
                    elif retries:
                        item = retries.popleft()
                    elif not exhausted:
                        idx = next(fresh, None)
                        if idx is None:
                            exhausted = True
                        else:
                            item = (idx, 0)
                    elif self._in_flight == 0 and self._retrying == 0:
                        break
                    else:
                        self._lock.wait(0.05)
                if item is not None:
                    idx, retry = item
                    self._acquire(self.source.cost(idx))
                    with self._lock:
                        self._in_flight += 1
                    self.threads.start(self._run_item, idx, retry, retries, name=f"{self.id}-item-{idx}")
                now = self.clock.now()
                if now - last_tick >= self.aimd.period_s / 4:
                    last_tick = now
                    self._control(now)
                if now - last_flush >= JOURNAL_EVERY_S:
                    last_flush = now
                    self._flush("running")
        finally:
            state, reason = self._final_state(exhausted and not retries)
            self._flush(state)
            self.journal.set_state(self.id, state, reason)
            self.budget.leave(self.id)
        return state

    def _control(self, now: float) -> None:
        new_ceiling = self.watcher.current() * self.share
        if new_ceiling != self.aimd.ceiling:
            self.aimd.set_ceiling(new_ceiling)
            self.budget.set(self.id, new_ceiling)
        self.aimd.tick(now)
        self.local.set_rate(max(self.aimd.rate, 1e-3), burst_s=1.0)
        if self.on_progress:
            self.on_progress(self._progress("running"))

    def _final_state(self, all_dispatched: bool) -> tuple[str, str | None]:
        if self._verdict:
            return self._verdict.state, self._verdict.reason
        if self._stop_reason:
            return "paused", self._stop_reason
        return ("done", None) if all_dispatched else ("paused", "stopped")

    def _flush(self, state: str) -> None:
        with self._lock:
            results, self._results = self._results, []
        self.journal.record(self.id, results, {
            "done": self.done, "failed": self.failed, "throttled": self.throttled, "rate": self._units_rate(),
            "ceiling": self.aimd.ceiling})
        if self.on_progress and state != "running":
            self.on_progress(self._progress(state))

