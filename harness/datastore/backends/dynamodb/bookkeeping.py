"""swamp's DynamoDB bookkeeping today, written beside the harness's own (``[datastore] bookkeeping = "swamp"``).

After every push with a change swamp's extension writes the watermark
``SYNCSTATE#global`` / ``STATE`` (``lastPushedAt``) and then bumps the commit
sequence ``SYNCSTATE#global`` / ``SEQ`` (``UpdateItem ADD seq 1``; ``keys.ts``
``COMMIT_SEQ_KEY``, ``sync.ts`` ``writeWatermark``, webframp/swamp-extensions
a929b7a): two writes to one partition key by every push of every worker, the
hot key a big fleet meets at DynamoDB's ~1,000 write units a second per key.
Every file a push writes ADDs its GSI partition to ``PARTITIONS#registry`` /
``LIST`` (``registerPartition`` from ``writeFileEntry``), a string set that
nothing ever shrinks: an item that only grows, on course for the 400 KB item
limit, each ADD billed by the whole item's size.

``registry_adds = "swamp"`` is the registry as swamp's extension writes it: one
``ADD partitions :p`` a file, each value ``FILE#``-prefixed (``FILE#<type>/<id>``,
``FILE#_system/models``, ``FILE#_system/outputs`` without a namespace; one
``FILE#_system/<ns>`` with one, under ``gsi = "swamp"``), skipped for a partition
the process has already registered, except that ``registerPartition`` marks a
partition registered only after its ADD returns: the files of one partition
written at the same time (``applyDiff``: 10 at a time) each send one
(``racing_adds``). ``"one"`` (the default) is one ADD of the harness's partition
names per push.

Where these writes fall: with fencing they follow the harness's fenced commit
(``after_push``, in this order: the sequence, the watermark, the registry);
in a run that is swamp's own (``fencing = false``) they are part of swamp's
commit, in swamp's order (``swamp_commit.py``).

The registry's size is measured from what DynamoDB returns for the update
(``ReturnValues=ALL_NEW``: the whole item), so the report can forecast the
limit. The harness's own registry is kept apart from it (``items.registry_key``).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.clock import now_ms
from harness.core.item_size import item_size
from harness.core.work import Work, recording
from harness.datastore.backends.base import FileMeta, partition_of
from harness.datastore.backends.dynamodb.items import gsi_partition, n_, s_
from harness.datastore.backends.dynamodb.port import DynamoPort
from harness.datastore.variant import RegistryAdds, values

SYNC_STATE = "SYNCSTATE#global"
REGISTRY = {"pk": s_("PARTITIONS#registry"), "sk": s_("LIST")}
REGISTRY_ITEM = "PARTITIONS#registry/LIST"  # how rows and the report name it
REGISTRY_ADDS = values(RegistryAdds)
WRITE_CONCURRENCY = 10  # applyDiff: files written at a time (parallelLimit)


class HarnessBookkeeping:
    """The harness's own bookkeeping: its commit's registry and sequence are all there is; nothing beside."""

    def after_push(self, namespace: str | None, metas: Sequence[FileMeta], work: Work) -> None:
        """Nothing written beside the commit."""


class SwampBookkeeping:
    """swamp's: ``SYNCSTATE#global`` every push, a registry that only grows (written after the commit)."""

    def __init__(self, be: DynamoPort) -> None:
        self.be = be

    def after_push(self, namespace: str | None, metas: Sequence[FileMeta], work: Work) -> None:
        """The sequence bump and the watermark (every push with a change), the registry (new partitions)."""
        be = self.be
        if not metas:
            return
        with recording(work):
            be.client.update_item(TableName=be.table, Key={"pk": s_(SYNC_STATE), "sk": s_("SEQ")},
                                  UpdateExpression="ADD seq :one", ExpressionAttributeValues={":one": n_(1)})
            be.client.put_item(TableName=be.table, Item={"pk": s_(SYNC_STATE), "sk": s_("STATE"),
                                                         "lastPushedAt": n_(now_ms(be.clock))})
            if be.registry_adds == RegistryAdds.SWAMP:  # a wave's ADDs at once, as each writeFileEntry sends its own
                each = registry_values(be.gsi_layout, namespace, metas)
                sent = racing_adds(each)
                for i in range(0, len(each), WRITE_CONCURRENCY):
                    wave = [[v] for v, s in zip(each[i:i + WRITE_CONCURRENCY], sent[i:i + WRITE_CONCURRENCY],
                                                strict=True) if s]
                    be.parallel(lambda values, w: register(be, values, w), wave, work)
            else:
                parts = sorted({p for m in metas if (p := partition_of(m.rel_path, namespace))})
                if parts:
                    register(be, parts, work)


def registry_values(layout: str, namespace: str | None, metas: Sequence[FileMeta]) -> list[str]:
    """Each file's registry value (``FILE#`` + its GSI partition, ``gsiFilePartition``), in push order."""
    return [f"FILE#{gsi_partition(layout, namespace, m.rel_path)}" for m in metas]


def register(be: DynamoPort, values: list[str], work: Work) -> None:
    """One ``ADD partitions :p`` to swamp's registry; its size (returned whole, no request of its own) noted."""
    with recording(work):
        out = be.client.update_item(TableName=be.table, Key=REGISTRY, UpdateExpression="ADD #p :p",
                                    ExpressionAttributeNames={"#p": "partitions"},
                                    ExpressionAttributeValues={":p": {"SS": values}}, ReturnValues="ALL_NEW")
    attrs = out.get("Attributes") or {}
    work.item_bytes[REGISTRY_ITEM] = max(work.item_bytes.get(REGISTRY_ITEM, 0), item_size({**REGISTRY, **attrs}))


def racing_adds(values: Sequence[str], concurrency: int = WRITE_CONCURRENCY) -> list[bool]:
    """For each file of a push (its registry value, in push order): does ``registerPartition`` send an ADD?

    ``applyDiff`` writes ``concurrency`` files at a time and a file's partition
    counts as registered only once its ADD has returned, so every file of a
    wave whose partition no earlier wave registered sends one (the files of a
    wave reach ``registerPartition`` together: the outcome when their requests
    take equal time); a later wave's files find it registered.
    """
    seen: set[str] = set()
    out: list[bool] = []
    for i in range(0, len(values), concurrency):
        wave = values[i:i + concurrency]
        out += [v not in seen for v in wave]
        seen.update(wave)
    return out
