"""Lock utilization from the history the datastore's own lock records (``harness/datastore/lock.py``).

The lock runs on a FakeClock against an in-memory store whose holder gives the lock up at a scripted
time, so every grant, release and timeout happens at a known instant and the busy and held shares are
known exactly; ``harness.metrics.lockuse`` must read them back from the events alone.
"""

from __future__ import annotations

import random

import pytest

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.errors import LockTimeoutError
from harness.datastore.lock import Lock, LockConfig
from harness.metrics.lockuse import intervals, timelines

T0 = 1_700_000_000.0
CFG = LockConfig(ttl_s=3.0, wait_s=1.0, retry_s=0.1, retry_cap_s=0.2)


class Store:
    """One lock item in memory; ``release_at`` frees the current holder when the clock passes it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.nonce, self.fence = clock, None, 0
        self.release_at: tuple[float, Lock, object] | None = None

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        if self.release_at and self.clock.now() >= self.release_at[0]:
            _, lock, grant = self.release_at
            self.release_at = None
            lock.release(grant, Work())  # the holder lets go (recorded at the clock's now)
        if self.nonce is not None:
            return None
        self.nonce, self.fence = record["nonce"], self.fence + 1
        return self.fence

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return nonce == self.nonce

    def release(self, key: str, nonce: str, work: Work) -> bool:
        ok = nonce == self.nonce
        self.nonce = None if ok else self.nonce
        return ok


def test_busy_held_waiters_and_timeouts_are_read_back_from_the_locks_own_events():
    clock = FakeClock(T0)
    store, events = Store(clock), []
    a, b, c = (Lock(store, "dynamodb://t", clock, CFG, holder=h, rng=random.Random(i), recorder=events.append)
               for i, h in enumerate("abc"))
    ga = a.acquire(Work())  # a holds from T0
    store.release_at = (T0 + 0.3, a, ga)  # ... until the first retry at or after 0.3 s
    clock.advance(0.01)
    gb = b.acquire(Work())  # b waits from T0 + 0.01, retrying, and is granted when a lets go
    t_b = clock.now()
    assert gb.attempts > 1 and t_b >= T0 + 0.3
    with pytest.raises(LockTimeoutError):
        c.acquire(Work())  # b never lets go while c waits: c gives up after 1 s
    t_c = clock.now()
    clock.advance(0.2)
    b.release(gb, Work())
    t_end = clock.now()
    clock.advance(1.0)  # a second of nothing: free, nobody waiting

    tl = timelines(events)["dynamodb://t"]
    use = tl.use(T0, T0 + 3.0)
    held = (t_b - T0) + (t_end - t_b)  # a until b's grant (the release happened inside b's attempt), then b
    assert use.held == pytest.approx(held / 3.0, abs=2e-3)
    assert use.busy == pytest.approx(held / 3.0, abs=2e-3)  # every wait happened while the lock was held
    assert use.grants == 2 and use.timeouts == 1 and use.holders == 2 and use.gap_share == pytest.approx(0, abs=1e-3)
    waited = (t_b - (T0 + 0.01)) + (t_c - t_b)
    assert use.waiters == pytest.approx(waited / 3.0, abs=2e-3)
    assert use.mean_hold_ms == pytest.approx(held / 2 * 1000, abs=2)
    # the last second: idle
    idle = tl.use(t_end, t_end + 1.0)
    assert idle.busy == idle.held == 0 and idle.grants == 0


def test_a_grant_never_released_is_held_until_its_lease_the_next_grant_or_the_end():
    ev = [{"type": "grant", "key": "k", "nonce": "a", "holder": "x", "started_ms": 0, "granted_ms": 1000,
           "expires_ms": 4000},
          {"type": "renew", "key": "k", "nonce": "a", "ok": True, "invoke_ms": 2000, "expires_ms": 5000},
          {"type": "grant", "key": "k", "nonce": "b", "holder": "y", "started_ms": 4500, "granted_ms": 6000,
           "expires_ms": 9000}]
    iv = intervals(ev, end_s=7.5)["k"]
    assert iv.held.tolist() == [[1.0, 5.0], [6.0, 7.5]]  # a: its renewed lease; b: the run's end
    assert iv.waits.tolist() == [[0.0, 1.0], [4.5, 6.0]]
    tl = timelines(ev, end_s=7.5)["k"]
    use = tl.use(0.0, 7.5)
    assert use.held == pytest.approx(5.5 / 7.5) and use.busy == 1.0  # someone held or wanted it throughout
    assert use.gap_ms == (pytest.approx(1000.0), pytest.approx(1000.0)) and use.gaps == 2  # 0-1 s and 5-6 s


def test_busy_share_per_window_and_events_of_other_kinds_are_ignored():
    ev = [{"type": "commit", "key": "k"}, {"type": "grant", "key": "k", "nonce": "a", "holder": "x",
                                          "started_ms": 0, "granted_ms": 0, "expires_ms": 9000},
          {"type": "release", "key": "k", "nonce": "a", "invoke_ms": 1500}]
    busy, held = timelines(ev)["k"].busy_share([0.0, 1.0, 2.0, 3.0])
    assert busy.tolist() == held.tolist() == [1.0, 0.5, 0.0]
