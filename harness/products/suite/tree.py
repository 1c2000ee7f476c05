"""The tree a suite seeds and changes: swamp's ``seedTestData``, ``modifyOneFile`` and ``bulkModifyFiles``.

``data/@test/model-type-NNN/<id>/file-NNNN.json``, ceil(files / models) files
a model, about ``file_bytes`` of JSON each. swamp draws each model's id at
random; here it is derived from the model's number, so two runs of a suite
write the same keys (sizes and key hashing stay comparable). A changed file is
swamp's small "modified" JSON, with the trial in it so every change is new.
"""

from __future__ import annotations

import json
import uuid

from harness.products.suite.spec import Shape

_NS = uuid.UUID("5d1c0a4e-8f3b-4b5e-9c61-2a9e0f6b7d10")  # any fixed namespace: ids stable across runs


def model_dir(m: int) -> str:
    return f"data/@test/model-type-{m:03d}/{uuid.uuid5(_NS, str(m))}"


def partition(m: int) -> str:
    """The harness's partition of model ``m`` (``<type>/<id>`` as ``paths.model_of`` reads the path)."""
    return f"@test/model-type-{m:03d}"


def path(m: int, f: int) -> str:
    return f"{model_dir(m)}/file-{f:04d}.json"


def files(shape: Shape) -> list[tuple[int, int]]:
    """(model, file) of every seeded file, model by model, as swamp seeds them."""
    out: list[tuple[int, int]] = []
    for m in range(shape.models):
        for f in range(shape.per_model):
            if len(out) == shape.files:
                return out
            out.append((m, f))
    return out


def content(shape: Shape, m: int, f: int, stamp: str) -> bytes:
    """A seeded file: ``{model, file, timestamp, data: "x" * (size - 100)}`` as swamp writes it."""
    return json.dumps({"model": m, "file": f, "timestamp": stamp,
                       "data": "x" * max(0, shape.file_bytes - 100)}).encode()


def changed(m: int, f: int, trial: int, stamp: str) -> bytes:
    """A changed file: swamp's small ``modified-<uuid>`` JSON (the trial stands in for the uuid)."""
    return json.dumps({"model": m, "file": f, "timestamp": stamp, "data": f"modified-trial-{trial:04d}"}).encode()


def spread(shape: Shape, n: int) -> list[tuple[int, int]]:
    """``n`` files to change, swamp's ``bulkModifyFiles`` way: ceil(n / models) files of each model from model 0.

    With n = 1 that is file-0000 of model 0 (``modifyOneFile``). Only files that exist are chosen: past a
    model's last file the next model continues.
    """
    if n <= 0:
        return []
    per = -(-n // shape.models)
    seeded = set(files(shape))
    out: list[tuple[int, int]] = []
    for m in range(shape.models):
        for f in range(per):
            if len(out) == n:
                return out
            if (m, f) in seeded:
                out.append((m, f))
    rest = [x for x in files(shape) if x not in set(out)]
    return out + rest[: n - len(out)]
