"""Loaded by every Python process of a test's run (its directory on PYTHONPATH): a stub resolver and a TOML count.

With ``HARNESS_SPY_LOG`` set, each process appends one JSON line per event to that file:

- ``{"pid", "resolve": host}`` for every name lookup (an audit hook on ``socket.getaddrinfo``, so gevent's
  resolver in Locust's processes is seen too); a host under ``amazonaws.com`` is refused there, so nothing
  reaches AWS whatever the harness does;
- ``{"pid", "toml": sha256}`` for every ``tomllib.loads`` (how the harness parses a scenario file).

Test-only: nothing in harness/ knows about it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import tomllib

LOG = os.environ.get("HARNESS_SPY_LOG")


def _log(**event: object) -> None:
    with open(LOG, "a") as f:  # noqa: PTH123 - one short append per event, from any process
        f.write(json.dumps({"pid": os.getpid(), **event}) + "\n")


def _audit(event: str, args: tuple) -> None:
    if event != "socket.getaddrinfo":
        return
    host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
    _log(resolve=host)
    if host.rstrip(".").endswith("amazonaws.com"):
        raise socket.gaierror(socket.EAI_NONAME, f"stub resolver: {host} is AWS, which this test never reaches")


if LOG:
    sys.addaudithook(_audit)
    _loads = tomllib.loads

    def _counted(text: str, *args: object, **kwargs: object) -> dict:
        _log(toml=hashlib.sha256(text.encode()).hexdigest())
        return _loads(text, *args, **kwargs)

    tomllib.loads = _counted
