"""swamp's DynamoDB bookkeeping today, written beside the harness's own (``[datastore] bookkeeping = "swamp"``).

After every push with a change swamp's extension bumps the commit sequence
(``UpdateItem ADD seq 1``) and writes the watermark ``SYNCSTATE#global`` /
``STATE`` (``lastPushedAt``): two writes to one partition key by every push of
every worker, the hot key a big fleet meets at DynamoDB's ~1,000 write units a
second per key. Every push with a change ADDs its partitions to
``PARTITIONS#registry`` / ``LIST`` (a string set that nothing ever shrinks: an
item that only grows, on course for the 400 KB item limit). swamp skips the
partitions its process has already added, and a swamp process is one command:
one model run, one push, so the ADD is made on every push. DynamoDB bills an
update by the item's size, so its write units grow with the registry; the
harness's accounting bills the request (its key and values) and undercounts it. (docs/swamp-today.md has the sources;
the item holding the sequence is not in swamp's stored source: ``SYNCSTATE#global``
/ ``SEQ`` here, as FACTS.md names it.)

The registry's size is measured from what DynamoDB returns for the update
(``ReturnValues=ALL_NEW``: the whole item, which without a namespace also
holds the harness's own registry), so the report can forecast the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.clock import now_ms
from harness.datastore.backends.base import FileMeta, partition_of
from harness.datastore.backends.dynamodb.items import n_, s_
from harness.item_size import item_size
from harness.work import Work, recording

if TYPE_CHECKING:
    from harness.datastore.backends.dynamodb.backend import DynamoBackend

SYNC_STATE = "SYNCSTATE#global"
REGISTRY = {"pk": s_("PARTITIONS#registry"), "sk": s_("LIST")}
REGISTRY_ITEM = "PARTITIONS#registry/LIST"  # how rows and the report name it


class SwampBookkeeping:
    def __init__(self, be: DynamoBackend) -> None:
        self.be = be

    def after_push(self, namespace: str | None, metas: Sequence[FileMeta], work: Work) -> None:
        """The sequence bump and the watermark (every push with a change), the registry (new partitions)."""
        be = self.be
        with recording(work):
            be.client.update_item(TableName=be.table, Key={"pk": s_(SYNC_STATE), "sk": s_("SEQ")},
                                  UpdateExpression="ADD seq :one", ExpressionAttributeValues={":one": n_(1)})
            be.client.put_item(TableName=be.table, Item={"pk": s_(SYNC_STATE), "sk": s_("STATE"),
                                                         "lastPushedAt": n_(now_ms(be.clock))})
            parts = sorted({p for m in metas if (p := partition_of(m.rel_path, namespace))})
            if not parts:
                return
            out = be.client.update_item(TableName=be.table, Key=REGISTRY, UpdateExpression="ADD #p :p",
                                        ExpressionAttributeNames={"#p": "partitions"},
                                        ExpressionAttributeValues={":p": {"SS": parts}}, ReturnValues="ALL_NEW")
        attrs = out.get("Attributes") or {}
        work.item_bytes[REGISTRY_ITEM] = max(work.item_bytes.get(REGISTRY_ITEM, 0), item_size({**REGISTRY, **attrs}))
