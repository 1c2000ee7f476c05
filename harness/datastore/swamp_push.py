"""What swamp's push carries beyond the changed files (``[datastore] push_scope`` and ``export_at``).

swamp's core marks a data name's *directory* dirty when it saves a version
(``notifyDirty(getDataNameDir(...))`` in ``unified_data_repository.ts``). Its
DynamoDB extension's ``collectDiff`` looks the dirty paths up by key, finds no
item for a directory, walks it and pushes every file under it without a
remote entry to compare with: every version's ``raw`` and ``metadata.yaml`` and
``latest``, on every push, each at a chunk BatchWriteItem and a ``META``
PutItem (and, with no remote entry, at chunk version 1 again: no deletes). So
the writes of a push grow with the versions the data name holds, under the
global lock (its ``commitPush`` writes everything). ``push_scope = "swamp"``
models that on DynamoDB; ``"changed"`` (the default) pushes the changed files.

swamp writes the catalog export before ``preparePush`` and marks it dirty; on
DynamoDB ``preparePush`` only diffs, so the export's chunks are written by
``commitPush``, under the global lock (``export_at = "swamp"``). The harness's
default writes it after the commit (``"after-commit"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.datastore.backends.base import FileMeta

if TYPE_CHECKING:
    from harness.datastore.sync import Datastore

PUSH_SCOPES = ("changed", "swamp")
EXPORTS_AT = ("after-commit", "swamp")


def data_name_dir(rel_path: str) -> str | None:
    """The data name's directory of a version's file (``[<ns>/]data/<type>/<id>/<name>/``), or None."""
    parts = rel_path.split("/")
    i = parts.index("data") if "data" in parts[:2] else -1
    if i < 0 or len(parts) < i + 5:
        return None
    return "/".join(parts[:i + 4]) + "/"


def rewritten(dirty: Iterable[str], known: Iterable[str]) -> list[str]:
    """The files a swamp push writes again besides ``dirty``: every known file under a dirty data name's
    directory (the versions before, their metadata), in path order."""
    dirty = set(dirty)
    dirs = {d for rel in dirty if (d := data_name_dir(rel))}
    return sorted(rel for rel in known if rel not in dirty and any(rel.startswith(d) for d in dirs))


def stage_rewrites(store: Datastore) -> None:
    """swamp's push of a data name's directory (``push_scope = "swamp"``): every file under it staged again, as
    this worker holds it (``store.kept``; a file it holds no bytes of, or an older copy of, is left out)."""
    for rel in rewritten(store.dirty, store.local):
        data = store.kept.get(rel)
        if data is not None and rel not in store.staged and FileMeta.digest_of(data) == store.local[rel].digest:
            store.stage(rel, data)
