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

``registry_adds = "swamp"`` is the registry as swamp's extension writes it
(``registerPartition``, called from ``writeFileEntry`` for every file): one
``ADD partitions :p`` per distinct GSI partition of the push's files, each value
``FILE#``-prefixed (``FILE#<type>/<id>`` and ``FILE#_system/outputs`` without a
namespace; one ``FILE#_system/<ns>`` with one, under ``gsi = "swamp"``), each
billed by the whole item's size. ``"one"`` (the default) is one ADD of the
harness's partition names per push.

The registry's size is measured from what DynamoDB returns for the update
(``ReturnValues=ALL_NEW``: the whole item, which without a namespace also
holds the harness's own registry), so the report can forecast the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.clock import now_ms
from harness.datastore.backends.base import FileMeta, partition_of
from harness.datastore.backends.dynamodb.items import gsi_partition, n_, s_
from harness.item_size import item_size
from harness.work import Work, recording

if TYPE_CHECKING:
    from harness.datastore.backends.dynamodb.backend import DynamoBackend

SYNC_STATE = "SYNCSTATE#global"
REGISTRY = {"pk": s_("PARTITIONS#registry"), "sk": s_("LIST")}
REGISTRY_ITEM = "PARTITIONS#registry/LIST"  # how rows and the report name it
REGISTRY_ADDS = ("one", "swamp")


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
            adds = [[v] for v in registry_values(be.gsi_layout, namespace, metas)] if be.registry_adds == "swamp" \
                else [sorted({p for m in metas if (p := partition_of(m.rel_path, namespace))})]
            for values in [v for v in adds if v]:
                out = be.client.update_item(TableName=be.table, Key=REGISTRY, UpdateExpression="ADD #p :p",
                                            ExpressionAttributeNames={"#p": "partitions"},
                                            ExpressionAttributeValues={":p": {"SS": values}}, ReturnValues="ALL_NEW")
                attrs = out.get("Attributes") or {}
                work.item_bytes[REGISTRY_ITEM] = max(work.item_bytes.get(REGISTRY_ITEM, 0),
                                                     item_size({**REGISTRY, **attrs}))


def registry_values(layout: str, namespace: str | None, metas: Sequence[FileMeta]) -> list[str]:
    """swamp's registry values for a push's files: ``FILE#`` + each distinct GSI partition, in the order
    swamp's writes meet them (one ADD each; the harness's ``ReturnValues`` costs no request of its own)."""
    seen: dict[str, None] = {}
    for m in metas:
        seen.setdefault(f"FILE#{gsi_partition(layout, namespace, m.rel_path)}", None)
    return list(seen)
