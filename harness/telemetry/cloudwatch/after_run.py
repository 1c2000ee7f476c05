"""Reading what AWS measured for a run: after an ``--aws`` run's load, and ``harness report RUN_DIR --cloudwatch``.

Where CloudWatch is comes from the run's plan (``plan.json``: AWS itself on ``--aws``, or the URL
``AWS_ENDPOINT_URL_CLOUDWATCH`` / ``AWS_ENDPOINT_URL`` named at run time); which resources and which window
from the plan and ``run.json``. The datapoints go to ``cloudwatch.csv`` and what could not be read to
``run.json``'s ``cloudwatch.notes``, which the report shows beside the harness's own counts
(``harness/telemetry/cloudwatch/section.py``). Nothing here fails a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from botocore.config import Config

from harness.aws.clients import Sessions
from harness.config.endpoints import AWS, UNUSED
from harness.config.factory import Factory
from harness.config.plan import RunPlan, read_plan
from harness.core.clock import Clock, SystemClock
from harness.core.errors import HarnessError
from harness.record import runinfo
from harness.telemetry.cloudwatch import reader as cw


def cloudwatch_client(plan: RunPlan, sessions: Sessions) -> Any:
    """A CloudWatch client at the plan's endpoint, signing as the plan says (a few retries, short timeouts)."""
    e = plan.connection.cloudwatch
    session = sessions.get(e.credentials)
    return session.client("cloudwatch", region_name=plan.connection.region, endpoint_url=e.url,
                          config=Config(connect_timeout=5, read_timeout=30, ignore_configured_endpoint_urls=True,
                                        retries={"mode": "standard", "total_max_attempts": 3}))


def run_window(run_dir: Path) -> tuple[float, float]:
    """The run's [start, end] in epoch seconds, from its run.json; a one-line error when it has none."""
    info = runinfo.read(run_dir)
    started, ended = info.get("started_at"), info.get("ended_at")
    if not started or not ended:
        raise HarnessError(f"{run_dir}: run.json has no start and end (a run that did not finish): nothing to "
                           "read CloudWatch for")
    return datetime.fromisoformat(started).timestamp(), datetime.fromisoformat(ended).timestamp()


def collect(plan: RunPlan, run_dir: Path, wait_s: float, say: Callable[[str], None],
            clock: Clock | None = None) -> cw.Reading:
    """Read CloudWatch for the run (waiting at most ``wait_s`` for its data); write cloudwatch.csv and notes."""
    clock = clock or SystemClock()
    start, end = cw.window(*run_window(run_dir))
    sessions = Sessions(plan.connection.region)
    client = cloudwatch_client(plan, sessions)
    clients = Factory(plan, sessions=sessions).clients(total_attempts=2)
    ddb = plan.backend == "dynamodb"
    kw: dict[str, Any] = {"table": plan.resources.table, "dynamodb": clients.dynamodb} if ddb else \
        {"bucket": plan.resources.bucket, "s3": clients.s3}

    def once() -> cw.Reading:
        return cw.read(client, start, end, **kw)

    reading = cw.wait_for(once, end, wait_s, clock.now, clock.sleep, say)
    cw.write_csv(run_dir, reading.rows)
    runinfo.update(run_dir, cloudwatch={"read_at": datetime.fromtimestamp(time.time()).astimezone().isoformat(),
                                        "where": plan.connection.cloudwatch.where, "window": [start, end],
                                        "period_s": cw.PERIOD_S, "datapoints": len(reading.rows),
                                        "notes": reading.notes})
    return reading


def after_run(plan: RunPlan, run_dirs: list[Path], say: Callable[[str], None], clock: Clock | None = None) -> None:
    """An ``--aws`` run: CloudWatch's figures for each test, after a bounded wait that is said."""
    wait = plan.telemetry.cloudwatch_wait_s
    if plan.connection.cloudwatch.kind != AWS:
        return
    if wait <= 0:
        say("harness: CloudWatch not read (--cloudwatch-wait 0): `harness report RUN_DIR --cloudwatch` reads it")
        return
    say(f"harness: reading what AWS measured (CloudWatch): its data lags the load by minutes, so waiting at most "
        f"{wait:g} s (--cloudwatch-wait; `harness report RUN_DIR --cloudwatch` reads it again later)")
    for d in run_dirs:
        try:
            r = collect(plan, d, wait, say, clock)
        except HarnessError as e:
            say(f"harness: CloudWatch: {e}")
            continue
        say(f"harness: CloudWatch: {len(r.rows)} datapoints in {d / cw.CSV}"
            + "".join(f"\nharness: {n}" for n in r.notes))


def for_report(run_dir: str | Path, say: Callable[[str], None] = print) -> cw.Reading:
    """``harness report RUN_DIR --cloudwatch``: read it now (no wait), where the run's plan says."""
    d = Path(run_dir)
    plan = read_plan(d)
    e = plan.connection.cloudwatch
    if e.kind == UNUSED:
        raise HarnessError(f"{d}: the run named no CloudWatch (it reads AWS's figures for an --aws run, or at "
                           "AWS_ENDPOINT_URL_CLOUDWATCH / AWS_ENDPOINT_URL set for `harness run`)")
    say(f"harness: reading CloudWatch at {e.where} for the run's "
        f"{'table ' + plan.resources.table if plan.backend == 'dynamodb' else 'bucket ' + plan.resources.bucket}")
    r = collect(plan, d, 0.0, say)
    say(f"harness: CloudWatch: {len(r.rows)} datapoints in {d / cw.CSV}" + "".join(f"\nharness: {n}" for n in r.notes))
    return r
