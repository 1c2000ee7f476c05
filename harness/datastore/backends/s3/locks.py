"""The S3 lock object: the holder's record and its fencing counter, changed only by compare-and-swap.

``If-None-Match: *`` creates it, ``If-Match`` on its ETag changes it
afterwards, so a grant's fence is taken in the same atomic write as the lock
itself. Release writes a released record with ``If-Match`` (it cannot delete
the object: the counter must survive), so a stale holder can neither renew
nor release a lock someone else took over; the holder keeps the ETag of its
last write, so heartbeat and release are one request each.
"""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed
from harness.core.work import Work
from harness.datastore.backends.s3.objects import S3Objects


class S3LockStore:
    """The lock object: holder record plus fencing counter, changed only by compare-and-swap."""

    def __init__(self, objects: S3Objects) -> None:
        self.o = objects
        self._mine: dict[tuple[str, str], tuple[dict, str]] = {}  # (key, nonce) -> (record, ETag) we last wrote

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        held = self.o.get(key, work)
        if held is not None:
            current = json.loads(held[0])
            if current.get("nonce") and int(current.get("expiresAtMs", 0)) >= now:
                return None  # held and live
        fence = (int(json.loads(held[0]).get("fence", 0)) if held else 0) + 1
        body = {**record, "fence": fence}
        try:
            etag = self.o.put(key, json.dumps(body).encode(), work, if_match=held[1] if held else None,
                              if_none_match=held is None)
        except ClientError as e:
            if is_condition_failed(e):
                return None  # someone else took it first
            raise
        self._mine[(key, record["nonce"])] = (body, etag)
        return fence

    def _read_mine(self, key: str, nonce: str, work: Work) -> tuple[dict, str] | None:
        held = self.o.get(key, work)
        if held is None or json.loads(held[0]).get("nonce") != nonce:
            return None
        return json.loads(held[0]), held[1]

    def _swap(self, key: str, nonce: str, work: Work, release: bool, expires_at_ms: int = 0) -> bool:
        """Renew or release with ``If-Match`` on the ETag of our last write.

        If that ETag is stale, the object is read once: still ours (our own
        renewal raced this call) means retry on the fresh ETag; anyone else's
        means we lost it.
        """
        mine = self._mine.get((key, nonce)) or self._read_mine(key, nonce, work)
        for _ in range(2):
            if mine is None:
                break
            record, etag = mine
            if release:
                body = {"fence": record.get("fence", 0), "releasedBy": record.get("holder"), "expiresAtMs": 0}
            else:
                body = {**record, "expiresAtMs": expires_at_ms}
            try:
                new = self.o.put(key, json.dumps(body).encode(), work, if_match=etag)
            except ClientError as e:
                if not is_condition_failed(e):
                    raise
                mine = self._read_mine(key, nonce, work)
                continue
            if release:
                self._mine.pop((key, nonce), None)
            else:
                self._mine[(key, nonce)] = (body, new)
            return True
        self._mine.pop((key, nonce), None)
        return False

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._swap(key, nonce, work, release=False, expires_at_ms=expires_at_ms)

    def release(self, key: str, nonce: str, work: Work) -> bool:
        return self._swap(key, nonce, work, release=True)

    def inspect(self, key: str, now: int, work: Work) -> dict | None:
        """The live holder's record (one GET), or None when free, released or expired."""
        held = self.o.get(key, work)
        record = json.loads(held[0]) if held else {}
        return record if record.get("nonce") and int(record.get("expiresAtMs", 0)) >= now else None

    def holder(self, key: str, work: Work) -> dict:
        held = self.o.get(key, work)
        return json.loads(held[0]) if held else {}

