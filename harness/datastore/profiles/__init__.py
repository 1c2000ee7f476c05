"""Sync profiles: how one ``swamp model method run`` drives a datastore, one file a profile.

A profile is a module here with three functions:

- ``sync_run(store, model_id, method, payload_bytes, steps, model_type)`` drives the ``Datastore`` through
  its public steps only (``locked``, ``step``, ``pull``, ``run_method_locally``, ``prepare``, ``commit``,
  ``export_catalog``, ``pause``, the lock helpers);
- ``commit_lock_key(store)`` names the lock whose holder commits (the commit domain: the pull, the index
  reads and the fences are keyed by it);
- ``uploads_at_commit(backend)`` says where the content is written when the scenario does not choose
  (``uploads_at_commit``): under the commit's lock, or in the push's prepare.

The profile's name is its file's, with dashes: ``one_lock.py`` is ``one-lock``. A third profile is one new
file; the datastore names none of them.

Nothing here imports the datastore at run time (the datastore imports this package to find its profile).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Protocol, cast

from harness.datastore.store import Step, Store

SyncRun = Callable[["Store", str, str, int, "list[Step]", str], None]


class Profile(Protocol):
    """What the datastore asks of a profile module."""

    sync_run: SyncRun

    def commit_lock_key(self, store: Store) -> str: ...

    def uploads_at_commit(self, backend: str) -> bool: ...


SYNC_MODES = tuple(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def profile(name: str) -> Profile:
    """The profile called ``name`` (one of ``SYNC_MODES``): its module."""
    if name not in SYNC_MODES:
        raise ValueError(f"unknown sync profile {name!r}: choose one of {', '.join(SYNC_MODES)}")
    return cast(Profile, importlib.import_module(f"{__name__}.{name.replace('-', '_')}"))
