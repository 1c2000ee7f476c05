"""A check's result: what was measured against what was required, one line; the gates' and the built-in checks'.

Its own module so the built-in checks (``dead_endpoint.py``) and the gates' judge (``checks.py``) share it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    value: float | None
    limit: float
    line: str  # what was measured against what was required, one line
    side: str | None = None  # a threshold's: above, below, at, cannot tell, no data
    interval: tuple[float | None, float | None] | None = None
    abort: bool = False  # a threshold that stops the test early once credibly breached

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "passed": self.passed, "value": self.value, "limit": self.limit, "line": self.line}
        if self.side is not None:
            out.update(side=self.side, interval=list(self.interval) if self.interval else None, abort=self.abort)
        return out
