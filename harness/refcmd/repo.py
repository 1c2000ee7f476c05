"""The reference command's repository: its working directory's ``.harness-swamp/`` between calls.

As swamp keeps its datastore configuration, sync cursor and catalog in its repository, each call of
``harness-swamp`` reads and writes them here: ``plan.json`` (the test's plan: the datastore's settings,
endpoints, table or bucket), ``settings.json`` (this worker's namespace and lock holder name),
``catalog.sqlite`` (the worker's catalog, as the model driver keeps it in memory) and ``view.pickle`` (its
local view, staged files, watermark and backend cursor: the rest of what one model-driver worker keeps from
one iteration to the next).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.core.errors import HarnessError

DIR = ".harness-swamp"
VIEW_FIELDS = ("local", "staged", "dirty", "watermark_ms", "last_seq", "_cursor", "kept")


def init(plan_path: str, namespace: str | None, holder: str, root: Path | None = None) -> Path:
    """Make (or make again) the repository here from the test's plan; a seeded run's worker starts from its
    namespace's seeded catalog and view, as the model driver's does."""
    from harness.config.plan import read_plan
    from harness.datastore.catalog import Catalog
    from harness.datastore.seed_state import load_state

    plan = read_plan(plan_path)
    d = (root or Path.cwd()) / DIR
    d.mkdir(parents=True, exist_ok=True)
    (d / "plan.json").write_text(plan.to_json())
    (d / "settings.json").write_text(json.dumps({"namespace": namespace, "holder": holder}))
    state_dir = plan.seeding.state_dir
    if state_dir and not (d / "view.pickle").exists():
        seeded = SimpleNamespace(ns=namespace, catalog=Catalog(str(d / "catalog.sqlite")), local={}, watermark_ms=0)
        if load_state(state_dir, seeded):
            _write_view(d, {"local": seeded.local, "watermark_ms": seeded.watermark_ms})
        seeded.catalog.db.close()
    return d


class Repo:
    """The repository of the working directory ``root`` (a HarnessError when there is none)."""

    def __init__(self, root: Path | None = None) -> None:
        self.dir = (root or Path.cwd()) / DIR
        if not (self.dir / "plan.json").is_file():
            raise HarnessError(f"{self.dir.parent} is not a harness-swamp repository (no {DIR}/plan.json): run "
                               "`harness-swamp init --plan PLAN.json` here first")
        self.settings = json.loads((self.dir / "settings.json").read_text())

    @property
    def namespace(self) -> str | None:
        return self.settings.get("namespace") or None

    def open(self, recorder: Any = None, urls: dict[str, str | None] | None = None) -> tuple[Any, Any, Any]:
        """(the worker's Datastore, the plan, its clients) as the last call left them; ``urls``: a service's
        endpoint as the environment names it (``AWS_ENDPOINT_URL_*``, as swamp reads it), over the plan's."""
        from dataclasses import replace

        from harness.config.factory import Factory, sync_config
        from harness.config.plan import RunPlan
        from harness.datastore.catalog import Catalog
        from harness.datastore.sync import Datastore

        plan = RunPlan.from_json((self.dir / "plan.json").read_text())
        c = plan.connection
        given = {s: replace(c.service(s), url=u) for s, u in (urls or {}).items() if u and c.service(s).url}
        if given:
            plan = replace(plan, connection=replace(c, **given))
        factory = Factory(plan)
        clients = factory.clients(pool=16, services=[plan.backend])
        backend = factory.backend(clients, create=False)
        catalog = Catalog(str(self.dir / "catalog.sqlite"))
        catalog.db.execute("PRAGMA journal_mode=WAL")
        catalog.db.execute("PRAGMA synchronous=NORMAL")
        store = Datastore(backend, catalog, sync_config(plan.scenario, self.namespace),
                          holder=self.settings.get("holder") or "harness-swamp", recorder=recorder)
        view = self._read_view()
        for name in VIEW_FIELDS:
            if name in view:
                setattr(store, name, view[name])
        store.calls = view.get("calls", 0)
        return store, plan, clients

    def save(self, store: Any) -> None:
        _write_view(self.dir, {**{name: getattr(store, name) for name in VIEW_FIELDS},
                               "calls": getattr(store, "calls", 0)})
        store.catalog.db.close()

    def _read_view(self) -> dict:
        path = self.dir / "view.pickle"
        if not path.exists():
            return {}
        with path.open("rb") as f:
            return pickle.load(f)  # noqa: S301 - this repository's own file, written by the last call


def _write_view(d: Path, view: dict) -> None:
    tmp = d / "view.pickle.tmp"
    with tmp.open("wb") as f:
        pickle.dump(view, f, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(d / "view.pickle")
