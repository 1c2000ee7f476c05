"""How many bytes DynamoDB counts for an item: attribute names plus values, by its published rules.

Neutral ground: the accounting bills capacity by it (``harness.aws.capacity``), and
the datastore measures the items it grows (the partition registry) by it, so
neither layer imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def value_size(v: Mapping[str, Any]) -> int:
    ((t, x),) = v.items()
    if t == "S":
        return len(x.encode())
    if t == "N":
        digits = len(str(x).lstrip("-").replace(".", "").lstrip("0")) or 1
        return 1 + (digits + 1) // 2
    if t == "B":
        return len(x)
    if t in ("BOOL", "NULL"):
        return 1
    if t == "SS":
        return sum(len(s.encode()) for s in x)
    if t == "NS":
        return sum(value_size({"N": n}) for n in x)
    if t == "BS":
        return sum(len(b) for b in x)
    if t == "L":
        return 3 + sum(1 + value_size(e) for e in x)
    if t == "M":
        return 3 + sum(len(k.encode()) + 1 + value_size(e) for k, e in x.items())
    raise ValueError(f"unknown DynamoDB type {t!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes DynamoDB bills for an item: attribute names plus values.

    On every write's hot path (once per item), so strings and binaries are sized inline.
    """
    total = 0
    for k, v in item.items():
        total += len(k) if k.isascii() else len(k.encode())
        x = v.get("S")
        if x is not None:
            total += len(x) if x.isascii() else len(x.encode())
            continue
        x = v.get("B")
        total += len(x) if x is not None else value_size(v)
    return total
