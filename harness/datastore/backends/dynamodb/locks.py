"""Lock item writes: acquire, heartbeat and release, all conditional (swamp's condition plus a fencing token).

The acquire also claims the grant's first commit id in ``pending`` (the same
request): a commit under the grant then costs no claim of its own, and its
entries stay invisible until it seals. Release removes the holder fields and
that id, not the item: its fencing counter and sequence only ever grow.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_condition_failed
from harness.core.work import Work, recording
from harness.datastore.backends.dynamodb.items import DomainState, claim_id, lock_item_key, n_, s_


class DynamoLockStore:
    consistent = True  # its reads (inspect, state): strongly consistent (swamp's own lock: swamp_lock.py, not)

    def __init__(self, client: Any, table: str) -> None:
        self.client, self.table = client, table
        self.keep: set[str] = set()  # claims something may still land under: the release leaves them pending

    key_of = staticmethod(lock_item_key)

    def try_acquire(self, key: str, record: dict, now: int, work: Work) -> int | None:
        names = {f"#{k}": k for k in record} | {"#fence": "fence", "#pending": "pending"}
        values = {f":{k}": (n_(v) if isinstance(v, int) else s_(str(v))) for k, v in record.items()}
        sets = ", ".join(f"#{k} = :{k}" for k in record)
        values.update({":now": n_(now), ":one": n_(1), ":claim": {"SS": [claim_id(record["nonce"])]}})
        try:
            with recording(work):
                out = self.client.update_item(
                    TableName=self.table, Key=self.key_of(key),
                    UpdateExpression=f"SET {sets} ADD #fence :one, #pending :claim",
                    ConditionExpression="attribute_not_exists(nonce) OR expiresAtMs < :now",
                    ExpressionAttributeNames=names, ExpressionAttributeValues=values,
                    ReturnValues="UPDATED_NEW",
                )
        except ClientError as e:
            if is_condition_failed(e):
                return None
            raise
        return int(out["Attributes"]["fence"]["N"])

    def _if_holder(self, key: str, nonce: str, update: str, values: dict, work: Work) -> bool:
        """An update of the lock item that only happens while ``nonce`` still holds it."""
        try:
            with recording(work):
                self.client.update_item(TableName=self.table, Key=self.key_of(key), UpdateExpression=update,
                                        ConditionExpression="nonce = :n",
                                        ExpressionAttributeValues={":n": s_(nonce), **values})
        except ClientError as e:
            if is_condition_failed(e):
                return False
            raise
        return True

    def renew(self, key: str, nonce: str, expires_at_ms: int, work: Work) -> bool:
        return self._if_holder(key, nonce, "SET expiresAtMs = :e", {":e": n_(expires_at_ms)}, work)

    def release(self, key: str, nonce: str, work: Work) -> bool:
        """Holder fields and the grant's unused claim removed, not the item (its counter and sequence stay).

        A claim whose commit may still land (in ``keep``) stays pending: its writes stay invisible for good.
        """
        fields = "REMOVE nonce, expiresAtMs, holder, hostname, pid, acquiredAt, ttlMs"
        if claim_id(nonce) in self.keep:
            return self._if_holder(key, nonce, fields, {}, work)
        return self._if_holder(key, nonce, f"{fields} DELETE pending :c", {":c": {"SS": [claim_id(nonce)]}}, work)

    def drop_claim(self, cid: str, key: str, work: Work) -> None:
        """Forget a commit id that has nothing left that could land (unconditional: the id is ours alone)."""
        with recording(work):
            self.client.update_item(TableName=self.table, Key=self.key_of(key), UpdateExpression="DELETE pending :c",
                                    ExpressionAttributeValues={":c": {"SS": [cid]}})

    def inspect(self, key: str, now: int, work: Work) -> dict | None:
        """The live holder's record (one GetItem, strongly consistent unless swamp's), or None when free or expired."""
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self.key_of(key), ConsistentRead=self.consistent)
        item = out.get("Item") or {}
        if "nonce" not in item or int(item.get("expiresAtMs", {}).get("N", 0)) < now:
            return None
        return {k: next(iter(v.values())) for k, v in item.items() if k in ("holder", "nonce", "expiresAtMs")}

    def state(self, key: str, work: Work) -> DomainState:
        with recording(work):
            out = self.client.get_item(TableName=self.table, Key=self.key_of(key), ConsistentRead=self.consistent)
        work.items_read += 1 if "Item" in out else 0
        return DomainState.of(out.get("Item"))
