"""The embedded local stand-in a run starts when no endpoint is configured.

Every stand-in, once started, exposes ``name``, ``version``, ``urls``
(``{"dynamodb": url, "s3": url}``), ``services`` (what serves each) and
``stop()``. The default is dynalite for DynamoDB (its Query reads a key range,
so a request's cost follows the items it touches, not the table) with moto for
S3; ``moto`` (stock queries) and ``moto-indexed`` (moto with per-partition
Query indexes) stay selectable. ``bench/standins.py`` holds the evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError

DEFAULT = "dynalite"
NAMES = ("dynalite", "dynalite-memory", "moto", "moto-indexed")
ENDPOINT_KIND = "embedded"  # run.json's endpoint_kind for a run on an embedded stand-in
FALLBACK = "moto"


class StandIn(Protocol):
    name: str
    version: str

    @property
    def urls(self) -> dict[str, str]: ...

    @property
    def services(self) -> dict[str, str]: ...

    def stop(self) -> None: ...


def check_name(name: str) -> str:
    if name not in NAMES:
        raise HarnessError(f"unknown stand-in {name!r}: choose one of {', '.join(NAMES)}")
    return name


def missing_runtime(name: str, node_modules: str | Path | None = None) -> str | None:
    """Why ``name`` cannot start on this machine, or None."""
    if name.startswith("dynalite"):
        from harness.aws.standin.dynalite import missing_runtime as dynalite_missing

        return dynalite_missing(node_modules)
    return None


def start(name: str | None = None, run_dir: str | Path | None = None,
          note: Callable[[str], Any] = print, node_modules: str | Path | None = None) -> StandIn:
    """Start ``name`` (default: dynalite); logs go into ``run_dir``.

    When the default's runtime is missing (no ``node``, dynalite not
    installed) it falls back to moto with one line through ``note``; a stand-in
    the user named explicitly (``--stand-in`` or ``HARNESS_STAND_IN``, read at
    the command line's edge) is an error instead.
    """
    explicit = name or None
    chosen = check_name(explicit or DEFAULT)
    problem = missing_runtime(chosen, node_modules)
    if problem:
        if explicit:
            raise HarnessError(f"cannot start stand-in {chosen!r}: {problem}")
        note(f"harness: the default stand-in {chosen} is unavailable ({problem}); using {FALLBACK}")
        chosen = FALLBACK
    logs = Path(run_dir) if run_dir else None
    if chosen.startswith("dynalite"):
        from harness.aws.standin.dynalite import EmbeddedDynalite

        return EmbeddedDynalite(data_dir=logs, log_path=str(logs / "dynalite.log") if logs else None,
                                in_memory=chosen == "dynalite-memory", node_modules=node_modules).start()
    from harness.aws.moto_server import EmbeddedMoto

    moto = EmbeddedMoto(log_path=str(logs / "moto.log") if logs else None, indexed=chosen == "moto-indexed")
    return moto.start()


def describe(stand_in: StandIn) -> dict[str, Any]:
    """``run.json``'s ``stand_in`` field."""
    return {"name": stand_in.name, "version": stand_in.version, "services": dict(stand_in.services)}

