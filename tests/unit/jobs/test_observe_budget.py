"""The observer's budget: where its figure comes from, how often a costly read is taken, gaps said once.

FakeClock throughout: the bucket, the intervals and the sleeps all run on it, so the numbers are exact.
"""

from __future__ import annotations

import csv

import pytest
from botocore.exceptions import ClientError

from harness.core.clock import FakeClock
from harness.jobs.observer.budget import READ_UNITS, REQUESTS, Allowance, Pacer, allowance, intervals
from harness.jobs.observer.observer import ObservedLog, Observer
from harness.jobs.observer.reads import Meter, Sender


def test_the_budget_is_a_share_of_read_capacity_where_there_is_one_else_a_request_rate():
    assert allowance("s3", 0.05, 25).as_dict() == {"unit": REQUESTS, "rate": 25, "capacity": None,
                                                  "source": "a fixed 25 requests/s, on S3"}
    modelled = allowance("dynamodb", 0.05, 25, modelled_read=400)
    assert (modelled.unit, modelled.rate, modelled.capacity) == (READ_UNITS, 20.0, 400)
    table = {"BillingModeSummary": {"BillingMode": "PROVISIONED"},
             "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 10},
             "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "ProvisionedThroughput": {"ReadCapacityUnits": 400}}]}
    a = allowance("dynamodb", 0.05, 25, described=table)
    assert (a.unit, a.rate, a.capacity) == (READ_UNITS, 20.0, 400.0)  # the lower of the table's and its GSI's
    assert "DescribeTable" in a.source
    on_demand = {"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
                 "WarmThroughput": {"ReadUnitsPerSecond": 12000}}
    assert allowance("dynamodb", 0.05, 25, described=on_demand).unit == REQUESTS


def test_a_group_that_outspends_its_share_is_taken_less_often_the_cheap_ones_keep_their_pace():
    assert intervals({"locks": 3, "ns": 5}, rate=20, every_s=1) == {"locks": 1, "ns": 1}
    got = intervals({"locks": 2, "FILE": 400}, rate=20, every_s=10)  # 200 units a round's budget
    assert got["locks"] == 10 and got["FILE"] == pytest.approx(10 * 400 / 198, abs=0.1)
    assert intervals({"FILE": 1e9}, rate=1, every_s=1)["FILE"] == 60  # at most 60 intervals apart


class Costly:
    """A reader: ``big`` bills ``units`` a sample in pages of 10; ``small`` bills 1; ``fail`` raises ``error``."""

    def __init__(self, send: Sender, units: float, error: Exception | None = None) -> None:
        self.send, self.units, self.error = send, units, error

    def groups(self) -> list[str]:
        return ["small", "big"] + (["fail"] if self.error else [])

    def read(self, group: str) -> list[tuple[str, str, float]]:
        if group == "fail":
            raise self.error
        pages = 1 if group == "small" else int(self.units // 10)
        for _ in range(pages):
            self.send.send(lambda: {}, lambda o, g=group: 1.0 if g == "small" else 10.0, lambda o: 0)
        return [("gsi_items", group, pages)]


def make(tmp_path, clock, rate=5.0, units=100.0, error=None, unit=READ_UNITS):
    pacer = Pacer(Allowance(unit, rate, None, "test"), ("t",), clock)
    send = Sender(pacer, Meter())
    said: list[str] = []
    obs = Observer(Costly(send, units, error), send, ObservedLog(tmp_path), 1.0, clock, say=said.append,
                   pause=clock.sleep)
    return obs, said


def rows(tmp_path):
    with (tmp_path / "observed.csv").open() as f:
        return list(csv.DictReader(f))


def test_the_observer_never_spends_faster_than_its_budget_and_says_at_what_interval(tmp_path):
    clock = FakeClock()
    obs, _ = make(tmp_path, clock, rate=5.0, units=100.0)
    start = clock.now()
    while clock.now() - start < 300:
        obs.step()
        clock.sleep(max(0.0, min(obs.due.values()) - clock.now()))
    spent = obs.pacer.spent
    assert spent <= 5.0 * (clock.now() - start) + 5.0  # one second's burst at most above the rate
    assert obs.interval["small"] == 1.0 and obs.interval["big"] >= 19  # 100 units at 5/s: every 20 s or so
    # the big one is paced over ~20 s of its own budget each time, the loop's other reads wait behind it
    assert 10 <= obs.samples["big"] <= 16 and obs.samples["small"] >= 5 * obs.samples["big"]
    said = {r["key"]: float(r["value"]) for r in rows(tmp_path) if r["what"] == "observer_interval_s"}
    assert said["big"] == obs.interval["big"]


@pytest.mark.parametrize("code,backs_off", [("ProvisionedThroughputExceededException", True),
                                            ("AccessDeniedException", False)])
def test_a_failed_read_is_a_gap_said_once_and_the_others_go_on(tmp_path, code, backs_off):
    clock = FakeClock()
    error = ClientError({"Error": {"Code": code, "Message": "no"}}, "Query")
    obs, said = make(tmp_path, clock, rate=50.0, units=10.0, error=error)
    for _ in range(5):
        obs.step()
        clock.sleep(1.0)
    assert len(said) == 1 and code in said[0] and "gap" in said[0]
    gaps = [r for r in rows(tmp_path) if r["what"] == "gap"]
    assert [r["value"] for r in gaps] == [code] * obs.gaps["fail"] and obs.gaps["fail"] >= 2
    assert obs.samples["small"] == 5 and obs.samples["big"] == 5  # the others were read every time
    assert (obs.backoff["fail"] > 1) is backs_off


def test_the_last_sample_ends_at_its_deadline_even_in_debt(tmp_path):
    clock = FakeClock()
    obs, _ = make(tmp_path, clock, rate=1.0, units=1000.0)
    obs.pacer.charge(10_000)  # deep in debt: its next request would wait hours
    assert obs.sample("big", deadline=clock.now() + 10) is False
    assert [r["value"] for r in rows(tmp_path) if r["what"] == "gap"] == ["TimeoutError"]
    assert clock.now() <= 1_700_000_000.0 + 11
