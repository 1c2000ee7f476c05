"""DynamoDB's capacity-unit rules as pure functions on wire-format items.

Write: 1 unit per started KB of an item, per table and again per GSI the item
lands in. Read: 1 unit per started 4 KB strongly consistent, half that
eventually consistent; a Query sums item sizes before rounding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

KB = 1024


def _value_size(v: Mapping[str, Any]) -> int:
    (t, x), = v.items()
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
        return sum(_value_size({"N": n}) for n in x)
    if t == "BS":
        return sum(len(b) for b in x)
    if t == "L":
        return 3 + sum(1 + _value_size(e) for e in x)
    if t == "M":
        return 3 + sum(len(k.encode()) + 1 + _value_size(e) for k, e in x.items())
    raise ValueError(f"unknown DynamoDB type {t!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes DynamoDB bills for an item: attribute names plus values."""
    return sum(len(k.encode()) + _value_size(v) for k, v in item.items())


def write_units(item: Mapping[str, Mapping[str, Any]], gsi_keys: Iterable[tuple[str, str]] = ()) -> float:
    """Units to write ``item``: table plus every GSI whose key attributes it carries."""
    per = max(1, math.ceil(item_size(item) / KB))
    lands = sum(1 for pk, sk in gsi_keys if pk in item and sk in item)
    return float(per * (1 + lands))


def read_units(sizes: Iterable[int], consistent: bool = False, summed: bool = False) -> float:
    """Units to read items of ``sizes``; ``summed`` for Query/Scan (one rounding)."""
    sizes = list(sizes)
    if summed:
        units = max(1, math.ceil(sum(sizes) / (4 * KB)))
    else:
        units = sum(max(1, math.ceil(s / (4 * KB))) for s in sizes)
    return float(units if consistent else units / 2)
