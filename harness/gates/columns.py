"""Which columns and error kinds a threshold may name: the iteration row's (``harness.record.schema``).

Kept apart from the grammar (``expr``), which the run plan parses with and which so imports no record; the
command line checks the names here before anything starts.
"""

from __future__ import annotations

import difflib

import pyarrow as pa

from harness.core.errors import HarnessError
from harness.gates.expr import Threshold, parse_all
from harness.record.schema import ERROR_KINDS, SCHEMA

NUMERIC = tuple(f.name for f in SCHEMA if (pa.types.is_floating(f.type) or pa.types.is_integer(f.type))
                and f.name != "iteration")


def needed(thresholds: list[Threshold]) -> list[str]:
    """The row columns these thresholds read (beyond the checks' own)."""
    return sorted({t.column for t in thresholds if t.column and t.column in NUMERIC})


def check(thresholds: list[Threshold], where: str = "--check") -> None:
    """A column or error kind the rows do not have is a one-line error naming the nearest that exists."""
    for t in thresholds:
        if t.stat == "utilization":
            continue
        if t.column is not None and t.column not in NUMERIC:
            near = difflib.get_close_matches(t.column, NUMERIC, n=1)
            hint = f"did you mean {near[0]}?" if near else "see docs/run-directory.md for the columns"
            raise HarnessError(f"{where} {t.text!r}: the rows have no numeric column {t.column!r} ({hint})")
        if t.kind is not None and t.kind not in ERROR_KINDS:
            raise HarnessError(f"{where} {t.text!r}: {t.kind!r} is no error kind: use one of "
                               f"{', '.join(ERROR_KINDS)}")


def check_specs(specs: tuple, where: str) -> None:
    """A scenario's thresholds (already parsed once as grammar): their columns and kinds exist."""
    check(parse_all(specs, where), where)
