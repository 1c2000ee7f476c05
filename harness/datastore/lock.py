"""swamp's datastore lock, plus a fencing token.

The algorithm is the backend-neutral part: a fresh random nonce per grant,
retry with jittered backoff, give up after the wait limit with swamp's exact
message, heartbeat every TTL/3 conditioned on the nonce, release conditioned on
the nonce. Each backend's ``LockStore`` does the conditional writes. Beyond
swamp, every grant carries a monotonically increasing fencing token, and the
commit's writes are conditioned on the grant, so a holder that paused past its
TTL cannot commit over a newer holder.

Every grant, renewal and release is reported to an optional ``recorder`` (a
callable taking one JSON-serialisable dict): the history a safety checker reads.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from harness.core.aws_errors import is_transient, outcome_unknown
from harness.core.clock import Clock, now_ms
from harness.core.work import Work, recording
from harness.datastore.errors import ConfigError, LockLostError, LockTimeoutError
from harness.datastore.paths import check_lock_key
from harness.datastore.variant import Backoff, values

Recorder = Callable[[dict], None]


# How a waiter backs off between attempts (docs/swamp-today.md names each source). "harness": the seed's,
# retry x 2^n capped at retry_cap, 50-100 % jitter. swamp's extensions at their newest fetched commits:
# "swamp-dynamodb", min(retry x 1.5^min(n, 4), 2 x retry) x U(0.5, 1) (lock.ts, createDynamoLock, webframp a929b7a);
# "swamp-s3", a fixed retry (s3_lock.ts, S3Lock.acquire, DEFAULT_RETRY_INTERVAL_MS 1 s, swamp-club 0e41e5f).
# "s3-doubling": U(retry, min(8 x retry, retry x 2^n)), what a stored copy of s3_lock.ts read (the search tool's,
# from a "2026.09 manifest" in no branch of swamp-club/swamp-extensions): kept only as this named option.
BACKOFFS = values(Backoff)
S3_BACKOFF_CAP = 8.0  # s3-doubling: maxRetryInterval 8 s over a 1 s retryInterval (scaled with retry)


def swamp_backoff(backend: str) -> str:
    """The backoff of swamp's extension for ``backend`` ("swamp" in a scenario picks it by backend)."""
    return "swamp-s3" if backend == "s3" else "swamp-dynamodb"


@dataclass(frozen=True)
class LockConfig:
    ttl_s: float = 30.0
    wait_s: float = 60.0
    retry_s: float = 1.0
    retry_cap_s: float = 2.0
    backoff: str = "harness"

    def __post_init__(self) -> None:
        if self.ttl_s <= 0 or self.wait_s <= 0 or self.retry_s <= 0:
            raise ConfigError("lock ttl, wait and retry must be positive durations")
        if self.wait_s < self.retry_s:
            raise ConfigError(f"lock wait ({self.wait_s}s) is shorter than its retry ({self.retry_s}s)")
        if self.backoff not in BACKOFFS or self.backoff == Backoff.SWAMP:
            raise ConfigError(f"unknown lock backoff {self.backoff!r}: choose one of {', '.join(BACKOFFS[:-1])}")


@dataclass
class LockGrant:
    key: str
    nonce: str
    fence: int
    expires_at_ms: int
    wait_ms: float = 0.0
    attempts: int = 1
    lost: bool = field(default=False)
    holder: str = ""
    granted_at_ms: int = 0


class LockStore(Protocol):
    """Conditional writes for one backend; every call records its requests in ``work``."""

    def try_acquire(self, key: str, record: dict, now_ms: int, work: Work) -> int | None:
        """Take the lock if free or expired; return the new fencing token, or None if held."""

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        """Extend the grant if ``nonce`` still holds it."""

    def release(self, key: str, nonce: str, work: Work) -> bool:
        """Give the lock up if ``nonce`` still holds it (the fencing counter survives)."""

    def inspect(self, key: str, now_ms: int, work: Work) -> dict | None:
        """The live holder's record, or None when the lock is free or expired (one read; takes nothing)."""


def backoff_delay(attempt: int, cfg: LockConfig, rng: random.Random) -> float:
    """Seconds before retry ``attempt`` (0 = after the first refusal), by ``cfg.backoff`` (see ``BACKOFFS``)."""
    if cfg.backoff == "swamp-dynamodb":
        return min(cfg.retry_s * 1.5 ** min(attempt, 4), 2 * cfg.retry_s) * rng.uniform(0.5, 1.0)
    if cfg.backoff == "swamp-s3":
        return cfg.retry_s
    if cfg.backoff == "s3-doubling":
        cap = S3_BACKOFF_CAP * cfg.retry_s
        return rng.uniform(cfg.retry_s, max(cfg.retry_s, min(cap, cfg.retry_s * 2 ** attempt)))
    base = min(cfg.retry_cap_s, cfg.retry_s * (2 ** attempt))
    return base * rng.uniform(0.5, 1.0)


def _nothing(_: dict) -> None:
    return None


class Lock:
    """Acquires and holds one lock key for one holder."""

    def __init__(self, store: LockStore, key: str, clock: Clock, cfg: LockConfig,
                 holder: str = "harness", rng: random.Random | None = None,
                 recorder: Recorder | None = None) -> None:
        self.store = store
        self.key = check_lock_key(key)
        self.clock = clock
        self.cfg = cfg
        self.holder = holder
        self.rng = rng or random.Random()
        self.record_event = recorder or _nothing

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

    def acquire(self, work: Work, on_grant: Callable[[LockGrant, Work], None] | None = None) -> LockGrant:
        """Take the lock, retrying with backoff until ``wait_s``; swamp's timeout message after that.

        ``on_grant`` runs once the store has granted the lock and before the
        grant counts (its event is recorded after it): what a commit's seal is
        conditioned on can learn of the new holder first (S3's index head). If
        it fails, the lock is given back and the error raised.
        """
        start = self.clock.now()
        deadline = start + self.cfg.wait_s
        attempt = 0
        with recording(work):
            while True:
                nonce = uuid.uuid4().hex
                now = now_ms(self.clock)
                record = self._record(nonce, now)
                work.lock_attempts += 1
                fence = self.store.try_acquire(self.key, record, now, work)
                if fence is not None:
                    grant = LockGrant(self.key, nonce, fence, record["expiresAtMs"], attempts=attempt + 1,
                                      holder=self.holder)
                    if on_grant is not None:
                        try:
                            on_grant(grant, work)
                        except BaseException:
                            try:
                                self.store.release(self.key, nonce, work)
                            except Exception:  # noqa: BLE001 - the TTL frees it; the original error says more
                                pass
                            raise
                    grant.wait_ms, grant.granted_at_ms = (self.clock.now() - start) * 1000, now_ms(self.clock)
                    self.record_event({"type": "grant", "key": self.key, "holder": self.holder, "fence": fence,
                                       "nonce": nonce, "started_ms": int(start * 1000), "invoke_ms": now,
                                       "granted_ms": grant.granted_at_ms,
                                       "expires_ms": grant.expires_at_ms, "attempts": grant.attempts,
                                       "ttl_ms": int(self.cfg.ttl_s * 1000)})
                    return grant
                remaining = deadline - self.clock.now()
                if remaining <= 0:
                    self.record_event({"type": "lock_timeout", "key": self.key, "holder": self.holder,
                                       "invoke_ms": int(start * 1000), "end_ms": now_ms(self.clock),
                                       "attempts": attempt + 1})
                    raise LockTimeoutError(self.key, int(round(self.cfg.wait_s * 1000)))
                self.clock.sleep(min(remaining, backoff_delay(attempt, self.cfg, self.rng)))
                attempt += 1

    def heartbeat(self, grant: LockGrant, work: Work) -> None:
        """One renewal; a refusal (the nonce no longer holds the lock) marks the grant lost."""
        invoke = now_ms(self.clock)
        expires = invoke + int(self.cfg.ttl_s * 1000)
        event = {"type": "renew", "key": self.key, "holder": self.holder, "fence": grant.fence,
                 "nonce": grant.nonce, "invoke_ms": invoke, "expires_ms": expires}
        try:
            with recording(work):
                ok = self.store.renew(self.key, grant.nonce, expires, work)
        except Exception as e:
            self.record_event({**event, "ok": False, "error": f"{type(e).__name__}: {e}"[:300],
                               "complete_ms": now_ms(self.clock)})
            raise
        self.record_event({**event, "ok": ok, "complete_ms": now_ms(self.clock)})
        if not ok:
            self.mark_lost(grant, "another holder took it")
            raise LockLostError(f"lost lock {self.key}: another holder took it")
        grant.expires_at_ms = expires

    def mark_lost(self, grant: LockGrant, why: str) -> None:
        if not grant.lost:
            grant.lost = True
            self.record_event({"type": "lost", "key": self.key, "holder": self.holder, "fence": grant.fence,
                               "nonce": grant.nonce, "at_ms": now_ms(self.clock), "why": why})

    def release(self, grant: LockGrant, work: Work) -> bool:
        """Release the grant. A release whose outcome is unknown (an attempt's answer lost, then a 5xx or a
        throttle: issue 55) may have landed: it is recorded too, as a release from then on (the lock may be
        free), so the checker does not count the holder's next grant as two leases at once."""
        invoke = now_ms(self.clock)
        event = {"type": "release", "key": self.key, "holder": self.holder, "fence": grant.fence,
                 "nonce": grant.nonce, "invoke_ms": invoke}
        try:
            with recording(work):
                ok = self.store.release(self.key, grant.nonce, work)
        except Exception as e:
            if outcome_unknown(e):
                self.record_event({**event, "ok": False, "indeterminate": True, "error": type(e).__name__})
            raise
        self.record_event({**event, "ok": ok})
        return ok


class Heartbeat:
    """Renews a grant every TTL/3 on a background thread (a greenlet under Locust), on the lock's clock.

    A transient error (throttle, 5xx, timeout) is retried with backoff while the
    grant is still valid; a refusal, or running out of lease while retrying,
    marks the grant lost (the commit reads ``grant.lost``). ``suspended()``
    stops renewals for a stop-the-world pause of the holder: a holder that is
    frozen does not renew either.
    """

    def __init__(self, lock: Lock, grant: LockGrant, work: Work) -> None:
        self.lock, self.grant, self.work = lock, grant, work
        self.interval_s = lock.cfg.ttl_s / 3
        self.slice_s = self.interval_s / 4  # how often a stop or a resume is noticed
        self.retry_s = min(self.interval_s / 4, lock.cfg.retry_s)
        self._stop = threading.Event()
        self._suspended = 0
        self._guard = threading.Lock()
        self.next_due = lock.clock.now() + self.interval_s
        self._failures = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"heartbeat:{lock.key}")

    def tick(self) -> bool:
        """Do what is due at the clock's now; False once there is nothing more to do (stopped or lost)."""
        if self._stop.is_set() or self.grant.lost:
            return False
        now = self.lock.clock.now()
        if self._suspended or now < self.next_due:
            return True
        try:
            self.lock.heartbeat(self.grant, self.work)
        except LockLostError:
            return False
        except Exception as e:  # noqa: BLE001 - classified right here
            self._failures += 1
            expires_s = self.grant.expires_at_ms / 1000
            if self._stop.is_set():
                return False
            if not is_transient(e):
                self.lock.mark_lost(self.grant, f"renewal failed: {type(e).__name__}: {e}"[:300])
                return False
            if now + self.retry_s >= expires_s:
                self.lock.mark_lost(self.grant, f"lease ran out after {self._failures} failed renewals")
                return False
            self.next_due = now + min(self.retry_s * 2 ** (self._failures - 1), (expires_s - now) / 2)
            return True
        self._failures = 0
        self.next_due = now + self.interval_s
        return True

    def _run(self) -> None:
        clock = self.lock.clock
        while self.tick():
            clock.sleep(max(0.0, min(self.next_due - clock.now(), self.slice_s)) or self.slice_s)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """No renewals inside the block (a stop-the-world pause of the holder)."""
        with self._guard:
            self._suspended += 1
        try:
            yield
        finally:
            with self._guard:
                self._suspended -= 1

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # Not joined: a renewal still in flight after this is refused by the release (conditioned on the nonce).
        self._stop.set()
