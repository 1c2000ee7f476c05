"""The local catalog: one SQLite row per data version, per worker.

With a namespace, every push exports all of the namespace's rows as
``.catalog-export.json``; that export grows with the catalog. Model delete
removes the model's definition row but leaves its data rows (the seed's fourth
bottleneck); prune removes data rows whose model no longer exists.
"""

from __future__ import annotations

import json
import sqlite3
import time

from harness.datastore.variant import CatalogExport, values

CATALOG_EXPORTS = values(CatalogExport)
# The row of swamp's catalog export today: writeCatalogExport (repository_factory.ts) writes `SELECT *` of the
# `catalog` table, whose 23 columns (catalog_store.ts, CatalogRow, CATALOG_SCHEMA_VERSION "4", swamp-club/swamp
# 0c7a0fa, the newest at 06b6147) are these; its text columns default to "".
SWAMP_ROW_FIELDS = ("namespace", "type_normalized", "model_id", "data_name", "id", "version", "is_latest",
                    "model_name", "spec_name", "data_type", "content_type", "lifetime", "owner_type", "streaming",
                    "size", "created_at", "tags", "owner_ref", "workflow_run_id", "workflow_name", "job_name",
                    "step_name", "source")
# "stored-28": a stored copy's row (a "CATALOG_COLUMNS" of schema 8, in no branch of swamp-club/swamp): 28 fields
STORED_ROW_FIELDS = ("namespace", "type_normalized", "model_id", "data_name", "id", "version", "is_latest",
                     "is_step_latest", "model_name", "spec_name", "data_type", "content_type", "lifetime",
                     "garbage_collection", "owner_type", "streaming", "size", "created_at", "tags", "owner_ref",
                     "workflow_run_id", "workflow_name", "job_name", "step_name", "source", "is_pending",
                     "pending_pid", "pending_host")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    ns TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (ns, type, id));
CREATE TABLE IF NOT EXISTS data (
    ns TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    version INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (ns, type, id, name, version));
"""


class Catalog:
    def __init__(self, path: str = ":memory:") -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.executescript(_SCHEMA)

    @staticmethod
    def _ns(ns: str | None) -> str:
        return ns or ""

    def add_model(self, ns: str | None, model_type: str, model_id: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO models VALUES (?,?,?,?)",
                        (self._ns(ns), model_type, model_id, time.time()))

    def has_model(self, ns: str | None, model_type: str, model_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM models WHERE ns=? AND type=? AND id=?",
                               (self._ns(ns), model_type, model_id)).fetchone() is not None

    def remove_model(self, ns: str | None, model_type: str, model_id: str) -> None:
        self.db.execute("DELETE FROM models WHERE ns=? AND type=? AND id=?", (self._ns(ns), model_type, model_id))

    def next_version(self, ns: str | None, model_type: str, model_id: str, name: str) -> int:
        row = self.db.execute("SELECT MAX(version) FROM data WHERE ns=? AND type=? AND id=? AND name=?",
                              (self._ns(ns), model_type, model_id, name)).fetchone()
        return (row[0] or 0) + 1

    def add_data(self, ns: str | None, model_type: str, model_id: str, name: str, version: int,
                 path: str, size: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO data VALUES (?,?,?,?,?,?,?,?)",
                        (self._ns(ns), model_type, model_id, name, version, path, size, time.time()))

    def rows(self, ns: str | None, model: tuple[str, str] | None = None) -> int:
        """Data rows of the namespace, or of one (type, id) model in it."""
        if model is None:
            return self.db.execute("SELECT COUNT(*) FROM data WHERE ns=?", (self._ns(ns),)).fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM data WHERE ns=? AND type=? AND id=?",
                               (self._ns(ns), *model)).fetchone()[0]

    def export(self, ns: str | None, style: str = "compact") -> bytes:
        """Every row of the namespace, as ``.catalog-export.json``.

        ``compact``: seven fields a row in one line of JSON. ``swamp``: as swamp
        writes it today, every row's 23 catalog columns, pretty-printed with a
        two-space indent and a trailing newline (the export is the larger for it);
        ``stored-28``: the same with a stored copy's 28 fields.
        """
        cur = self.db.execute("SELECT type, id, name, version, path, size, created_at FROM data WHERE ns=? "
                              "ORDER BY type, id, name, version", (self._ns(ns),))
        if style in (CatalogExport.SWAMP, CatalogExport.STORED_28):
            fields = SWAMP_ROW_FIELDS if style == CatalogExport.SWAMP else STORED_ROW_FIELDS
            rows = [_swamp_row(ns, *r, fields=fields) for r in cur]
            return (json.dumps(rows, indent=2) + "\n").encode()
        cols = ("type", "id", "name", "version", "path", "size", "createdAt")
        return json.dumps({"namespace": ns, "rows": [dict(zip(cols, r, strict=True)) for r in cur]}).encode()

    def orphans(self, ns: str | None) -> list[tuple[str, str]]:
        """Models with data rows but no definition: what prune removes."""
        cur = self.db.execute(
            "SELECT DISTINCT d.type, d.id FROM data d LEFT JOIN models m "
            "ON m.ns=d.ns AND m.type=d.type AND m.id=d.id WHERE d.ns=? AND m.id IS NULL ORDER BY 1, 2",
            (self._ns(ns),))
        return [(t, i) for t, i in cur]

    def remove_data(self, ns: str | None, model_type: str, model_id: str) -> int:
        cur = self.db.execute("DELETE FROM data WHERE ns=? AND type=? AND id=?", (self._ns(ns), model_type, model_id))
        return cur.rowcount


def _swamp_row(ns: str | None, model_type: str, model_id: str, name: str, version: int, path: str, size: int,
               created_at: float, fields: tuple[str, ...] = SWAMP_ROW_FIELDS) -> dict:
    """One catalog row with swamp's fields (what the harness does not track is swamp's default for it: "" for
    today's text columns, null in the stored copy's)."""
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created_at)) + f".{int(created_at * 1000) % 1000:03d}Z"
    values = {"namespace": ns or "", "type_normalized": model_type, "model_id": model_id, "data_name": name,
              "id": f"{model_id}/{name}/{version}", "version": version, "is_latest": 1, "is_step_latest": 0,
              "model_name": model_id, "spec_name": name, "data_type": "resource", "content_type": "application/json",
              "lifetime": "infinite", "garbage_collection": 10, "owner_type": "model-method", "streaming": 0,
              "size": size, "created_at": iso, "tags": "{}", "owner_ref": f"{model_type}/{model_id}",
              "workflow_run_id": None, "workflow_name": None, "job_name": None, "step_name": None, "source": path,
              "is_pending": 0, "pending_pid": None, "pending_host": None}
    if fields is SWAMP_ROW_FIELDS:  # NOT NULL DEFAULT '' today
        values.update(workflow_run_id="", workflow_name="", job_name="", step_name="")
    return {k: values[k] for k in fields}
