"""The server processes a started stand-in runs, each with its name and log, for the supervisor to watch.

Every launcher keeps its child as ``proc`` (a ``subprocess.Popen``) with ``name`` and ``log_path``; a stand-in
made of two (``StandInPair``: ``dynamodb`` and ``s3``; dynalite with moto for S3: ``s3``) holds the others. The
supervisor started them, so it can read their exit status (``Popen.poll``) the moment one ends.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Server:
    name: str
    proc: subprocess.Popen
    log: str | None


def servers(stand_in: Any) -> list[Server]:
    """Every running server process of ``stand_in`` (each once), DynamoDB's first."""
    out: list[Server] = []
    seen: set[int] = set()

    def walk(obj: Any, depth: int) -> None:
        if obj is None or depth > 3 or id(obj) in seen:
            return
        seen.add(id(obj))
        proc = getattr(obj, "proc", None)
        if isinstance(proc, subprocess.Popen):
            log = getattr(obj, "log_path", None)
            out.append(Server(str(getattr(obj, "name", "stand-in")), proc, str(log) if log else None))
        for member in ("dynamodb", "s3"):
            walk(getattr(obj, member, None), depth + 1)

    walk(stand_in, 0)
    return out
