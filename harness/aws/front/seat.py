"""The command driver's seam to the run's front: a worker's seat (its port), its counts, the keys' rows.

A worker sends every command's requests to its own seat (``AWS_ENDPOINT_URL_DYNAMODB`` and ``_S3`` both name
it: the front tells the services apart by the request), so what the seat's counts grew by while an
iteration's commands ran is what they sent: ``fill`` puts it into the row's columns wherever the spans
said nothing (the spans stay the source for step times and for what they do say).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from harness.aws.front.client import FrontClient
from harness.aws.front.counts import WireCounts

log = logging.getLogger("harness")
_CLIENTS: dict[str, FrontClient | None] = {}


def front_of(run_dir: str | Path) -> FrontClient | None:
    """The run's front (``RUN_DIR/front.json``), looked up once per run directory; None without one."""
    key = str(run_dir)
    if key not in _CLIENTS:
        _CLIENTS[key] = FrontClient.of_run(run_dir)
    return _CLIENTS[key]


class Seat:
    def __init__(self, front: FrontClient, user: str) -> None:
        self.front, self.user = front, user
        self.url = front.seat(user)

    @classmethod
    def of_run(cls, run_dir: str | Path, user: str) -> Seat | None:
        front = front_of(run_dir)
        return cls(front, user) if front is not None else None

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_DYNAMODB": self.url, "AWS_ENDPOINT_URL_S3": self.url}

    def counts(self) -> WireCounts:
        return self.front.counts(self.user)


def fill(row: dict[str, Any], sent: WireCounts) -> None:
    """The wire's counts into the row's columns the spans left null (None); ``throttles`` is the wire's only.
    Units only where DynamoDB was sent to: S3 has none, and a 0 would read as an iteration that cost nothing."""
    values = {"requests": sent.requests, "write_requests": sent.write_requests, "read_units": sent.read_units,
              "write_units": sent.write_units, "bytes_sent": sent.bytes_sent, "bytes_received": sent.bytes_received,
              "throttles": sent.throttles}
    if not any(k.startswith("dynamodb.") for k in sent.kinds):
        del values["read_units"], values["write_units"]
    for col, v in values.items():
        if row.get(col) is None:
            row[col] = v


def front_keys(run_dir: str | Path) -> list[dict[str, Any]]:
    """The front's per-key rows since the last call (keys.csv), [] without a front or when it cannot be read."""
    front = front_of(run_dir)
    if front is None:
        return []
    try:
        return front.keys()
    except OSError as e:
        log.warning("harness: the front's keys could not be read: %s", e)
        return []
