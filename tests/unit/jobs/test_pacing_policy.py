"""The failure policy's three rules, with the exact messages, through the real engine (on virtual time)."""

from __future__ import annotations

import random

from botocore.exceptions import ClientError

from harness.core.virtual_time import VirtualClock
from harness.jobs.pacing.budget import Budgets
from harness.jobs.pacing.ceiling import CeilingWatcher
from harness.jobs.pacing.engine import Job
from harness.jobs.pacing.journal import Journal
from harness.jobs.pacing.policy import FailurePolicy


def _err(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, "PutItem")


class Scripted:
    """Items that fail as told: ``fail(idx)`` returns an error code or None."""

    def __init__(self, total, fail):
        self.total, self.fail, self.ran = total, fail, []

    def cost(self, idx):
        return 1.0

    def run(self, idx, work):
        self.ran.append(idx)
        code = self.fail(idx)
        if code:
            raise _err(code)


def _run(tmp_path, source):
    """Run the job to its end on a virtual clock (a crash in any of its threads fails the test)."""
    journal = Journal(tmp_path / "j.db")
    journal.create("j", "scripted", {}, source.total, None, None)
    with VirtualClock().running() as vc:
        watcher = CeilingWatcher(lambda: {"ProvisionedThroughput": {"WriteCapacityUnits": 100_000}}, "write", vc)
        job = Job("j", source, journal, watcher, ("t",), clock=vc, threads=vc, budgets=Budgets(), period_s=0.05)
        state = job.run()
    return state, job, journal


def test_too_many_errors_pauses(tmp_path):
    rng = random.Random(1)
    source = Scripted(5000, lambda i: "InternalServerError" if rng.random() < 0.35 else None)
    state, job, journal = _run(tmp_path, source)
    assert state == "paused"
    row = journal.get("j")
    assert row.state == "paused" and row.reason == "Paused: too many errors"
    assert row.done < 5000 and len(source.ran) < 5000  # it stopped early and kept its place
    assert len(journal.done_indexes("j")) == row.done


def test_first_50_items_rejected_fails(tmp_path):
    source = Scripted(500, lambda i: "ValidationException")
    state, job, journal = _run(tmp_path, source)
    assert state == "failed"
    assert journal.get("j").reason == "DynamoDB rejected the first 50 items"
    assert len(source.ran) <= 50 + job.aimd.max_concurrency


def test_expired_credentials_and_access_denied_pause_with_that_reason(tmp_path):
    for code, reason in (("ExpiredTokenException", "Paused: credentials expired"),
                         ("AccessDeniedException", "Paused: access denied")):
        source = Scripted(300, lambda i, c=code: c if i >= 100 else None)
        state, job, journal = _run(tmp_path / code, source)
        assert state == "paused"
        assert journal.get("j").reason == reason
        assert 100 <= journal.get("j").done < 300


def test_one_in_five_is_the_boundary():
    p = FailurePolicy()
    assert all(p.record(True) is None for _ in range(400))
    assert all(p.record(False, "InternalServerError") is None for _ in range(100))  # exactly one in five
    assert p.record(False, "InternalServerError").reason == "Paused: too many errors"


def test_a_few_invalid_items_among_good_ones_do_not_fail_the_job():
    p = FailurePolicy()
    verdicts = [p.record(i % 10 != 0, None if i % 10 else "ValidationException") for i in range(100)]
    assert not any(verdicts)
