"""Starting, resuming and listing jobs: the part the command line and the load harness call.

A job's parameters are stored in the journal, so ``resume`` rebuilds its items.
Nothing resumes by itself: ``resume`` first resolves the endpoint and the
credentials again, then checks that the table is the same table (ARN and
creation time) with the same keys; a job that fails a check stays where it was
and says why.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.clients import Clients
from harness.core.clock import Clock, SystemClock
from harness.core.errors import HarnessError
from harness.core.virtual_time import Threads
from harness.jobs.pacing.budget import BUDGETS, Budgets
from harness.jobs.pacing.ceiling import CeilingWatcher, ceiling
from harness.jobs.pacing.engine import Job, Progress
from harness.jobs.pacing.journal import JobRow, Journal
from harness.jobs.pacing.sources import FillSource

Factory = Callable[[dict[str, Any], Clients], Any]  # params -> an ItemSource


def fill_factory(params: dict[str, Any], clients: Clients) -> FillSource:
    return FillSource(clients.dynamodb, params["table"], params["items"], params.get("item_bytes", 1000),
                      params.get("prefix", "FILL"), params.get("hot_key", False))


FACTORIES: dict[str, Factory] = {"fill": fill_factory}


def new_job_id(kind: str) -> str:
    return f"{kind}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def describe(clients: Clients, table: str) -> dict:
    try:
        return clients.dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise HarnessError(f"DynamoDB table {table!r} does not exist") from None
        raise


@dataclass
class Estimate:
    items: int
    units: float
    ceiling: float

    @property
    def seconds(self) -> float:
        return self.units / self.ceiling if self.ceiling else float("inf")

    def line(self) -> str:
        return (f"{self.items:,} items, about {self.units:,.0f} write units at a ceiling of {self.ceiling:,.0f} WCU/s: "
                f"about {_human(self.seconds)}")


def _human(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def estimate(source: Any, table: dict, share: float = 1.0) -> Estimate:
    units = sum(source.cost(i) for i in range(source.total))
    return Estimate(source.total, units, ceiling(table, "write") * share)


def run_job(job_id: str, kind: str, params: dict[str, Any], source: Any, clients: Clients, journal: Journal, *,
            clock: Clock | None = None, share: float = 1.0, refresh_s: float = 60.0, period_s: float = 1.0,
            on_progress: Callable[[Progress], None] | None = None, on_start: Callable[[Job], None] | None = None,
            resume: bool = False, threads: Threads | None = None, budgets: Budgets = BUDGETS,
            rng: random.Random | None = None) -> str:
    """Create (or continue) the job in the journal and run it to done, a pause or a failure.

    ``clock`` and ``threads`` are the job's time and concurrency (real by default; a ``VirtualClock`` is both).
    """
    clock = clock or SystemClock()
    table = params["table"]
    desc = describe(clients, table)
    if not resume:
        journal.create(job_id, kind, params, source.total, desc, clients.endpoints.dynamodb)
    watcher = CeilingWatcher(lambda: describe(clients, table), "write", clock, refresh_s=refresh_s)
    job = Job(job_id, source, journal, watcher, (clients.endpoints.dynamodb, table, "write", None), clock=clock,
              share=share, period_s=period_s, on_progress=on_progress, threads=threads, budgets=budgets,
              rng=rng)
    if on_start:
        on_start(job)
    return job.run()


def check_resumable(row: JobRow, clients: Clients) -> str | None:
    """Why this job cannot resume against what the endpoint has now, or None if it can."""
    if row.shown_state == "running":
        return f"job {row.id} is still running (pid {row.pid})"
    if row.state == "done":
        return f"job {row.id} is already done"
    try:
        t = describe(clients, row.table_name or "")
    except HarnessError as e:
        return f"{e}; the job stays where it was"
    if t.get("TableArn") != row.table_arn or str(t.get("CreationDateTime")) != row.table_created:
        return (f"table {row.table_name!r} is not the table the job started on (it was recreated: created "
                f"{t.get('CreationDateTime')}, the job's was created {row.table_created}); the job stays where it was")
    if t.get("KeySchema") != row.key_schema:
        return f"table {row.table_name!r} has different keys now; the job stays where it was"
    return None


def resume_job(row: JobRow, clients: Clients, journal: Journal, factories: dict[str, Factory] | None = None,
               **kwargs: Any) -> tuple[str, Any]:
    """Check the job can resume here, then continue it; returns (state, source)."""
    why = check_resumable(row, clients)
    if why:
        journal.set_state(row.id, row.shown_state, why, pid=row.pid or 0)
        raise HarnessError(why)
    source = (factories or FACTORIES)[row.kind](row.params, clients)
    return run_job(row.id, row.kind, row.params, source, clients, journal, resume=True, **kwargs), source


def progress_line(p: Progress, started: float, unit: str = "WCU/s") -> str:
    """``[#####-----] 52 % 5,200/10,000 items  68 of 70 WCU/s  ETA 1 min`` (an S3 job's unit: requests/s)"""
    frac = p.done / p.total if p.total else 1.0
    bar = "#" * int(frac * 20) + "-" * (20 - int(frac * 20))
    elapsed = time.monotonic() - started
    eta = elapsed / frac - elapsed if frac > 0 else float("inf")
    return (f"[{bar}] {frac:4.0%} {p.done:,}/{p.total:,} items  {p.rate:,.0f} of {p.ceiling:,.0f} {unit}  "
            f"throttled {p.throttled}  ETA {_human(eta) if frac < 1 else '0 s'}")
