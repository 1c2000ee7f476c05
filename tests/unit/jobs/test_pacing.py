"""Pacing against the throttling model: settle under the ceiling, follow it, share it, back off.

Every job here runs on a ``VirtualClock`` (its time, its threads, and the
throttling model's token buckets): virtual time moves only when every thread
of the job waits on it, so the rates below are counts of items per virtual
second that do not depend on how busy the machine is. Items are 500-byte
PutItems of exactly 1 WCU, so items are write units.
"""

from __future__ import annotations

import random

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from harness.aws.clients import Clients
from harness.aws.endpoints import Endpoints
from harness.aws.fidelity.layer import FidelityConfig, FidelityLayer
from harness.aws.fidelity.throttle import DynamoCapacity
from harness.aws.instrument import instrument
from harness.core.virtual_time import VirtualClock
from harness.core.work import Work
from harness.jobs.pacing.aimd import AIMD, BACKOFF_BASE_S, BACKOFF_CAP_S, backoff
from harness.jobs.pacing.budget import Budgets
from harness.jobs.pacing.ceiling import CeilingWatcher, capacity
from harness.jobs.pacing.engine import Job, Progress
from harness.jobs.pacing.jobs import run_job
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.sources import FillSource
from tests.conftest import SESSION

WCU = 100  # a provisioned table of 100 WCU: ceiling 70 WCU/s
CEILING = 0.7 * WCU


def _setup(vc: VirtualClock, model: DynamoCapacity | None = None, wcu: int = WCU) -> Clients:
    ddb = instrument(SESSION.client("dynamodb", config=Config(retries={"total_max_attempts": 1})))
    model = model or DynamoCapacity(mode="provisioned", read=3 * wcu, write=wcu, burst_s=1)
    FidelityLayer(FidelityConfig(enabled=True, dynamodb=model), clock=vc).install(ddb)
    ddb.create_table(TableName="paced", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PROVISIONED",
                     ProvisionedThroughput={"ReadCapacityUnits": 3 * wcu, "WriteCapacityUnits": wcu})
    return Clients(dynamodb=ddb, s3=None, endpoints=Endpoints("http://moto.local", None, "moto"))


class Timed:
    """The job's items, with the virtual time each one landed (or was throttled)."""

    def __init__(self, source: FillSource, vc: VirtualClock) -> None:
        self.source, self.vc, self.total = source, vc, source.total
        self.landed: list[float] = []
        self.throttled: list[float] = []

    def cost(self, idx: int) -> float:
        return self.source.cost(idx)

    def run(self, idx: int, work: Work) -> None:
        try:
            self.source.run(idx, work)
        except ClientError:
            self.throttled.append(self.vc.elapsed())
            raise
        self.landed.append(self.vc.elapsed())

    def rate(self, start: float, end: float) -> float:
        """Items (= WCU) a second that landed in (start, end] of virtual time."""
        return sum(1 for t in self.landed if start < t <= end) / (end - start)


class Recorder:
    """Progress samples in virtual time: (t, done, throttled, ceiling)."""

    def __init__(self, vc: VirtualClock) -> None:
        self.vc = vc
        self.samples: list[tuple[float, int, int, float]] = []
        self.job: Job | None = None

    def __call__(self, p: Progress) -> None:
        self.samples.append((self.vc.elapsed(), p.done, p.throttled, p.ceiling))

    def ceiling_at(self, t: float) -> float:
        return [s[3] for s in self.samples if s[0] <= t][-1]


def _run(vc, clients, tmp_path, seconds, *, prefix="FILL", hot_key=False, budgets=None, journal=None,
         at=(), refresh_s=60.0):
    rec = Recorder(vc)
    source = Timed(FillSource(clients.dynamodb, "paced", 100_000, item_bytes=500, prefix=prefix, hot_key=hot_key),
                   vc)
    assert source.cost(0) == 1.0
    journal = journal or Journal(tmp_path / f"{prefix}.db")

    def start(job):
        rec.job = job
        vc.at(seconds, job.request_pause, "Paused: test over")

    for t, fn in at:
        vc.at(t, fn)
    state = run_job(f"job-{prefix}", "fill", {"table": "paced", "items": 100_000}, source, clients, journal,
                    clock=vc, threads=vc, budgets=budgets or Budgets(), rng=random.Random(prefix),
                    period_s=0.25, refresh_s=refresh_s, on_progress=rec, on_start=start)
    assert state == "paused"
    assert journal.get(f"job-{prefix}").reason == "Paused: test over"
    return rec, source


def test_settles_between_95_and_100_percent_of_the_ceiling(aws, tmp_path):
    with VirtualClock().running() as vc:
        rec, src = _run(vc, _setup(vc), tmp_path, 8)
    assert rec.samples[-1][3] == pytest.approx(CEILING)
    # the ramp: a quarter of the ceiling at first, +10 % of it per 0.25 s period, so at the ceiling by ~2 s
    assert src.rate(0, 1) < 0.75 * CEILING
    # then the job's bucket and the shared budget (1 s of burst each) hold it at the ceiling
    steady = src.rate(4, 8)
    assert 0.95 * CEILING <= steady <= CEILING * (1 + 1 / 4), steady
    assert src.throttled == [] and rec.job.throttled == 0  # 70 of a 100 WCU table never throttles
    assert rec.job.done == len(src.landed)


def test_follows_a_capacity_halving_within_a_few_periods(aws, tmp_path):
    with VirtualClock().running() as vc:
        clients = _setup(vc, DynamoCapacity(mode="provisioned", read=3 * WCU, write=WCU, scale=10))  # not binding

        def halve():
            clients.dynamodb.update_table(TableName="paced", ProvisionedThroughput={
                "ReadCapacityUnits": 3 * WCU, "WriteCapacityUnits": WCU // 2})

        rec, src = _run(vc, clients, tmp_path, 9, at=[(4.0, halve)], refresh_s=0.5)
    assert rec.ceiling_at(3.9) == pytest.approx(CEILING)
    assert rec.ceiling_at(4.0 + 0.5 + 0.25) == pytest.approx(CEILING / 2)  # re-read within refresh + one tick
    assert 0.95 * CEILING <= src.rate(2.5, 4) <= CEILING * (1 + 1 / 1.5)
    assert 0.95 * 35 <= src.rate(6, 9) <= 35 * (1 + 1 / 3)
    assert src.rate(6, 9) < 0.6 * src.rate(2.5, 4)


def test_two_jobs_on_one_table_share_one_ceiling(aws, tmp_path):
    budgets = Budgets()
    results: dict[str, tuple[Recorder, Timed]] = {}
    with VirtualClock().running() as vc:
        clients = _setup(vc)
        journal = Journal(tmp_path / "shared.db")

        def one(prefix):
            results[prefix] = _run(vc, clients, tmp_path, 8, prefix=prefix, budgets=budgets, journal=journal)

        vc.start(one, "A", name="job-A")  # a crash in either job thread fails the test (re-raised here)
        vc.start(one, "B", name="job-B")
        vc.sleep(10)
    assert set(results) == {"A", "B"}
    a, b = results["A"][1], results["B"][1]
    together = a.rate(4, 8) + b.rate(4, 8)
    assert 0.95 * CEILING <= together <= CEILING * (1 + 1 / 4), together  # one ceiling, not two
    assert a.rate(4, 8) > 0.25 * CEILING and b.rate(4, 8) > 0.25 * CEILING  # both make progress
    assert not a.throttled and not b.throttled


def test_hot_partition_below_the_ceiling_slows_the_job_down(aws, tmp_path):
    # one partition key; the partition takes 30 WCU/s while the table's ceiling is 70
    with VirtualClock().running() as vc:
        clients = _setup(vc, DynamoCapacity(mode="provisioned", read=3 * WCU, write=WCU, partition_write=30,
                                            burst_s=1))
        rec, src = _run(vc, clients, tmp_path, 8, hot_key=True)
    assert rec.job.aimd.cuts >= 1 and rec.job.throttled == len(src.throttled) > 0
    first = src.throttled[0]  # the first throttle: when the partition's 1 s of credit and its refill ran out
    assert sum(1 for t in src.landed if t <= first) == pytest.approx(30 + 30 * first, abs=2)
    assert src.rate(4, 8) <= 30 * (1 + 1 / 4)  # the partition's own 30 WCU/s and its 1 s of burst
    assert src.rate(4, 8) >= 30 * 0.5
    throttled_share = len(src.throttled) / (len(src.throttled) + len(src.landed))
    assert throttled_share < 0.15  # it slowed down instead of retrying at full speed


class Scripted:
    """Items that are throttled a given number of times, then land; every attempt is logged."""

    def __init__(self, total: int, throttles: dict[int, int], vc: VirtualClock) -> None:
        self.total, self.throttles, self.vc = total, dict(throttles), vc
        self.attempts: list[tuple[float, int]] = []

    def cost(self, idx: int) -> float:
        return 1.0

    def run(self, idx: int, work: Work) -> None:
        self.attempts.append((self.vc.elapsed(), idx))
        if self.throttles.get(idx, 0) > 0:
            self.throttles[idx] -= 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, "PutItem")


def _job(vc, tmp_path, source, rng, ceiling_wcu=1000.0):
    journal = Journal(tmp_path / "j.db")
    journal.create("j", "scripted", {}, source.total, None, None)
    watcher = CeilingWatcher(lambda: {"ProvisionedThroughput": {"WriteCapacityUnits": ceiling_wcu}}, "write", vc)
    return Job("j", source, journal, watcher, ("t",), clock=vc, threads=vc, budgets=Budgets(), rng=rng), journal


def test_a_throttled_item_waits_its_jittered_backoff_then_lands(tmp_path):
    """Item 0 is throttled three times: three waits drawn under 50, 100, 200 ms, one halving, then it lands."""
    with VirtualClock().running() as vc:
        source = Scripted(1, {0: 3}, vc)
        job, journal = _job(vc, tmp_path, source, random.Random(7))
        assert job.run() == "done"
    twin = random.Random(7)
    expected = [backoff(r, twin) for r in range(3)]  # the engine's rng draws exactly these, in order
    assert [s for s in vc.sleeps if s in expected] == expected
    assert all(0 <= d <= BACKOFF_BASE_S * 2 ** r for r, d in enumerate(expected))
    times = [t for t, _ in source.attempts]
    assert len(times) == 4  # three throttled tries and the one that landed
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(gap >= d - 1e-6 for gap, d in zip(gaps, expected, strict=True))  # each retry only after its wait
    assert job.throttled == 3 and job.done == 1 and job.aimd.cuts == 1  # halved once a period, not per throttle
    assert journal.get("j").state == "done" and journal.done_indexes("j") == {0}


def test_backoff_is_full_jitter_doubling_to_five_seconds():
    rng = random.Random(3)
    for retry in range(12):
        bound = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** retry)
        draws = [backoff(retry, rng) for _ in range(400)]
        assert all(0 <= d <= bound for d in draws)
        assert max(draws) > 0.9 * bound and min(draws) < 0.1 * bound  # spread over the whole range


def test_aimd_halves_once_a_period_and_grows_only_when_quiet_and_fast():
    a = AIMD(ceiling=100, period_s=1.0)
    assert a.rate == 25 and a.concurrency == 2
    a.tick(0.0)
    a.on_success(5.0)
    a.tick(1.0)
    assert a.rate == 35 and a.concurrency == 3 and a.baseline_ms == 5.0
    assert a.on_throttle(1.2) and a.rate == 17.5 and a.concurrency == 1
    assert not a.on_throttle(1.5) and a.rate == 17.5  # sent at the old rate: no second cut in the period
    a.tick(2.0)
    assert a.rate == 17.5  # a throttled period does not grow
    a.on_success(6.0)
    a.tick(3.0)
    assert a.rate == 27.5
    a.on_success(100.0)  # much slower than at the start (x3 and by more than 25 ms): growth stops
    a.tick(4.0)
    assert a.rate == 27.5
    a.on_success(7.0)  # 2 ms slower is noise, not a struggling table
    a.tick(5.0)
    assert a.rate == 37.5
    a.set_ceiling(30)
    assert a.rate == 30 and a.ceiling == 30


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
