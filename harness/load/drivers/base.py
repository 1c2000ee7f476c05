"""What every driver is: the one small interface a Locust user calls once an iteration.

A driver runs one worker's iterations of the system under test and hands back an ``IterationOutcome``: the
row (``harness.record.schema``), the steps Locust's statistics show, the history events the safety checker
reads, and (a command driver) the spans the row was made from. The Locust user (``harness/load/
locustfile.py``) knows nothing else: it makes its driver with ``harness.load.drivers.make`` and calls
``run_once`` until the test ends, then ``stop``.

A driver is one module ``harness/load/drivers/<kind>.py`` with ``check(scenario)`` (the scenario's
``[driver]`` options, refused as one line before anything starts) and ``make(ctx) -> Driver``; a scenario
names it with ``[driver] kind = "<kind>"``. Nothing else needs to know it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.config.plan import RunPlan
from harness.datastore.sync import Step


@dataclass
class IterationOutcome:
    row: dict[str, Any]
    steps: list[Step]
    error: BaseException | None
    # lock grants, renewals, commit attempts (JSON-ready): shipped like rows, written to history/*.jsonl
    events: list[dict] = field(default_factory=list)
    # the spans the row was made from (and strays: late or unjoined), as spans-table records (harness.record.spans)
    spans: list[dict] = field(default_factory=list)


@dataclass
class DriverContext:
    """What a driver is made from: the test's plan and who it is, in which Locust process.

    ``backend`` is the process's datastore backend (the model driver runs on it; a command driver leaves it
    alone), ``shared`` a dict for this Locust process's drivers to share what one process needs once (the
    command driver's OTLP receiver); its values with a ``close()`` are closed when the process quits.
    """

    plan: RunPlan
    process: str  # the Locust process: local, worker-N (the row's ``worker``)
    user: str  # the swamp worker: w<process index>-<n> (the row's ``user``)
    namespace: str | None
    rng_seed: int
    backend: Any = None
    shared: dict[str, Any] = field(default_factory=dict)


class Driver(Protocol):
    iteration: int  # the next iteration's number (the user stops at fleet.max_iterations)

    def run_once(self, intended: float | None = None) -> IterationOutcome:
        """One iteration; ``intended``: an open fleet's arrival, its intended start (epoch seconds)."""

    def stop(self) -> tuple[list[dict], list[dict]]:
        """The test ended: (history events, spans) not yet handed back with an outcome."""
