"""Parse human durations such as ``90s``, ``5m``, ``1h30m``, ``250ms``."""

from __future__ import annotations

import argparse
import re
from typing import Any

from harness.core.errors import HarnessError

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


class DurationArg:
    """A command-line duration option's type: a duration that must be positive (or, ``zero_ok``, zero too).

    One type for every duration option, so ``--duration -5s`` and ``--cloudwatch-wait -1s`` say the same thing
    (argparse names the option: "argument --duration: must be positive, got '-5s'").
    """

    def __init__(self, zero_ok: bool = False) -> None:
        self.zero_ok = zero_ok
        self.__name__ = "duration"  # argparse's fallback message names the type by it

    def __call__(self, text: str) -> float:
        negative = text.strip().startswith("-")
        try:
            seconds = parse_duration(text.strip()[1:] if negative else text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90s, 5m, 1h30m, 250ms)") from None
        if negative or (seconds == 0 and not self.zero_ok):
            least = "0 or more" if self.zero_ok else "positive"
            raise argparse.ArgumentTypeError(f"must be {least}, got {text!r} (e.g. 90s, 5m, 1h30m)")
        return seconds


def option_duration(o: dict[str, Any], key: str, default: float, where: str, positive: bool = True) -> float:
    """A scenario table's duration key (``[driver] timeout = "30s"``), one line naming ``where.key`` when it is
    not one: the file-side twin of ``DurationArg``, so the drivers' options read durations one way too."""
    v = o.get(key, default)
    try:
        s = parse_duration(v)
    except ValueError:
        raise HarnessError(f"{where}.{key} must be a duration like \"30s\" or \"2m\", got {v!r}") from None
    if s < 0 or (positive and s == 0):
        raise HarnessError(f"{where}.{key} must be a positive duration, got {v!r}")
    return s
