"""Typed values out of one TOML table, each failure a one-line error naming the file and the key.

Shared by scenarios, suites and ladders: each section of a file is read through one ``TomlReader``,
whose ``done`` refuses a key nobody asked for (a misspelling is an error, not a silent default).
"""

from __future__ import annotations

from typing import Any

from harness.core.durations import parse_duration
from harness.core.errors import HarnessError


class TomlReader:
    """Takes typed values out of one TOML table, remembering which keys were used."""

    def __init__(self, table: dict, section: str, source: str) -> None:
        if not isinstance(table, dict):
            raise HarnessError(f"{source}: [{section}] must be a table")
        self.t, self.section, self.source, self.used = table, section, source, set()

    def _where(self, key: str) -> str:
        return f"{self.source}: {self.section + '.' if self.section else ''}{key}"

    def fail(self, key: str, what: str) -> HarnessError:
        return HarnessError(f"{self._where(key)} {what}")

    def get(self, key: str, default: Any) -> Any:
        self.used.add(key)
        return self.t.get(key, default)

    def integer(self, key: str, default: int, minimum: int = 0) -> int:
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(key, f"must be an integer, got {v!r}")
        if v < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {v}")
        return v

    def integer_or_swamp(self, key: str, default: int, swamp: int, minimum: int = 0) -> int:
        """An integer, or "swamp": the value swamp's extension for this backend uses (docs/swamp-today.md)."""
        return swamp if self.get(key, default) == "swamp" else self.integer(key, default, minimum)

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(key, f"must be a number, got {v!r}")
        if v < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {v}")
        return float(v)

    def duration(self, key: str, default: float, positive: bool = True) -> float:
        v = self.get(key, default)
        try:
            s = parse_duration(v)
        except ValueError:
            raise self.fail(key, f"must be a duration like \"90s\" or \"5m\", got {v!r}") from None
        if s < 0 or (positive and s == 0):
            raise self.fail(key, f"must be a positive duration, got {v!r}")
        return s

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        v = self.get(key, default)
        if v not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {v!r}")
        return v

    def boolean(self, key: str, default: bool) -> bool:
        v = self.get(key, default)
        if not isinstance(v, bool):
            raise self.fail(key, f"must be true or false, got {v!r}")
        return v

    def string(self, key: str, default: str) -> str:
        v = self.get(key, default)
        if not isinstance(v, str):
            raise self.fail(key, f"must be a string, got {v!r}")
        return v

    def done(self) -> None:
        extra = sorted(set(self.t) - self.used)
        if extra:
            raise self.fail(extra[0], "is not a known key (check the spelling; see scenarios/README.md)")
