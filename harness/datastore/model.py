"""A model type in the spirit of ``@webframp/system``: methods that each write one resource.

A method run produces a small JSON resource; the datastore turns it into
``raw``, ``metadata.yaml`` and ``latest`` plus an output record. ``payload_bytes``
pads the resource so write-stress workers can rotate 100 B / 10 KB / 500 KB.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable

from harness.datastore.errors import ConfigError
from harness.datastore.variant import DataName, values

MODEL_TYPE = "system"
_PAD = os.urandom(64 * 1024).hex().encode()  # 128 KB of incompressible-looking text, reused


def _uptime(rng: random.Random) -> dict:
    return {"uptimeSeconds": rng.randint(1, 10_000_000)}


def _memory(rng: random.Random) -> dict:
    total = 16 * 1024**3
    return {"totalBytes": total, "freeBytes": rng.randint(0, total)}


def _load(rng: random.Random) -> dict:
    return {"load1": round(rng.random() * 4, 2), "load5": round(rng.random() * 4, 2)}


def _disk(rng: random.Random) -> dict:
    return {"mounts": [{"path": "/", "usedPct": rng.randint(1, 99)}]}


METHODS: dict[str, tuple[str, Callable[[random.Random], dict]]] = {
    "get_uptime": ("uptime", _uptime),
    "get_memory": ("memory", _memory),
    "get_load": ("load", _load),
    "get_disk": ("disk", _disk),
}


def padding(n: int) -> str:
    """``n`` bytes of filler text (cheap: slices of one pre-made block)."""
    reps, rest = divmod(n, len(_PAD))
    return (_PAD * reps + _PAD[:rest]).decode()


# Which data name a method's run writes: "method" (the harness's own: one name per method, uptime, memory, ...)
# or "swamp" (@webframp/system's methods all call writeResource(spec, "current"), and swamp's data name is that
# instance name, data_writer.ts at 06b6147: every run of a model adds a version to its one data name "current")
DATA_NAMES = values(DataName)
SWAMP_DATA_NAME = "current"


def run_method(method: str, payload_bytes: int, rng: random.Random) -> tuple[str, bytes]:
    """Run ``method`` locally; return (data name, resource bytes of about ``payload_bytes``)."""
    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    name, fn = METHODS[method]
    body = fn(rng)
    raw = json.dumps(body).encode()
    if payload_bytes > len(raw) + 16:
        body["pad"] = padding(payload_bytes - len(raw) - 12)
        raw = json.dumps(body).encode()
    return name, raw
