"""The embedded local stand-in a run starts for the services no endpoint is configured for.

Every stand-in, once started, exposes ``name``, ``version``, ``urls``
(``{"dynamodb": url, "s3": url}``, or the one service it serves), ``services``
(what serves each), ``s3_stand_in`` where S3 has a server of its own
(``{"name", "version"}``) and ``stop()``.

Two choices, made by the run plan (the names come from ``--stand-in`` /
``--s3-stand-in`` or ``HARNESS_STAND_IN`` / ``HARNESS_S3_STAND_IN``, read at the
command line's edge). DynamoDB's: dynalite by default (its Query reads a key
range, so a request's cost follows the items it touches, not the table);
``moto`` (stock queries) and ``moto-indexed`` (moto with per-partition Query
indexes) stay selectable. S3's: SeaweedFS by default (a real S3 server in Go,
``standin.seaweedfs``), or moto. ``moto`` / ``moto-indexed`` named alone for
DynamoDB means moto for both (one process). A default whose runtime is
missing (no ``node``; no ``weed``) falls back to moto with one line; a stand-in
the user named is an error instead. ``bench/standins.py`` holds the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError

DEFAULT = "dynalite"
NAMES = ("dynalite", "dynalite-memory", "moto", "moto-indexed")
S3_DEFAULT = "seaweedfs"
S3_NAMES = ("seaweedfs", "moto")
MOTO_FOR_BOTH = ("moto", "moto-indexed")  # named alone, these serve S3 too
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


def check_s3_name(name: str) -> str:
    if name not in S3_NAMES:
        raise HarnessError(f"unknown S3 stand-in {name!r}: choose one of {', '.join(S3_NAMES)}")
    return name


def s3_default_for(dynamodb: str | None) -> str:
    """S3's stand-in when none is named: moto when moto was named for DynamoDB (one process), else SeaweedFS."""
    return "moto" if dynamodb in MOTO_FOR_BOTH else S3_DEFAULT


def missing_runtime(name: str, node_modules: str | Path | None = None, weed: str | Path | None = None) -> str | None:
    """Why ``name`` (a DynamoDB or an S3 stand-in) cannot start on this machine, or None."""
    if name.startswith("dynalite"):
        from harness.aws.standin.dynalite import missing_runtime as dynalite_missing

        return dynalite_missing(node_modules)
    if name == "seaweedfs":
        from harness.aws.standin.seaweedfs import missing_runtime as weed_missing

        return weed_missing(weed)
    return None


def choose(name: str | None = None, s3: str | None = None, note: Callable[[str], Any] = print,
           node_modules: str | Path | None = None, weed: str | Path | None = None) -> tuple[str, str]:
    """(DynamoDB's stand-in, S3's): a name given is used or refused; a default falls back to moto, saying so."""
    chosen = _dynamodb_only(name, note, node_modules)
    s3_chosen = check_s3_name(s3 or s3_default_for(name))
    problem = missing_runtime(s3_chosen, weed=weed)
    if problem:
        if s3:
            raise HarnessError(f"cannot start S3 stand-in {s3_chosen!r}: {problem}")
        note(f"harness: the default S3 stand-in {s3_chosen} is unavailable ({problem}); using {FALLBACK}")
        s3_chosen = FALLBACK
    return chosen, s3_chosen


def start(name: str | None = None, run_dir: str | Path | None = None, note: Callable[[str], Any] = print,
          node_modules: str | Path | None = None, s3: str | None = None,
          services: Iterable[str] = ("dynamodb", "s3"), weed: str | Path | None = None) -> StandIn:
    """Start DynamoDB's stand-in ``name`` and S3's ``s3`` (None: the defaults, see ``choose``); logs in ``run_dir``.

    ``services``: what the run needs served; a run that needs no S3 starts no S3 server (moto for DynamoDB
    serves both anyway).
    """
    wants_s3 = "s3" in services
    if wants_s3:
        chosen, s3_chosen = choose(name, s3, note, node_modules, weed)
    else:
        chosen, s3_chosen = _dynamodb_only(name, note, node_modules), ""
    logs = Path(run_dir) if run_dir else None
    moto_s3 = s3_chosen == "moto"
    if chosen.startswith("dynalite"):
        from harness.aws.standin.dynalite import EmbeddedDynalite

        dynamodb: Any = EmbeddedDynalite(data_dir=logs, log_path=str(logs / "dynalite.log") if logs else None,
                                         in_memory=chosen == "dynalite-memory", node_modules=node_modules,
                                         s3_moto=moto_s3)
    else:
        from harness.aws.moto_server import EmbeddedMoto

        dynamodb = EmbeddedMoto(log_path=str(logs / "moto.log") if logs else None, indexed=chosen == "moto-indexed")
    if moto_s3 or not wants_s3:
        return dynamodb.start()
    from harness.aws.standin.pair import StandInPair

    return StandInPair(dynamodb, _seaweedfs(logs, weed)).start()


def _dynamodb_only(name: str | None, note: Callable[[str], Any], node_modules: str | Path | None) -> str:
    chosen = check_name(name or DEFAULT)
    problem = missing_runtime(chosen, node_modules)
    if problem:
        if name:
            raise HarnessError(f"cannot start stand-in {chosen!r}: {problem}")
        note(f"harness: the default stand-in {chosen} is unavailable ({problem}); using {FALLBACK}")
        chosen = FALLBACK
    return chosen


def start_s3(s3: str | None = None, run_dir: str | Path | None = None, note: Callable[[str], Any] = print,
             weed: str | Path | None = None) -> StandIn:
    """Only S3's stand-in (DynamoDB has an endpoint of its own): SeaweedFS by default, or moto."""
    _, s3_chosen = choose(None, s3, note, weed=weed)
    logs = Path(run_dir) if run_dir else None
    if s3_chosen == "moto":
        from harness.aws.moto_server import EmbeddedMoto

        return EmbeddedMoto(log_path=str(logs / "moto.log") if logs else None).start()
    return _seaweedfs(logs, weed).start()


def _seaweedfs(logs: Path | None, weed: str | Path | None) -> Any:
    from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS

    return EmbeddedSeaweedFS(data_dir=logs, log_path=str(logs / "seaweedfs.log") if logs else None, weed=weed)


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
