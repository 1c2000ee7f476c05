"""Where a forecast looks: a time, an iteration count, or a multiple of the run's own length.

Parsed once from ``--at`` (``15m``, ``2h``, ``1900it``, ``10x``), so every later step reads one type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.core.durations import parse_duration
from harness.core.errors import HarnessError

DEFAULT_MULTIPLE = 10.0  # the report's own horizon: the run's length times 10
HALVING_WITHIN_S = 24 * 3600.0  # "the rate halves at ..." is looked for up to a day of load, else "not within 24 h"


@dataclass(frozen=True)
class Horizon:
    """``kind``: ``seconds`` (from the load's start), ``iterations`` (the fleet's successful iterations from
    the start) or ``multiple`` (of the run's length)."""

    kind: str
    value: float

    def label(self) -> str:
        if self.kind == "iterations":
            return f"{self.value:,.0f} iterations"
        if self.kind == "multiple":
            return f"{self.value:g}x the run's length"
        return say_seconds(self.value)


def parse(text: str) -> Horizon:
    """``10x`` | ``1900it`` | a duration (``15m``, ``2h``, ``900s``); a one-line error otherwise."""
    s = text.strip().lower().replace(",", "").replace("_", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(x|it|its|iterations?)", s)
    try:
        if m:
            v = float(m.group(1))
            kind = "multiple" if m.group(2) == "x" else "iterations"
        else:
            v, kind = parse_duration(s), "seconds"
    except ValueError:
        raise HarnessError(f"--at {text!r}: give a duration (15m, 2h), an iteration count (1900it) or a "
                           "multiple of the run's length (10x)") from None
    if v <= 0:
        raise HarnessError(f"--at {text!r}: the horizon must be above 0")
    return Horizon(kind, v)


def say_seconds(s: float) -> str:
    """``45 s``, ``11 min``, ``2.5 h``: a horizon as a reader says it."""
    if s < 120:
        return f"{s:.0f} s"
    if s < 2 * 3600:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.3g} h"
