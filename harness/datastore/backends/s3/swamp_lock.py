"""swamp's S3 lock as its code reads, for runs that are swamp's own (``fencing = false``, swamp's bookkeeping).

``S3Lock`` (``datastore/s3/extensions/datastores/_lib/s3_lock.ts``, swamp-club/swamp-extensions 0e41e5f):

- *acquire*: a PutObject with ``If-None-Match: *`` of the holder's record
  (holder, hostname, pid, acquiredAt, ttlMs, nonce; 2-space JSON). Refused
  (412), a GET of the record and, when there is one, a HeadObject: a lock
  whose ``LastModified`` is older than the record's ``ttlMs`` is stale, so it
  is deleted (DeleteObject) and the PUT tried again after 200-500 ms;
  otherwise the waiter sleeps its fixed retry (``[lock] backoff = "swamp"``).
  A refusal costs 3 requests, the harness's own lock one GET.
- *heartbeat* (every TTL / 3): a GET (is the nonce still ours?) and an
  unconditional PUT of a fresh record: 2 requests.
- *release*: a GET and, if the nonce is still ours, a DeleteObject.
- *inspect*: one GET.

It keeps no fencing counter (the object is deleted on release), so a grant's
``fence`` here is its grant time in milliseconds: it orders grants in the
history and nothing checks it. Fenced runs take the harness's own lock object
(``locks.py``), whose counter survives release.
"""

from __future__ import annotations

import json
import random

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed
from harness.core.clock import Clock, iso, ms_of, now_ms
from harness.core.work import Work
from harness.datastore.backends.s3.objects import S3Objects

STEAL_SLEEP_S = (0.2, 0.5)  # STALE_STEAL_BACKOFF_MIN_MS / _MAX_MS: the sleep after deleting a stale lock


def lock_body(record: dict, acquired_ms: int) -> bytes:
    """swamp's ``buildLockInfo`` record, ``JSON.stringify(info, null, 2)``."""
    info = {"holder": record["holder"], "hostname": record["hostname"], "pid": record["pid"],
            "acquiredAt": iso(acquired_ms), "ttlMs": record["ttlMs"], "nonce": record["nonce"]}
    return json.dumps(info, indent=2).encode()


class SwampS3LockStore:
    """``S3Lock``'s requests on one bucket (the ``LockStore`` protocol of ``harness/datastore/lock.py``)."""

    def __init__(self, objects: S3Objects, clock: Clock, rng: random.Random | None = None) -> None:
        self.o, self.clock, self.rng = objects, clock, rng or random.Random()
        self._mine: dict[tuple[str, str], dict] = {}  # (key, nonce) -> the record we wrote (for the heartbeat)

    def _read(self, key: str, work: Work) -> dict | None:
        """swamp's ``readLock``: the record, or None (missing or unreadable)."""
        got = self.o.get(key, work)
        try:
            return json.loads(got[0]) if got else None
        except ValueError:
            return None

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        while True:
            now = now_ms(self.clock)
            try:
                self.o.put(key, lock_body(record, now), work, if_none_match=True)
            except ClientError as e:
                if not is_condition_failed(e):
                    raise
            else:
                self._mine[(key, record["nonce"])] = record
                return now
            existing = self._read(key, work)
            if existing is None:
                return None
            head = self.o.head(key, work)
            if head is None or "LastModified" not in head:
                return None
            age = now_ms(self.clock) - int(head["LastModified"].timestamp() * 1000)
            if age <= int(existing.get("ttlMs", 0)):
                return None  # held and live: the caller sleeps its retry
            try:
                self.o.delete_one(key, work)
            except ClientError:
                pass  # another process may have cleaned it up
            self.clock.sleep(self.rng.uniform(*STEAL_SLEEP_S))

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        current = self._read(key, work)
        record = self._mine.get((key, nonce))
        if current is None or current.get("nonce") != nonce or record is None:
            return False
        self.o.put(key, lock_body(record, expires_at_ms - int(record["ttlMs"])), work)
        return True

    def release(self, key: str, nonce: str, work: Work) -> bool:
        self._mine.pop((key, nonce), None)
        current = self._read(key, work)
        if current is None or current.get("nonce") != nonce:
            return False  # taken over meanwhile: swamp skips the delete
        self.o.delete_one(key, work)
        return True

    def inspect(self, key: str, now: int, work: Work) -> dict | None:
        """The live holder's record (one GET), or None when there is none or it outlived its TTL."""
        record = self._read(key, work)
        if not record or not record.get("nonce"):
            return None
        try:
            expires = ms_of(record["acquiredAt"]) + int(record.get("ttlMs", 0))
        except (KeyError, ValueError):
            return None
        return {**record, "expiresAtMs": expires} if expires >= now else None

    def holder(self, key: str, work: Work) -> dict:
        return self._read(key, work) or {}
