"""Parse arrival rates such as ``2/s``, ``120/min``, ``300/h`` (a bare number means per second)."""

from __future__ import annotations

import re

_PER = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|sec|m|min|h))?\s*$")


def parse_rate(text: str | int | float) -> float:
    """Arrivals per second; raises ValueError on junk or a rate that is not positive."""
    if isinstance(text, bool):
        raise ValueError(f"not a rate: {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        m = _RATE.match(text.lower())
        if not m:
            raise ValueError(f"not a rate: {text!r} (use e.g. 2/s, 120/min, 300/h)")
        value = float(m.group(1)) / _PER[m.group(2) or "s"]
    if value <= 0:
        raise ValueError(f"a rate must be positive, got {text!r}")
    return value


