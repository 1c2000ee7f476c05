"""Parse human durations such as ``90s``, ``5m``, ``1h30m``, ``250ms``."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str | int | float) -> float:
    """Return seconds; a bare number means seconds. Raises ValueError on junk."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        return float(text)
    s = text.strip().lower()
    try:
        return float(s)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 5m, 1h30m, 250ms)")
    return total
