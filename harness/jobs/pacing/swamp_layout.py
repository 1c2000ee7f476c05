"""Pre-age a DynamoDB table in swamp's own layout, as a named extension version writes it.

``PreAgeSource`` ages a datastore in the harness's model's layout, which the real swamp cannot read. This
source writes what ``swamp model create @webframp/system NAME`` followed by ``method run get_uptime NAME``
leaves in the table, once per model and run, so a real ``swamp datastore sync`` of a fresh repository then
sees every pre-aged model's data (``swamp data search``), and a story chapter starts at the spec's age
(15,000 ``FILE`` items) without hours of 2-second swamp commands.

The facts are swamp's, read in its code and checked against a recorded run (tests/fixtures/swamp/
``ddb-<version>.items.json``, how in that folder's README): swamp-club/swamp 06b6147 with
webframp/swamp-extensions ``datastore/dynamodb`` at

- ``a929b7a`` (``keys.ts``, ``sync.ts`` ``writeFileEntry``): each file one chunk ``FILE#<rel>`` /
  ``CHUNK#v1#0000000`` (``content``, binary) and its metadata ``FILE#<rel>`` / ``META`` (``hash`` the
  content's SHA-256, ``size``, ``chunkCount``, ``chunkVersion``, ``updatedAt``, ``deletedAt`` null) under
  ``gsi1pk = gsiFilePartition(rel)``, ``gsi1sk = "<updatedAt>|<rel>"``; every partition in the registry
  ``PARTITIONS#registry`` / ``LIST`` (string set ``partitions``); then the watermark ``SYNCSTATE#global`` /
  ``STATE`` (``lastPushedAt``) and the commit sequence ``SYNCSTATE#global`` / ``SEQ`` (``ADD seq 1``).
  A model's type ``@webframp/system`` has a slash, so ``gsiFilePartition`` keys every such model's data to
  one ``FILE#@webframp/system``, not one partition per model;
- ``bc36088a`` (the legacy layout): the same items with ``gsi1pk = "FILE"``, ``gsi1sk = <rel>``, no
  registry and no sequence (a pull reads the watermark, then the whole ``FILE`` partition).

A model's files, per swamp's run (the recorded paths): ``definitions-evaluated/@webframp/system/<name>.yaml``
once; per run ``data/@webframp/system/<id>/current/<v>/raw`` (the method's JSON) and ``metadata.yaml`` beside
it (its ``checksum`` the raw's SHA-256), ``outputs/@webframp/system/get_uptime/<id>-<startedAt>.yaml``; and
``data/.../current/latest`` (the last version). Without a namespace: swamp 06b6147 with a namespace pushed
nothing to this extension's table in the recording ("Commit complete, no index changes", 0 items).

Items are written unconditionally (PutItem in batches): the same parameters give the same bytes, so a redone
batch lands the same items. The registry and the watermark are written by ``finish`` once every file landed,
so a reader never sees a sequence that promises files still missing.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.capacity import item_size, write_units_for_size
from harness.core.errors import HarnessError
from harness.core.work import Work, recording
from harness.datastore.backends.dynamodb.items import swamp_partition

MODEL_TYPE = "@webframp/system"
TYPE_VERSION = "2026.08.21.2"  # @webframp/system's, as swamp wrote it into the definition
METHOD = "get_uptime"
DATA_NAME = "current"
REGISTRY_KEY = {"pk": {"S": "PARTITIONS#registry"}, "sk": {"S": "LIST"}}
STATE_KEY = {"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "STATE"}}
SEQ_KEY = {"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "SEQ"}}
FIRST_CHUNK = "CHUNK#v1#0000000"  # a fresh file's one chunk (chunkVersion 1, every file here < 256 KB)


class SwampDynamoLayout:
    """One extension version's place for a file's metadata in the GSI, and its bookkeeping items."""

    name = ""
    backend = "dynamodb"
    registry = False  # whether a full pull finds partitions through PARTITIONS#registry
    sequence = False  # whether a pull short-cuts on SYNCSTATE#global / SEQ

    def gsi(self, rel: str, updated_at: str) -> dict:
        raise NotImplementedError


class LegacyFileLayout(SwampDynamoLayout):
    """webframp/swamp-extensions bc36088a: every file under ``gsi1pk = "FILE"``, sorted by path."""

    name = "swamp-dynamodb@bc36088a"

    def gsi(self, rel: str, updated_at: str) -> dict:
        return {"gsi1pk": {"S": "FILE"}, "gsi1sk": {"S": rel}}


class PartitionedLayout(SwampDynamoLayout):
    """webframp/swamp-extensions a929b7a: ``gsiFilePartition`` keys, time-ordered, registry and sequence."""

    name = "swamp-dynamodb@a929b7a"
    registry = True
    sequence = True

    def gsi(self, rel: str, updated_at: str) -> dict:
        return {"gsi1pk": {"S": f"FILE#{swamp_partition(rel)}"}, "gsi1sk": {"S": f"{updated_at}|{rel}"}}


class SwampS3Layout:
    """swamp-club/swamp-extensions c25ec91's ``@swamp/s3-datastore``: its objects and index (written by
    ``swamp_s3_layout``; named here so one ``layout_named`` answers for either backend)."""

    name = "swamp-s3@c25ec91"
    backend = "s3"


LAYOUTS: dict[str, SwampDynamoLayout] = {c.name: c() for c in (PartitionedLayout, LegacyFileLayout)}
ALL_LAYOUTS: dict[str, SwampDynamoLayout | SwampS3Layout] = {**LAYOUTS, SwampS3Layout.name: SwampS3Layout()}


def layout_named(name: str) -> SwampDynamoLayout | SwampS3Layout:
    """The layout a job names, on either backend (its ``backend``: "dynamodb" or "s3"), or a one-line error naming
    the ones built."""
    if name not in ALL_LAYOUTS:
        raise HarnessError(f"--layout {name!r} is not a layout the seed writes: choose one of "
                           f"{', '.join(ALL_LAYOUTS)}")
    return ALL_LAYOUTS[name]


def iso_ms(t_ms: int) -> str:
    """swamp's timestamps: ISO 8601, milliseconds, ``Z``."""
    return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t_ms % 1000:03d}Z"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SwampFile:
    rel: str
    content: bytes
    updated_at: str  # when the push wrote it (META's updatedAt and gsi1sk's time)


def file_items(layout: SwampDynamoLayout, f: SwampFile) -> list[dict]:
    """A file as ``writeFileEntry`` puts it: its chunk, then its metadata (the GSI's item)."""
    pk = {"S": f"FILE#{f.rel}"}
    chunk = {"pk": pk, "sk": {"S": FIRST_CHUNK}, "content": {"B": f.content}}
    meta = {"pk": pk, "sk": {"S": "META"}, "hash": {"S": sha256(f.content)}, "size": {"N": str(len(f.content))},
            "chunkCount": {"N": "1"}, "chunkVersion": {"N": "1"}, "updatedAt": {"S": f.updated_at},
            "deletedAt": {"NULL": True}, **layout.gsi(f.rel, f.updated_at)}
    return [chunk, meta]


def _uuid(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "harness-preage/" + "/".join(map(str, parts))))


def _stamp(iso: str) -> str:
    """An output record's file-name time: ``2026-12-07T02-39-21-092Z``."""
    return iso.replace(":", "-").replace(".", "-")


def model_files(epoch: float, m: int, versions: int, models: int) -> list[SwampFile]:
    """Model ``m``'s files after ``versions`` runs (run k of model m at ``epoch - (models*versions - k) s``)."""
    name, model_id = f"seed-m{m:04d}", _uuid(epoch, "model", m)
    base_ms = int(epoch * 1000) - models * versions * 1000
    definition = (f"type: '{MODEL_TYPE}'\ntypeVersion: {TYPE_VERSION}\nid: {model_id}\nname: {name}\nversion: 1\n"
                  "tags: {}\nglobalArguments: {}\nmethods: {}\n").encode()
    out = [SwampFile(f"definitions-evaluated/{MODEL_TYPE}/{name}.yaml", definition, iso_ms(base_ms + m * 1000))]
    data = f"data/{MODEL_TYPE}/{model_id}/{DATA_NAME}"
    for v in range(1, versions + 1):
        run_ms = base_ms + ((v - 1) * models + m) * 1000
        started, created, pushed = iso_ms(run_ms), iso_ms(run_ms + 60), iso_ms(run_ms + 150)
        data_id = _uuid(epoch, "data", m, v)
        raw = json.dumps({"bootTime": "2026-01-01 00:00:00", "uptimeString": f"up {v} runs of {name}",
                          "loadAverage1m": "0.00", "loadAverage5m": "0.00", "loadAverage15m": "0.00",
                          "fetchedAt": started}, separators=(",", ":")).encode()
        tag_lines = ("type: resource", "specName: uptime", f"modelName: {name}", "initiatedBy: harness-seed")
        tags = "".join(f"  {t}\n" for t in tag_lines)
        metadata = (f"id: {data_id}\nname: {DATA_NAME}\nversion: {v}\ncontentType: application/json\nlifetime: 5m\n"
                    f"garbageCollection: 5\nstreaming: false\ntags:\n{tags}ownerDefinition:\n"
                    f"  ownerType: model-method\n  ownerRef: {model_id}\ncreatedAt: '{created}'\nsize: {len(raw)}\n"
                    f"checksum: {sha256(raw)}\n").encode()
        output = (f"id: {_uuid(epoch, 'output', m, v)}\ndefinitionId: {model_id}\nmethodName: {METHOD}\n"
                  f"status: succeeded\nstartedAt: '{started}'\nretryCount: 0\nprovenance:\n"
                  f"  definitionHash: {sha256(definition)}\n  modelVersion: {TYPE_VERSION}\n"
                  "  triggeredBy: manual\n  initiatedBy: harness-seed\nartifacts:\n  dataArtifacts:\n"
                  f"    - dataId: {data_id}\n      name: {DATA_NAME}\n      version: {v}\n      tags:\n"
                  + "".join(f"        {t}\n" for t in tag_lines)
                  + f"completedAt: '{created}'\ndurationMs: 60\n").encode()
        out += [SwampFile(f"{data}/{v}/raw", raw, pushed), SwampFile(f"{data}/{v}/metadata.yaml", metadata, pushed),
                SwampFile(f"outputs/{MODEL_TYPE}/{METHOD}/{model_id}-{_stamp(started)}.yaml", output, pushed)]
        if v == versions:
            out.append(SwampFile(f"{data}/latest", str(v).encode(), pushed))
    return out


class SwampLayoutSource:
    """``models`` models of ``@webframp/system``, each run ``versions`` times, in one extension's layout.

    One item is a BatchWriteItem of ``FILES_PER_ITEM`` files (two table items each: 24 of the call's 25).
    Its cost: every item's write units, the metadata's twice (the table and the GSI).
    """

    FILES_PER_ITEM = 12

    def __init__(self, client: Any, table: str, layout: SwampDynamoLayout, models: int, versions: int,
                 epoch: float) -> None:
        self.client, self.table, self.layout = client, table, layout
        self.files_list = [f for m in range(models) for f in model_files(epoch, m, versions, models)]
        self.batches = [self.files_list[i:i + self.FILES_PER_ITEM]
                        for i in range(0, len(self.files_list), self.FILES_PER_ITEM)]
        self.total = len(self.batches)
        self.model_ids = [_uuid(epoch, "model", m) for m in range(models)]
        self.last_push = max((f.updated_at for f in self.files_list), default=iso_ms(int(epoch * 1000)))

    def files(self) -> int:
        return len(self.files_list)

    def cost(self, idx: int) -> float:
        units = 0.0
        for f in self.batches[idx]:
            chunk, meta = file_items(self.layout, f)
            units += write_units_for_size(item_size(chunk)) + 2 * write_units_for_size(item_size(meta))
        return units

    def run(self, idx: int, work: Work) -> None:
        reqs = [{"PutRequest": {"Item": item}} for f in self.batches[idx] for item in file_items(self.layout, f)]
        with recording(work):
            out = self.client.batch_write_item(RequestItems={self.table: reqs})
        if out.get("UnprocessedItems"):  # puts of the same bytes are idempotent: the engine backs off and redoes
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                         "Message": "unprocessed pre-age puts"}}, "BatchWriteItem")

    def partitions(self) -> list[str]:
        """The GSI partitions the files landed on (what ``registerPartition`` would have added)."""
        return sorted({file_items(self.layout, f)[1]["gsi1pk"]["S"] for f in self.files_list})

    def finish(self) -> None:
        """The bookkeeping a push ends with: the registry (a929b7a), the watermark, the sequence (a929b7a)."""
        work = Work()
        with recording(work):
            if self.layout.registry:
                self.client.update_item(TableName=self.table, Key=REGISTRY_KEY,
                                        UpdateExpression="ADD #partitions :p",
                                        ExpressionAttributeNames={"#partitions": "partitions"},
                                        ExpressionAttributeValues={":p": {"SS": self.partitions()}})
            self.client.put_item(TableName=self.table, Item={**STATE_KEY, "lastPushedAt": {"S": self.last_push}})
            if self.layout.sequence:
                self.client.update_item(TableName=self.table, Key=SEQ_KEY, UpdateExpression="ADD seq :one",
                                        ExpressionAttributeValues={":one": {"N": "1"}})
