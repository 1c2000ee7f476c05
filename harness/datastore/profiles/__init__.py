"""Sync profiles: how one ``swamp model method run`` drives a datastore, one file a profile.

A profile is a module here with one function, ``sync_run(store, model_id, method, payload_bytes, steps,
model_type)``, that drives the ``Datastore`` through its public steps only (``locked``, ``step``, ``pull``,
``run_method_locally``, ``prepare``, ``commit``, ``export_catalog``, ``pause``, the lock helpers). The
profile's name is its file's, with dashes: ``one_lock.py`` is ``one-lock``. A third profile is one new file.

Nothing here imports the datastore at run time (the datastore imports this package to find its profile).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.datastore.sync import Datastore, Step

SyncRun = Callable[["Datastore", str, str, int, "list[Step]", str], None]

SYNC_MODES = tuple(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def profile(name: str) -> SyncRun:
    """The ``sync_run`` of the profile called ``name`` (one of ``SYNC_MODES``)."""
    if name not in SYNC_MODES:
        raise ValueError(f"unknown sync profile {name!r}: choose one of {', '.join(SYNC_MODES)}")
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}").sync_run
