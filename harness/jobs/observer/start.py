"""An observer from primitives: the layout, where the datastore is, what it may spend (like the probe's ``Target``).

It takes no run plan and no datastore backend, only what a stranger would be
told: the endpoint, the table or bucket, the scenario's layout names, the
namespaces. Its client is a new one from the process's boto3 session: one
attempt a request (a failed read is a gap, not a retry that costs twice), no
accounting hooks, no fidelity layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.config import Config

from harness.core.clock import Clock, SystemClock
from harness.jobs.observer.budget import Allowance, Pacer, allowance
from harness.jobs.observer.dynamodb import DynamoReader
from harness.jobs.observer.layout import Layout
from harness.jobs.observer.observer import ObservedLog, Observer
from harness.jobs.observer.reads import Meter, Sender
from harness.jobs.observer.s3 import S3Reader


@dataclass(frozen=True)
class Where:
    """The endpoint: its URL (None: AWS), region, kind (``aws`` bills by DynamoDB's own figures)."""

    endpoint: str | None
    region: str = "us-east-1"
    kind: str = "embedded"


@dataclass(frozen=True)
class Spend:
    """``[observe]``'s budget, and a stand-in's modelled provisioned read capacity (None: none modelled)."""

    every_s: float = 10.0
    share: float = 0.05
    rate_per_s: float = 25.0
    modelled_read: float | None = None


def client_for(session: Any, service: str, where: Where) -> Any:
    cfg = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=5, read_timeout=30,
                 ignore_configured_endpoint_urls=True, s3={"addressing_style": "path"}, max_pool_connections=4)
    return session.client(service, region_name=where.region, endpoint_url=where.endpoint, config=cfg)


def open_observer(layout: Layout, where: Where, spend: Spend, run_dir: str | Path, session: Any, *,
                  clock: Clock | None = None, client: Any = None, **kw: Any) -> Observer:
    """The observer of one test, its first budget read (DynamoDB: one DescribeTable, counted as its own)."""
    clock = clock or SystemClock()
    client = client or client_for(session, layout.backend, where)
    meter = Meter()

    def allow() -> Allowance:
        described = None
        if layout.backend == "dynamodb" and not spend.modelled_read:
            meter.requests["describe"] += 1
            described = client.describe_table(TableName=layout.table)["Table"]
        return allowance(layout.backend, spend.share, spend.rate_per_s, described=described,
                         modelled_read=spend.modelled_read)

    try:
        first = allow()
    except Exception:  # noqa: BLE001 - no DescribeTable (denied, not there yet): the fixed rate until it answers
        first = allowance(layout.backend, spend.share, spend.rate_per_s)
    pacer = Pacer(first, (where.endpoint or "aws", layout.table or layout.bucket), clock)
    sender = Sender(pacer, meter)
    reader: Any = (DynamoReader(client, layout, sender, clock, billed_by_answer=where.kind == "aws")
                   if layout.backend == "dynamodb" else S3Reader(client, layout, sender, clock))
    return Observer(reader, sender, ObservedLog(run_dir), spend.every_s, clock, allowance=allow, **kw)
