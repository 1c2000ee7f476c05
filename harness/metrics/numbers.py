"""A run's rate, failure ratio, step shares and percentiles, defined once for every reader of its rows.

The report (``harness/report/series.py``, ``harness/report/run/``), the web UI's live tab
(``harness/load/web/live.py``), the live exporters (``harness/telemetry/measure.py``) and the gates
(``harness/gates/judge.py``) all compute these here, so a number read live is the number read afterwards (as
YCSB's ``Measurements`` serves every exporter). The definitions:

- an iteration's outcome: ``ok``, else ``failed`` with its error kind (``other`` when it has none);
- a rate: events per second of the span they fall in (0 over no time); a window at the span's end counts
  only the seconds of it inside the span (``exposure``);
- the iteration failure ratio: failed iterations over all iterations (None with none);
- a step's share: its mean milliseconds over the sum of the stacked steps' means (every step but
  ``release``), over successful iterations;
- a percentile: linear interpolation between the closest ranks (numpy's and pandas' default);
- a rate's live 95 % band: Byar's approximation to the exact Poisson interval (the report's is scipy's exact
  one, ``harness.core.intervals``).

Pure and numpy only: the Locust master imports this, and pandas stays out of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from harness.record.schema import STEP_COLUMNS

STACKED_STEPS = tuple(c for c in STEP_COLUMNS.values() if c != "release_ms")  # the steps a share is of
OTHER_KIND = "other"  # a failed iteration's error kind when it has none


def outcome(row: Mapping[str, Any]) -> tuple[bool, str]:
    """A row's outcome: (succeeded, its error kind: ``""`` when it succeeded, ``other`` when it has none)."""
    ok = bool(row.get("ok"))
    return ok, "" if ok else str(row.get("error_kind") or OTHER_KIND)


def per_second(count: float, seconds: float) -> float:
    """``count`` over ``seconds`` (0 over no time)."""
    return count / seconds if seconds > 0 else 0.0


def exposure(starts: np.ndarray, window: float, span_s: float) -> np.ndarray:
    """The seconds of each window (by its start) inside a span of ``span_s``: the last one may be cut short."""
    return np.clip(span_s - np.asarray(starts, dtype=float), 1e-9, window)


def failure_ratio(failed: int, total: int) -> float | None:
    """Failed iterations over all iterations (None with none)."""
    return failed / total if total else None


def shares(means: Mapping[str, float], empty: float | None = 0.0) -> dict[str, float | None]:
    """Each step's share of the steps' total (its mean over the sum of the means; sums serve alike); ``empty``
    for each when the total is not above 0."""
    total = float(np.sum(np.fromiter(means.values(), dtype=np.float64, count=len(means))))  # pandas' own sum
    return {k: (float(m) / total if total > 0 else empty) for k, m in means.items()}


def quantiles(values: Iterable[float] | np.ndarray, qs: tuple[float, ...]) -> list[float | None]:
    """The ``qs`` quantiles (0..1) of ``values``, linear interpolation; None for each when there are none."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return [None] * len(qs)
    return [float(x) for x in np.quantile(v, qs)]


def percentiles(values: np.ndarray, ps: tuple[float, ...]) -> list[float]:
    """The ``ps`` percentiles (0..100) of non-empty ``values``, linear interpolation."""
    return [float(x) for x in np.percentile(np.asarray(values, dtype=np.float64), ps)]


def poisson_band(k: np.ndarray, z: float = 1.959963984540054) -> tuple[np.ndarray, np.ndarray]:
    """Byar's approximation to the exact Poisson interval of counts ``k`` (numpy: scipy stays out of the
    Locust master; the report's exact one is within 0.02 events and 1 % of this)."""
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = k * np.clip(1 - 1 / (9 * k) - z / (3 * np.sqrt(k)), 0, None) ** 3
    lo = np.where(k > 0, lo, 0.0)
    k1 = k + 1
    return lo, k1 * (1 - 1 / (9 * k1) + z / (3 * np.sqrt(k1))) ** 3
