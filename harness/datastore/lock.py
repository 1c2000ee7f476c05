"""swamp's datastore lock, plus a fencing token.

The algorithm is the backend-neutral part: a fresh random nonce per grant,
retry with jittered backoff, give up after the wait limit with swamp's exact
message, heartbeat every TTL/3 conditioned on the nonce, release conditioned on
the nonce. Each backend's ``LockStore`` does the conditional writes. Beyond
swamp, every grant carries a monotonically increasing fencing token that the
commit step's writes are conditioned on, so a holder that paused past its TTL
cannot commit.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from harness.clock import Clock, now_ms
from harness.datastore.errors import ConfigError, LockLostError, LockTimeoutError
from harness.datastore.paths import check_lock_key
from harness.datastore.work import Work


@dataclass(frozen=True)
class LockConfig:
    ttl_s: float = 30.0
    wait_s: float = 60.0
    retry_s: float = 1.0
    retry_cap_s: float = 2.0

    def __post_init__(self) -> None:
        if self.ttl_s <= 0 or self.wait_s <= 0 or self.retry_s <= 0:
            raise ConfigError("lock ttl, wait and retry must be positive durations")
        if self.wait_s < self.retry_s:
            raise ConfigError(f"lock wait ({self.wait_s}s) is shorter than its retry ({self.retry_s}s)")


@dataclass
class LockGrant:
    key: str
    nonce: str
    fence: int
    expires_at_ms: int
    wait_ms: float = 0.0
    attempts: int = 1
    lost: bool = field(default=False)


class LockStore(Protocol):
    """Conditional writes for one backend; every call records its requests in ``work``."""

    def try_acquire(self, key: str, record: dict, now_ms: int, work: Work) -> int | None:
        """Take the lock if free or expired; return the new fencing token, or None if held."""

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        """Extend the grant if ``nonce`` still holds it."""

    def release(self, key: str, nonce: str, work: Work) -> bool:
        """Delete the lock if ``nonce`` still holds it."""


def backoff_delay(attempt: int, cfg: LockConfig, rng: random.Random) -> float:
    """swamp's retry: base x 2^attempt capped, with 50-100 % jitter."""
    base = min(cfg.retry_cap_s, cfg.retry_s * (2 ** attempt))
    return base * rng.uniform(0.5, 1.0)


class Lock:
    """Acquires and holds one lock key for one holder."""

    def __init__(self, store: LockStore, key: str, clock: Clock, cfg: LockConfig,
                 holder: str = "harness", rng: random.Random | None = None) -> None:
        self.store = store
        self.key = check_lock_key(key)
        self.clock = clock
        self.cfg = cfg
        self.holder = holder
        self.rng = rng or random.Random()

    def _record(self, nonce: str, now: int) -> dict:
        ttl_ms = int(self.cfg.ttl_s * 1000)
        return {
            "holder": self.holder,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "acquiredAt": now,
            "ttlMs": ttl_ms,
            "nonce": nonce,
            "expiresAtMs": now + ttl_ms,
        }

    def acquire(self, work: Work) -> LockGrant:
        start = self.clock.now()
        deadline = start + self.cfg.wait_s
        attempt = 0
        while True:
            nonce = uuid.uuid4().hex
            now = now_ms(self.clock)
            record = self._record(nonce, now)
            work.lock_attempts += 1
            fence = self.store.try_acquire(self.key, record, now, work)
            if fence is not None:
                return LockGrant(self.key, nonce, fence, record["expiresAtMs"],
                                 wait_ms=(self.clock.now() - start) * 1000, attempts=attempt + 1)
            remaining = deadline - self.clock.now()
            if remaining <= 0:
                raise LockTimeoutError(self.key, int(round(self.cfg.wait_s * 1000)))
            self.clock.sleep(min(remaining, backoff_delay(attempt, self.cfg, self.rng)))
            attempt += 1

    def heartbeat(self, grant: LockGrant, work: Work) -> None:
        expires = now_ms(self.clock) + int(self.cfg.ttl_s * 1000)
        if not self.store.renew(self.key, grant.nonce, expires, work):
            grant.lost = True
            raise LockLostError(f"lost lock {self.key}: another holder took it")
        grant.expires_at_ms = expires

    def release(self, grant: LockGrant, work: Work) -> bool:
        return self.store.release(self.key, grant.nonce, work)


class Heartbeat:
    """Renews a grant every TTL/3 on a background thread (a greenlet under Locust)."""

    def __init__(self, lock: Lock, grant: LockGrant, work: Work) -> None:
        self.lock, self.grant, self.work = lock, grant, work
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"heartbeat:{lock.key}")

    def _run(self) -> None:
        interval = self.lock.cfg.ttl_s / 3
        while not self._stop.wait(interval):
            try:
                self.lock.heartbeat(self.grant, self.work)
            except Exception:  # lost, or a transient error: the commit's fence check decides
                return

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
