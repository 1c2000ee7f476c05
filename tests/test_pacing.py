"""Pacing against the throttling model: settle under the ceiling, follow it, share it, back off."""

from __future__ import annotations

import threading
import time

import boto3
import pytest
from botocore.config import Config

from harness.aws.clients import Clients
from harness.aws.endpoints import Endpoints
from harness.aws.fidelity.layer import Fidelity, FidelityConfig
from harness.aws.fidelity.throttle import DynamoCapacity
from harness.aws.instrument import instrument
from harness.pacing.budget import Budgets
from harness.pacing.ceiling import capacity
from harness.pacing.engine import Job, Progress
from harness.pacing.jobs import run_job
from harness.pacing.journal import Journal
from harness.pacing.sources import FillSource

WCU = 100  # a provisioned table of 100 WCU: ceiling 70 WCU/s


def _setup(model: DynamoCapacity | None = None, wcu: int = WCU) -> Clients:
    ddb = instrument(boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 1})))
    model = model or DynamoCapacity(mode="provisioned", read=3 * wcu, write=wcu, burst_s=1)
    Fidelity(FidelityConfig(enabled=True, dynamodb=model)).install(ddb)
    ddb.create_table(TableName="paced", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PROVISIONED",
                     ProvisionedThroughput={"ReadCapacityUnits": 3 * wcu, "WriteCapacityUnits": wcu})
    return Clients(dynamodb=ddb, s3=None, endpoints=Endpoints("http://moto.local", None, "moto"))


class Recorder:
    """Progress samples, and the job, so a test can stop it and measure its rate over a window."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int, int, float]] = []
        self.job: Job | None = None

    def __call__(self, p: Progress) -> None:
        self.samples.append((time.monotonic(), p.done, p.throttled, p.ceiling))

    def rate(self, last_s: float) -> float:
        end = self.samples[-1]
        start = next(s for s in self.samples if s[0] >= end[0] - last_s)
        return (end[1] - start[1]) / (end[0] - start[0])

    def throttled_share(self) -> float:
        end = self.samples[-1]
        return end[2] / max(1, end[1] + end[2])


def _run(clients, tmp_path, seconds, *, prefix="FILL", hot_key=False, budgets=None, journal=None,
         at=None, refresh_s=60.0):
    rec = Recorder()
    source = FillSource(clients.dynamodb, "paced", 100_000, item_bytes=500, prefix=prefix, hot_key=hot_key)
    journal = journal or Journal(tmp_path / f"{prefix}.db")

    def start(job):
        rec.job = job
        if budgets is not None:
            job.budget.leave(job.id)
            job.budget = budgets.get(("moto", "paced", "write", None), job.clock)
            job.budget.set(job.id, job.aimd.ceiling)
        threading.Timer(seconds, job.request_pause, args=("Paused: test over",)).start()
        for t, fn in at or []:
            threading.Timer(t, fn).start()

    state = run_job(f"job-{prefix}", "fill", {"table": "paced", "items": 100_000}, source, clients, journal,
                    period_s=0.25, refresh_s=refresh_s, on_progress=rec, on_start=start)
    assert state == "paused"
    return rec


def test_settles_between_90_and_100_percent_of_the_ceiling(aws, tmp_path):
    rec = _run(_setup(), tmp_path, 8)
    assert rec.samples[-1][3] == pytest.approx(0.7 * WCU)
    assert 0.9 * 70 <= rec.rate(4) <= 1.0 * 70 * 1.03
    assert rec.throttled_share() < 0.01


def test_follows_a_capacity_halving_within_a_few_periods(aws, tmp_path):
    clients = _setup(DynamoCapacity(mode="provisioned", read=3 * WCU, write=WCU, scale=10))  # model not binding

    def halve():
        clients.dynamodb.update_table(TableName="paced", ProvisionedThroughput={
            "ReadCapacityUnits": 3 * WCU, "WriteCapacityUnits": WCU // 2})

    rec = _run(clients, tmp_path, 9, at=[(4.0, halve)], refresh_s=0.5)
    assert rec.samples[-1][3] == pytest.approx(35)
    assert 0.8 * 35 <= rec.rate(3) <= 35 * 1.05


def test_two_jobs_on_one_table_share_one_ceiling(aws, tmp_path):
    clients = _setup()
    budgets = Budgets()
    journal = Journal(tmp_path / "shared.db")
    recs: list[Recorder] = []

    def one(prefix):
        recs.append(_run(clients, tmp_path, 8, prefix=prefix, budgets=budgets, journal=journal))

    threads = [threading.Thread(target=one, args=(p,)) for p in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    together = sum(r.rate(4) for r in recs)
    assert together <= 70 * 1.05
    assert all(r.rate(4) > 10 for r in recs)  # both make progress


def test_hot_partition_below_the_ceiling_slows_the_job_down(aws, tmp_path):
    # one partition key; the partition takes 30 WCU/s while the table's ceiling is 70
    clients = _setup(DynamoCapacity(mode="provisioned", read=3 * WCU, write=WCU, partition_write=30, burst_s=1))
    rec = _run(clients, tmp_path, 8, hot_key=True)
    assert rec.rate(4) <= 30 * 1.15
    assert rec.rate(4) >= 30 * 0.5
    assert rec.throttled_share() < 0.15  # it slowed down instead of retrying at full speed
    assert rec.job.aimd.cuts >= 1


def test_ceiling_from_describe_table():
    prov = {"BillingModeSummary": {"BillingMode": "PROVISIONED"},
            "ProvisionedThroughput": {"WriteCapacityUnits": 1000, "ReadCapacityUnits": 3000}}
    assert capacity(prov, "write") == 1000 and capacity(prov, "read") == 3000
    od = {"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
          "WarmThroughput": {"WriteUnitsPerSecond": 8000, "ReadUnitsPerSecond": 24000},
          "OnDemandThroughput": {"MaxWriteRequestUnits": 5000, "MaxReadRequestUnits": -1}}
    assert capacity(od, "write") == 5000 and capacity(od, "read") == 24000
    assert capacity({"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"}}, "write") == 4000
    assert capacity({}, "read") == 12000
    gsi = {"GlobalSecondaryIndexes": [{"IndexName": "gsi1", "ProvisionedThroughput": {"ReadCapacityUnits": 500}}],
           "ProvisionedThroughput": {"ReadCapacityUnits": 3000}}
    assert capacity(gsi, "read", "gsi1") == 500
