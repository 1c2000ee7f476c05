"""Before the load: what the run will write into its directory, estimated from the plan, against the free space.

A run's directory holds its rows (``iterations/``), its lock history (``history/``), Locust's CSVs and the logs,
and, on the embedded default, the stand-in's own data (dynalite's LevelDB, SeaweedFS's volumes), so a long run
can fill the disk its rows are kept on. The estimate is iterations x bytes per iteration, plus what grows with
time, plus the reserve the supervisor keeps for the record of a stop (``watch.Reserve``) and the floor under
which it counts the disk as full (``watch.FLOOR``). A run whose directory has less free is refused with one line
before anything starts; a run that fills it anyway is stopped as a part that died would be (``watch.FreeSpace``).

The iterations: a closed fleet's workers each at most ``1 / (think time + 1 / PER_WORKER_RATE)`` a second, an
open fleet's arrival rate (its busiest stage's), at most ``workers x max_iterations``. The bytes per iteration
were measured on this project's scenarios (``namespaced``, ``shared-lock``; 20-30 s runs on the embedded
defaults, the largest the directory reached): a row about 600 B of Parquet, its history about 1.5 KB of
JSON lines, dynalite's LevelDB up to about 20 KB between compactions, SeaweedFS's volumes about 70 KB. It is
an estimate meant to catch a run that cannot fit, not to promise one that does.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.config.endpoints import EMBEDDED
from harness.config.plan import RunPlan
from harness.core.errors import HarnessError
from harness.supervisor.watch import FLOOR, RESERVE, size_words

PER_WORKER_RATE = 10.0  # iterations a second one worker runs at most on loopback (an iteration of ~100 ms)
ROW_BYTES = 600
HISTORY_BYTES = 1_500
STAND_IN_BYTES = {"dynalite": 20_000, "seaweedfs": 70_000}  # on disk in the run directory; the others are in memory
PER_SECOND_BYTES = 8_000  # processes.csv, generator.csv, keys.csv, Locust's stats history, the probe
FIXED_BYTES = 1 << 20  # plan.json, run.json, the logs, Locust's CSVs


@dataclass(frozen=True)
class Estimate:
    iterations: int
    rows: int
    history: int
    stand_in: int
    other: int
    reserve: int

    @property
    def total(self) -> int:
        return self.rows + self.history + self.stand_in + self.other + self.reserve


def iterations(plan: RunPlan) -> int:
    """How many iterations the plan can run at most, at the rates the module names."""
    sc = plan.scenario
    fleet = sc.fleet
    seconds = plan.locust.run_time_s or fleet.duration_s
    workers = max(plan.locust.users, fleet.peak_workers, 1)
    per_worker = 1.0 / (sc.workload.think_time_s + 1.0 / PER_WORKER_RATE)
    rate = workers * per_worker
    if fleet.arrival == "open":
        peak = max([fleet.rate_per_s, *(st.rate_per_s for st in fleet.stages)])
        rate = min(rate, peak) if peak > 0 else rate
    return int(min(rate * seconds, workers * fleet.max_iterations))


def stand_in_on_disk(plan: RunPlan) -> str | None:
    """The embedded stand-in that keeps its data in the run directory for this run's backend, if one does."""
    if plan.connection.service(plan.backend).kind != EMBEDDED:
        return None
    name = plan.stand_in.dynamodb if plan.backend == "dynamodb" else plan.stand_in.s3
    return name if name in STAND_IN_BYTES else None


def estimate(plan: RunPlan) -> Estimate:
    n = iterations(plan)
    store = stand_in_on_disk(plan)
    seconds = plan.locust.run_time_s or plan.scenario.fleet.duration_s
    return Estimate(n, n * ROW_BYTES, n * HISTORY_BYTES, n * STAND_IN_BYTES[store] if store else 0,
                    FIXED_BYTES + int(seconds * PER_SECOND_BYTES), RESERVE + FLOOR)


def words(e: Estimate, store: str | None) -> str:
    parts = [f"rows {size_words(e.rows)}", f"lock history {size_words(e.history)}"]
    if store:
        parts.append(f"{store}'s data {size_words(e.stand_in)}")
    parts.append(f"logs and CSVs {size_words(e.other)}, {size_words(e.reserve)} kept in reserve")
    return f"about {size_words(e.total)} ({e.iterations:,} iterations at most: {', '.join(parts)})"


def refuse_if_short(plan: RunPlan, run_dir: Path) -> Estimate:
    """The estimate; a one-line error when the run directory's filesystem has less free than it."""
    e = estimate(plan)
    try:
        free = shutil.disk_usage(run_dir).free
    except OSError:
        return e
    if free < e.total:
        raise HarnessError(f"the run directory {run_dir} has {size_words(free)} free and this run would write "
                           f"{words(e, stand_in_on_disk(plan))}: free some space, choose another --run-dir, or "
                           "shorten the run (--duration, --workers)")
    return e
