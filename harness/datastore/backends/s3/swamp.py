"""What swamp's S3 extension does that the harness's own S3 index need not: the choices, and its shard keys (pure).

Each choice is a scenario key (``[datastore]``, scenarios/README.md); the
default is the harness's own behaviour, ``"swamp"`` the extension's as its
code reads (docs/swamp-today.md names the file and commit of each):

- ``shards``: which shard a path's entry lives in. ``model``: one per model
  (``[<ns>/]<type>/<id>``). ``swamp``: ``partitionKeyFromPath``'s, so one run
  touches ``data--<type>--<id>`` (raw and metadata), ``data--<type>--<id>--<name>``
  (the ``latest`` pointer), ``outputs--<type>--<id>`` and ``_root`` (the export).
- ``commit``: ``swamp`` reads ``_meta.json`` and every dirty shard again under
  the lock (``commitPushShardFirst``: GET meta, then GET + PUT per shard in
  turn, then PUT meta), even where this worker's cursor holds them.
- ``prepare_read``: what the push's prepare reads of the index. ``none``;
  ``all`` (``assembleIndexFromShards``: the meta and every shard, 10 at a
  time); ``dirty`` (a fork's: the meta and the dirty shards only).
- ``command_requests``: ``swamp`` adds the requests every command makes: a
  HeadBucket (the credential preflight), the scoped pull's reads of the
  model's three fixed shards by GET, and on a model's first pull (its
  ``data--`` shard missing) a GET of the monolith and, when that is missing
  too, a LIST of the namespace and a PUT of the monolith it builds.
- ``retries``: ``harness`` leaves retries to botocore; ``swamp`` is the
  extension's: the SDK makes one attempt (``maxAttempts: 1``), index and
  content requests are retried by the sync layer (``retry.py``), the lock's
  never.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.datastore.errors import ConfigError
from harness.datastore.variant import (
    PrepareIndexRead,
    Retries,
    S3CommandRequests,
    S3Commit,
    S3Shards,
    coerce,
    values,
)

SHARDS = values(S3Shards)
COMMITS = values(S3Commit)
PREPARE_READS = values(PrepareIndexRead)
COMMAND_REQUESTS = values(S3CommandRequests)
RETRIES = values(Retries)
ROOT = "_root"
PREPARE_BATCH = 10  # assembleIndexFromShards reads this many shards at a time
PER_MODEL = ("data", "outputs", "models")  # subdirectories keyed per model (swamp's definitions-evaluated: models)


@dataclass(frozen=True)
class S3Swamp:
    """Which of swamp's S3 behaviours a backend models (every default: the harness's own)."""

    shards: S3Shards = S3Shards.MODEL
    commit: S3Commit = S3Commit.HARNESS
    prepare_read: PrepareIndexRead = PrepareIndexRead.NONE
    command_requests: S3CommandRequests = S3CommandRequests.NONE
    retries: Retries = Retries.HARNESS

    def __post_init__(self) -> None:
        coerce(self, {"shards": S3Shards, "commit": S3Commit, "prepare_read": PrepareIndexRead,
                      "command_requests": S3CommandRequests, "retries": Retries},
               error=lambda name, v, allowed: ConfigError(f"unknown S3 {name} {v!r}: choose one of "
                                                          f"{', '.join(allowed)}"))

    @property
    def swamp_shards(self) -> bool:
        """Entries keyed by swamp's ``partitionKeyFromPath`` (a run touches several shards of a model)."""
        return self.shards is S3Shards.SWAMP

    @property
    def rereads_under_lock(self) -> bool:
        """swamp's commit: ``_meta.json`` and each dirty shard read again under the lock, cached or not."""
        return self.commit is S3Commit.SWAMP

    @property
    def command_reads(self) -> bool:
        """swamp's requests of every command: HeadBucket, the scoped pull's shard GETs, a new model's."""
        return self.command_requests is S3CommandRequests.SWAMP


def swamp_shard(rel: str, namespace: str | None) -> str:
    """swamp's shard of a path (``partitionKeyFromPath`` on the path without its namespace), namespaced.

    ``data/<t>/<i>/<name>/<v>/raw`` -> ``data--<t>--<i>``; ``data/<t>/<i>/<name>/latest`` ->
    ``data--<t>--<i>--<name>``; ``outputs/<t>/<i>/<run>.yaml`` -> ``outputs--<t>--<i>``; a file at the
    root (the catalog export) -> ``_root``. swamp has no case for ``models/`` (its definitions live in
    the repository; ``definitions-evaluated/<t>/<i>/...`` is keyed per model): the harness keys its
    definitions the same way, ``models--<t>--<i>``. Anything else falls to ``_root``.
    """
    root = f"{namespace}/" if namespace else ""
    bare = rel[len(root):] if root and rel.startswith(root) else rel
    segs = bare.split("/")
    key = ROOT
    if len(segs) >= 4 and segs[0] in PER_MODEL:
        key = "--".join(segs[:len(segs) - 3 if len(segs) >= 6 else len(segs) - 1])
    return root + key


def model_shards(partition: str, namespace: str | None) -> tuple[str, ...]:
    """The three shards swamp's scoped pull reads for a model (``partitionKeysFromModel``), namespaced.

    ``partition`` is the harness's ``[<ns>/]<type>/<id>``."""
    root = f"{namespace}/" if namespace else ""
    t, i = partition[len(root):].split("/", 1)
    return tuple(f"{root}{sub}--{t}--{i}" for sub in PER_MODEL)


def of_model(shard: str, partition: str, namespace: str | None) -> bool:
    """Is ``shard`` (a swamp key) one of the model's: its three, or a ``latest`` shard ``data--<t>--<i>--<name>``?"""
    data = model_shards(partition, namespace)[0]
    return shard in model_shards(partition, namespace) or shard.startswith(data + "--")
