"""Where a seeded namespace leaves off: its catalog rows and its local view, saved for the workers.

``harness jobs pre-age`` (and ``harness run --seed-models``) pre-ages a datastore; each
seed worker's catalog (SQLite) and local view (JSON) are written to a directory
so the load's workers start where the seed left off instead of re-reading
everything. It is the datastore's own state, so it lives here: the pacing
layer writes it and the load layer reads it without importing each other.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from harness.datastore.backends.base import FileMeta
from harness.datastore.sync import Datastore


def state_paths(state_dir: Path, ns: str | None) -> tuple[Path, Path]:
    name = ns or "_shared"
    return state_dir / f"{name}.catalog.sqlite", state_dir / f"{name}.local.json"


def write_state(state_dir: Path, ns: str | None, store: Datastore) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    cat_path, local_path = state_paths(state_dir, ns)
    cat_path.unlink(missing_ok=True)
    dst = sqlite3.connect(cat_path)
    store.catalog.db.backup(dst)
    dst.close()
    local = {**store.local, **store.staged}
    local_path.write_text(json.dumps({
        "watermark_ms": max((m.updated_at_ms for m in local.values()), default=0),
        "files": [[m.rel_path, m.size, m.digest, m.updated_at_ms, m.version, m.content_id] for m in local.values()]}))


def load_state(state_dir: str | Path, store: Datastore) -> bool:
    """Start a worker where the seed left its namespace: its catalog rows and its local view."""
    cat_path, local_path = state_paths(Path(state_dir), store.ns)
    if not cat_path.exists() or not local_path.exists():
        return False
    src = sqlite3.connect(cat_path)
    src.backup(store.catalog.db)
    src.close()
    doc = json.loads(local_path.read_text())
    store.local = {f[0]: FileMeta(*f) for f in doc["files"]}
    store.watermark_ms = doc["watermark_ms"]
    return True
