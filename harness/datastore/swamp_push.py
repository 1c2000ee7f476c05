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

On S3 (``export_at = "swamp"``, ``stage_export``) the export is a dirty file of
the push, as swamp's is: its content is uploaded by the prepare with the run's
files (outside the global lock) and its entry committed under the lock in the
``_root`` shard (with ``s3_shards = "swamp"``; so a namespaced run's commit
reads and writes 4 shards). The design is the simplest that keeps the index
checkable: the export is an ordinary tracked entry (its content immutable under
its version and digest like any file's, so a pull never reads a half-written
one), with one exception, that it is an *overwrite*. Every worker of a
namespace writes the one path, each from its own catalog, and swamp's push takes
the last writer's ("a later concurrent writer simply overwrites", core's
``flushTwoPhasePush``); the workers hold different model locks and their scoped
pulls never read ``_root``, so each numbers its versions from its own last one.
So the export is kept out of the two checks that assume one writer of a path at
a time: the unfenced prepare's "remote version newer than ours" conflict (S3's
looks nothing up anyway), and the safety checker's lost update (a write
replaced by a commit whose view never saw it): the commit's history event names
it in ``overwrites`` and the checker skips that rule for it, and counts an
indeterminate export that may have landed last as possibly the final one. The
rest still holds for it: the final entry must be the last acknowledged
export's, its content present and matching. Fencing is untouched: the entry is
sealed by the same head swap as the run's other entries.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.store import Store
from harness.datastore.variant import ExportAt, PushScope, values

PUSH_SCOPES = values(PushScope)
EXPORTS_AT = values(ExportAt)


def stage_export(store: Store, work: Work) -> None:
    """swamp's S3 push with ``export_at = "swamp"``: the namespace's catalog export written and marked dirty
    before the prepare, so the prepare uploads it and the commit indexes it (nothing without a namespace, as
    core writes none)."""
    if store.ns:
        store.stage(store.paths.catalog_export(), store.catalog.export(store.ns, store.cfg.catalog_export))
    work.catalog_rows = store.catalog.rows(store.ns)


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


def stage_rewrites(store: Store) -> None:
    """swamp's push of a data name's directory (``push_scope = "swamp"``): every file under it staged again, as
    this worker holds it (``store.kept``; a file it holds no bytes of, or an older copy of, is left out)."""
    for rel in rewritten(store.dirty, store.local):
        data = store.kept.get(rel)
        if data is not None and rel not in store.staged and FileMeta.digest_of(data) == store.local[rel].digest:
            store.stage(rel, data)
