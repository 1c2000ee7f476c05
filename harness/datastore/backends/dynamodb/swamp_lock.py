"""swamp's DynamoDB lock as its code reads, for runs that are swamp's own (``fencing = false``, swamp's bookkeeping).

``createDynamoLock`` (``datastore/dynamodb/extensions/datastores/dynamodb_datastore/lock.ts``,
webframp/swamp-extensions a929b7a) on the item ``LOCK#<key>`` / ``LOCK``:

- *acquire*: a PutItem of the holder's record (holder, hostname, pid,
  acquiredAt, acquiredAtMs, ttlMs, expiresAtMs, nonce, ``ttl``) conditioned on
  ``attribute_not_exists(pk) OR expiresAtMs < :now``; refused, the waiter
  sleeps its backoff (``[lock] backoff = "swamp"``): one request a try;
- *heartbeat*: an UpdateItem of acquiredAt, acquiredAtMs, expiresAtMs and
  ``ttl`` conditioned on ``nonce = :nonce``;
- *release*: a DeleteItem conditioned on the nonce (the item goes);
- *inspect*: a GetItem, eventually consistent (no ``ConsistentRead``).

The harness's own lock item (``locks.py``) keeps a fencing counter, a commit
sequence and pending commit ids on the item, so it is updated, never deleted,
and read strongly consistently; swamp's keeps its sequence elsewhere
(``SYNCSTATE#global`` / ``SEQ``), which is why only runs with swamp's
bookkeeping take this store. A grant's ``fence`` is its grant time in ms (it
orders grants in the history; nothing checks it).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed
from harness.core.clock import iso
from harness.core.work import Work, recording
from harness.datastore.backends.dynamodb.items import lock_item_key, n_, s_
from harness.datastore.backends.dynamodb.locks import DynamoLockStore

TTL_SWEEP_BUFFER_S = 3600  # the native ``ttl`` attribute: the lock's expiry plus an hour


class SwampDynamoLockStore(DynamoLockStore):
    """swamp's acquire, renewal and release; the harness's ``inspect`` and ``state``, eventually consistent."""

    consistent = False

    def __init__(self, client: Any, table: str) -> None:
        super().__init__(client, table)
        self._ttls: dict[tuple[str, str], int] = {}  # (key, nonce) -> the grant's TTL, which a renewal restamps

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        ttl_ms = int(record["ttlMs"])
        item = {**lock_item_key(key), "holder": s_(record["holder"]), "hostname": s_(record["hostname"]),
                "pid": n_(record["pid"]), "acquiredAt": s_(iso(now)), "acquiredAtMs": n_(now), "ttlMs": n_(ttl_ms),
                "expiresAtMs": n_(now + ttl_ms), "nonce": s_(record["nonce"]),
                "ttl": n_((now + ttl_ms) // 1000 + TTL_SWEEP_BUFFER_S)}
        try:
            with recording(work):
                self.client.put_item(TableName=self.table, Item=item,
                                     ConditionExpression="attribute_not_exists(pk) OR expiresAtMs < :now",
                                     ExpressionAttributeValues={":now": n_(now)})
        except ClientError as e:
            if is_condition_failed(e):
                return None
            raise
        self._ttls[(key, record["nonce"])] = ttl_ms
        return now

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        at = expires_at_ms - self._ttls.get((key, nonce), 0)
        try:
            with recording(work):
                self.client.update_item(
                    TableName=self.table, Key=lock_item_key(key),
                    UpdateExpression="SET acquiredAt = :at, acquiredAtMs = :atMs, expiresAtMs = :exp, #ttl = :ttlVal",
                    ConditionExpression="nonce = :nonce", ExpressionAttributeNames={"#ttl": "ttl"},
                    ExpressionAttributeValues={":at": s_(iso(at)), ":atMs": n_(at), ":exp": n_(expires_at_ms),
                                               ":ttlVal": n_(expires_at_ms // 1000 + TTL_SWEEP_BUFFER_S),
                                               ":nonce": s_(nonce)})
        except ClientError as e:
            if is_condition_failed(e):
                return False
            raise
        return True

    def release(self, key: str, nonce: str, work: Work) -> bool:
        self._ttls.pop((key, nonce), None)
        try:
            with recording(work):
                self.client.delete_item(TableName=self.table, Key=lock_item_key(key),
                                        ConditionExpression="nonce = :nonce",
                                        ExpressionAttributeValues={":nonce": s_(nonce)})
        except ClientError as e:
            if is_condition_failed(e):
                return False  # already released or taken over (swamp swallows it)
            raise
        return True
