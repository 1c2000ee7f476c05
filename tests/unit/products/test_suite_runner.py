"""The suite's runner on in-process moto: every scenario on all four layouts, a fresh datastore each, and what each
phase did (its requests are the design's, so they are asserted exactly; times only by how they nest)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from moto import mock_aws

from harness.aws.instrument import instrument
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.products.suite import spec as suites
from harness.products.suite.phases import NOT_ADDITIVE
from harness.products.suite.runner import Runner
from harness.products.suite.spec import ALL_LAYOUTS, Shape
from tests.conftest import SESSION, s3_endpoint

pytestmark = pytest.mark.xdist_group("suite_runner")  # one module-wide run of the suite, shared by its tests
SHAPE = Shape(24, 4, 512)  # 6 files a model


class MotoStores:
    """Tables and buckets on in-process moto, remembered so the test can see each was made fresh and dropped."""

    def __init__(self, ddb, s3, fail_on: str | None = None) -> None:
        self.ddb, self.s3, self.fail_on = ddb, s3, fail_on
        self.made: list[str] = []
        self.dropped: list[str] = []

    def make(self, layout, name):
        if self.fail_on and self.fail_on in name:
            raise RuntimeError(f"cannot make {name}")
        be = DynamoBackend(self.ddb, name, layout) if layout in ("legacy", "per-model") else \
            S3Backend(self.s3, name, layout)
        be.ensure()
        self.made.append(name)
        return be

    def drop(self, backend):
        name = getattr(backend, "table", None) or backend.bucket
        if isinstance(backend, DynamoBackend):
            self.ddb.delete_table(TableName=name)
        else:
            s3_endpoint.empty_and_delete(self.s3, name)
        self.dropped.append(name)


def _suite():
    return replace(suites.load("swamp-datastore").quick(), shape=SHAPE, trials=2)


@pytest.fixture(scope="module")
def ran():
    with mock_aws():
        stores = MotoStores(instrument(SESSION.client("dynamodb")), instrument(SESSION.client("s3")))
        trials: list = []
        outcomes = Runner(_suite(), stores, tag="t0", on_trial=trials.append).run(ALL_LAYOUTS)
        yield outcomes, trials, stores


def _trials(trials, number, layout):
    got = [t for t in trials if t.number == number and t.layout == layout]
    assert len(got) == 2, f"scenario {number} on {layout}: {len(got)} trials"
    return got


def _phase(trial, name):
    found = [p for p in trial.phases if p.phase == name]
    assert len(found) == 1, f"{name} in {[p.phase for p in trial.phases]}"
    return found[0]


def test_every_scenario_runs_where_it_applies_and_is_listed_where_not(ran):
    outcomes, trials, _ = ran
    assert len(outcomes) == 15 * 4
    for o in outcomes:
        if o.scenario.name.startswith("v2:") and o.layout in ("monolith", "legacy"):
            assert o.not_applicable and "v2" in o.not_applicable and not o.trials
        else:
            assert o.error is None and o.not_applicable is None and len(o.trials) == 2, (o.scenario.name, o.layout)


def test_a_fresh_datastore_per_scenario_and_layout_and_per_trial_for_the_cold_push(ran):
    _, _, stores = ran
    assert len(stores.made) == len(set(stores.made)) and sorted(stores.made) == sorted(stores.dropped)
    runs = 9 * 4 + 6 * 2  # scenarios 1-9 on four layouts, the v2 ones on two
    assert len(stores.made) == runs - 4 + 4 * 2  # scenario 1: a datastore per trial (2), not per scenario
    assert {n for n in stores.made if n.startswith("suite-t0-01-")} == {
        f"suite-t0-01-{lay}-t{i}" for lay in ALL_LAYOUTS for i in (1, 2)}


def test_trials_are_interleaved_round_by_round_in_a_shuffled_order(ran):
    _, trials, _ = ran
    assert [t.trial for t in trials] == sorted(t.trial for t in trials)  # every scenario's trial 1 before any 2
    rounds = [[(t.number, t.layout) for t in trials if t.trial == i] for i in (0, 1)]
    assert sorted(rounds[0]) == sorted(rounds[1]) and len(rounds[0]) == 9 * 4 + 6 * 2
    assert rounds[0] != rounds[1] and rounds[0] != sorted(rounds[0])


def test_phases_nest_in_the_total(ran):
    _, trials, _ = ran
    for t in trials:
        inside = sum(p.ms for p in t.phases if p.phase not in NOT_ADDITIVE)
        assert inside <= t.total_ms + 1e-6, (t.scenario, t.layout)
        held = [p for p in t.phases if p.phase == "lock.held"]
        if held:
            assert held[0].ms <= t.total_ms


@pytest.mark.parametrize("layout", [x for x in ALL_LAYOUTS if x != "legacy"])
def test_no_op_pull_is_one_read(ran, layout):
    for number in (7, 15) if layout in ("sharded", "per-model") else (7,):
        for t in _trials(ran[1], number, layout):
            assert [p.phase for p in t.phases] == ["pullChanged.fastpath"]
            assert dict(t.phases[0].work.requests) == ({"GetObject": 1} if layout in ("monolith", "sharded")
                                                       else {"GetItem": 1})


def test_no_op_pull_on_the_legacy_gsi_reads_everything_and_fetches_nothing(ran):
    """The legacy layout has no sequence short cut (swamp's queryAllFileMeta read every file item every time)."""
    for t in _trials(ran[1], 7, "legacy"):
        assert [p.phase for p in t.phases] == ["pullChanged.pullIndex", "pullChanged.walk", "pullChanged.download"]
        assert _phase(t, "pullChanged.pullIndex").work.requests["Query"] >= 1
        assert _phase(t, "pullChanged.download").work.total_requests == 0


# DynamoDB's fenced pulls read the lock item once more after their queries (one sealed state: issue 30's hole 6)
INDEX_COLD = {"monolith": {"GetObject": 2}, "sharded": {"GetObject": 1 + 4},  # the head, then each model's shard
              "per-model": {"GetItem": 3, "Query": 4}, "legacy": {"GetItem": 2, "Query": 1}}


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
def test_cold_pull_reads_the_index_then_every_file(ran, layout):
    for t in _trials(ran[1], 5, layout):
        assert [p.phase for p in t.phases] == ["pullChanged.pullIndex", "pullChanged.walk", "pullChanged.download"]
        assert dict(_phase(t, "pullChanged.pullIndex").work.requests) == INDEX_COLD[layout]
        down = _phase(t, "pullChanged.download")
        assert down.work.total_requests == 24 and down.detail == "pulled=24"
        assert _phase(t, "pullChanged.walk").work.total_requests == 0


INDEX_ONE_CHANGED = {"monolith": 2, "sharded": 2, "per-model": 4, "legacy": 3}


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
def test_pull_one_changed_finds_the_change(ran, layout):
    for t in _trials(ran[1], 6, layout):  # not the fast path: another writer committed a change before the trial
        assert _phase(t, "pullChanged.pullIndex").work.total_requests == INDEX_ONE_CHANGED[layout]
        down = _phase(t, "pullChanged.download")
        assert down.work.total_requests == 1 and down.detail == "pulled=1"


def test_scoped_pull_reads_one_partition_where_the_index_has_them(ran):
    index = {}
    for layout in ALL_LAYOUTS:
        for t in _trials(ran[1], 8, layout):
            assert _phase(t, "pullChanged.download").detail == f"pulled={SHAPE.per_model}"
            i = _phase(t, "pullChanged.pullIndex")
            # S3: the head and the model's shard; DynamoDB: the lock item, (per-model) the registry for the
            # partition's newest commit, the query, the lock item again
            assert i.work.total_requests == {"monolith": 2, "sharded": 2, "per-model": 4, "legacy": 3}[layout]
            index[layout] = i.work.bytes_received
    assert index["monolith"] > 2.5 * index["sharded"]  # the whole monolith against one model's shard
    assert index["legacy"] > 2.5 * index["per-model"]  # every FILE item against one GSI partition


ENTRIES_ONE_MODIFIED = {"monolith": 24, "sharded": 6, "per-model": 1, "legacy": 1}


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
def test_push_one_modified_uploads_one_file_and_writes_the_layouts_index(ran, layout):
    for t in _trials(ran[1], 2, layout):
        assert [p.phase for p in t.phases] == ["lock", "pushChanged.pullIndex", "pushChanged.upload",
                                               "pushChanged.writeback", "release", "lock.held"]
        up = _phase(t, "pushChanged.upload")
        assert up.detail == "pushed=1" and up.work.total_requests == 1
        assert _phase(t, "pushChanged.writeback").detail == f"entries={ENTRIES_ONE_MODIFIED[layout]}"


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
def test_no_op_push_still_commits_an_empty_change(ran, layout):
    """The harness's datastore has no push fast path (swamp's returns before any request): recorded as it is."""
    for t in _trials(ran[1], 3, layout):
        assert _phase(t, "pushChanged.upload").work.total_requests == 0
        wb = _phase(t, "pushChanged.writeback")
        assert wb.detail == "entries=0" and wb.work.total_requests == 1


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
def test_cold_push_uploads_everything(ran, layout):
    for t in _trials(ran[1], 1, layout):
        up = _phase(t, "pushChanged.upload")
        assert up.detail == "pushed=24"
        assert dict(up.work.requests) == ({"PutObject": 24} if layout in ("monolith", "sharded")
                                          else {"BatchWriteItem": 1})
        assert _phase(t, "pushChanged.writeback").detail == "entries=24"


@pytest.mark.parametrize("layout", ["sharded", "per-model"])
def test_two_phase_push_uploads_before_the_lock(ran, layout):
    for t in _trials(ran[1], 13, layout):
        names = [p.phase for p in t.phases]
        assert names == ["preparePush.upload", "lock", "commitPush.pullIndex", "commitPush", "release", "lock.held"]
        held = _phase(t, "lock.held").ms
        assert held >= _phase(t, "commitPush").ms and held < t.total_ms - _phase(t, "preparePush.upload").ms
    for t in _trials(ran[1], 10, layout):  # one lock: the upload is inside it
        assert _phase(t, "lock.held").ms >= _phase(t, "pushChanged.upload").ms + _phase(t, "pushChanged.writeback").ms


def test_a_failing_scenario_is_recorded_and_the_suite_goes_on(aws):
    ddb, s3 = aws
    stores = MotoStores(ddb, s3, fail_on="-02-")
    suite = replace(_suite(), scenarios=tuple(s for s in _suite().scenarios if s.number in (2, 7)))
    outcomes = Runner(suite, stores, tag="t1").run(("sharded",))
    assert [(o.scenario.number, bool(o.error), len(o.trials)) for o in outcomes] == [(2, True, 0), (7, False, 2)]
    assert "cannot make suite-t1-02-sharded" in outcomes[0].error
    assert stores.made == stores.dropped == ["suite-t1-07-sharded"]
