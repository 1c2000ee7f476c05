"""The commit ids each grant has used (one ``Claims`` per DynamoDB backend, per process).

A grant's first commit uses the id its lock grant claimed (``items.claim_id``);
later commits under the same grant take fresh ids. Kept apart from the commits
so the backend's request surface (``port.py``) can name it.
"""

from __future__ import annotations

import threading
import uuid

from harness.datastore.backends.dynamodb.items import claim_id
from harness.datastore.lock import LockGrant


class Claims:
    """Which commit ids each grant has used, and which must stay pending (something of theirs may still land).

    One per backend (per process): the commits of one grant run one at a time,
    so a grant's sequence is never raced by its own commits.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._used: dict[str, int] = {}  # nonce -> commits started under it
        self._mutex: dict[str, threading.Lock] = {}
        self.keep: set[str] = set()  # ids the release must not drop

    def mutex(self, grant: LockGrant) -> threading.Lock:
        with self._guard:
            return self._mutex.setdefault(grant.nonce, threading.Lock())

    def next(self, grant: LockGrant) -> tuple[str, bool]:
        """(commit id, already claimed): the grant's own claim first, a fresh id after that."""
        with self._guard:
            n = self._used.get(grant.nonce, 0)
            self._used[grant.nonce] = n + 1
        return (claim_id(grant.nonce), True) if n == 0 else (uuid.uuid4().hex[:16], False)

    def forget(self, grant: LockGrant) -> None:
        with self._guard:
            self._used.pop(grant.nonce, None)
            self._mutex.pop(grant.nonce, None)
