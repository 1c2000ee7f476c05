"""Each step's calls and the time inside them land in the row: the report splits growth by them."""

from __future__ import annotations

import time

from harness.core.work import Work
from harness.load.drivers.model import summarize
from harness.record.schema import COLUMNS, STEP_COLUMNS, STEP_REQUEST_COLUMNS
from tests.conftest import make_backend, make_store

SLOW_S = 0.02


def test_every_step_has_request_columns_in_the_schema():
    for step in STEP_COLUMNS:
        n, ms = STEP_REQUEST_COLUMNS[step]
        assert n in COLUMNS and ms in COLUMNS
    assert "pull_queries" in COLUMNS


def test_a_slow_call_is_timed_into_its_own_step(aws):
    ddb, _ = aws
    be = make_backend("per-model", aws)
    store, other = make_store(be, "w1"), make_store(be, "w1", holder="o")
    store.sync_run("m0", "get_uptime", 100, [])  # the registry and the lock item exist from here on
    other.sync_run("m1", "get_uptime", 100, [])  # so the next pull has a changed partition to query

    def slow(**_):
        time.sleep(SLOW_S)

    ddb.meta.events.register("before-send.dynamodb.Query", slow, unique_id="test-slow-query")
    try:
        steps: list = []
        store.sync_run("m0", "get_uptime", 100, steps)
    finally:
        ddb.meta.events.unregister("before-send.dynamodb.Query", unique_id="test-slow-query")
    row = summarize(steps)
    pull = next(s for s in steps if s.name == "pull")
    queries = pull.work.requests["Query"]
    assert queries >= 1 and row["pull_queries"] == queries
    assert row["pull_requests"] == pull.work.total_requests
    # every Query slept SLOW_S inside its call: the pull's request time holds at least that ...
    assert row["pull_request_ms"] >= queries * SLOW_S * 1000
    # ... and each step's own calls stay in its own columns: the commit's (made one after another) fit in its time
    commit = next(s for s in steps if s.name == "commit")
    assert row["commit_requests"] == commit.work.total_requests > 0
    assert 0 < row["commit_request_ms"] <= row["commit_ms"]


def test_request_time_is_summed_over_concurrent_calls():
    a, b = Work(request_ms=3.0), Work(request_ms=4.5, queries=2)
    a.add(b)
    assert a.request_ms == 7.5 and a.queries == 2
