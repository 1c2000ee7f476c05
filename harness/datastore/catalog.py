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

    def export(self, ns: str | None) -> bytes:
        """Every row of the namespace, as swamp's ``.catalog-export.json``."""
        cur = self.db.execute("SELECT type, id, name, version, path, size, created_at FROM data WHERE ns=? "
                              "ORDER BY type, id, name, version", (self._ns(ns),))
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
