"""The embedded local stand-in a run starts when no endpoint is configured.

Every stand-in, once started, exposes ``name``, ``version``, ``urls``
(``{"dynamodb": url, "s3": url}``), ``services`` (what serves each),
``s3_stand_in`` (``{"name", "version"}`` of S3's server) and ``stop()``.

Two choices. DynamoDB's (``name``, ``--stand-in``): dynalite by default (its
Query reads a key range, so a request's cost follows the items it touches,
not the table); ``moto`` (stock queries) and ``moto-indexed`` (moto with
per-partition Query indexes) stay selectable. S3's (``s3``, ``--s3-stand-in``):
SeaweedFS by default (a real S3 server in Go, ``standin.seaweedfs``), or moto.
``--stand-in moto`` / ``moto-indexed`` named alone means moto for both (one
process). A default whose runtime is missing (no ``node``; no ``weed``) falls
back to moto with one line. ``bench/standins.py`` holds the evidence.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError

DEFAULT = "dynalite"
NAMES = ("dynalite", "dynalite-memory", "moto", "moto-indexed")
STAND_IN_ENV = "HARNESS_STAND_IN"  # the stand-in a plain `locust -f locustfile.py` starts (default: DEFAULT)
S3_DEFAULT = "seaweedfs"
S3_NAMES = ("seaweedfs", "moto")
S3_STAND_IN_ENV = "HARNESS_S3_STAND_IN"  # S3's stand-in for a plain `locust -f locustfile.py` (default: S3_DEFAULT)
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


def missing_runtime(name: str) -> str | None:
    """Why ``name`` (a DynamoDB or an S3 stand-in) cannot start on this machine, or None."""
    if name.startswith("dynalite"):
        from harness.aws.standin.dynalite import missing_runtime as dynalite_missing

        return dynalite_missing()
    if name == "seaweedfs":
        from harness.aws.standin.seaweedfs import missing_runtime as weed_missing

        return weed_missing()
    return None


def choose(name: str | None = None, s3: str | None = None,
           note: Callable[[str], Any] = print) -> tuple[str, str]:
    """(DynamoDB's stand-in, S3's) for these choices and ``$HARNESS_STAND_IN`` / ``$HARNESS_S3_STAND_IN``.

    A default whose runtime is missing falls back to moto with one line through
    ``note``; a stand-in the user named is an error instead.
    """
    explicit = name or os.environ.get(STAND_IN_ENV) or None
    chosen = check_name(explicit or DEFAULT)
    problem = missing_runtime(chosen)
    if problem:
        if explicit:
            raise HarnessError(f"cannot start stand-in {chosen!r}: {problem}")
        note(f"harness: the default stand-in {chosen} is unavailable ({problem}); using {FALLBACK}")
        chosen = FALLBACK
    s3_explicit = s3 or os.environ.get(S3_STAND_IN_ENV) or None
    s3_chosen = check_s3_name(s3_explicit or ("moto" if explicit in MOTO_FOR_BOTH else S3_DEFAULT))
    problem = missing_runtime(s3_chosen)
    if problem:
        if s3_explicit:
            raise HarnessError(f"cannot start S3 stand-in {s3_chosen!r}: {problem}")
        note(f"harness: the default S3 stand-in {s3_chosen} is unavailable ({problem}); using {FALLBACK}")
        s3_chosen = FALLBACK
    return chosen, s3_chosen


def start(name: str | None = None, run_dir: str | Path | None = None,
          note: Callable[[str], Any] = print, s3: str | None = None) -> StandIn:
    """Start DynamoDB's stand-in ``name`` and S3's ``s3`` (defaults: see ``choose``); logs go into ``run_dir``."""
    chosen, s3_chosen = choose(name, s3, note)
    logs = Path(run_dir) if run_dir else None
    moto_s3 = s3_chosen == "moto"
    if chosen.startswith("dynalite"):
        from harness.aws.standin.dynalite import EmbeddedDynalite

        dynamodb: Any = EmbeddedDynalite(data_dir=logs, log_path=str(logs / "dynalite.log") if logs else None,
                                         in_memory=chosen == "dynalite-memory", s3_moto=moto_s3)
    else:
        from harness.aws.moto_server import EmbeddedMoto

        dynamodb = EmbeddedMoto(log_path=str(logs / "moto.log") if logs else None, indexed=chosen == "moto-indexed")
    if moto_s3:
        return dynamodb.start()
    from harness.aws.standin.pair import StandInPair
    from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS

    weed = EmbeddedSeaweedFS(data_dir=logs, log_path=str(logs / "seaweedfs.log") if logs else None)
    return StandInPair(dynamodb, weed).start()


def describe(stand_in: StandIn) -> dict[str, Any]:
    """``run.json``'s ``stand_in`` field: DynamoDB's server (``name``, ``version``), S3's (``s3``), each service."""
    out = {"name": stand_in.name, "version": stand_in.version, "services": dict(stand_in.services)}
    s3 = getattr(stand_in, "s3_stand_in", None)
    if s3:
        out["s3"] = dict(s3)
    return out


def endpoint_env(stand_in: StandIn) -> dict[str, str]:
    """The variables that point boto3 (here and in every Locust process) at the stand-in."""
    return {"AWS_ENDPOINT_URL_DYNAMODB": stand_in.urls["dynamodb"], "AWS_ENDPOINT_URL_S3": stand_in.urls["s3"]}
