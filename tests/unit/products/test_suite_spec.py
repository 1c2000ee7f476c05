"""The suite file: swamp's scenarios by name with their parameters, validated on load; the seeded tree's shape."""

from __future__ import annotations

import textwrap

import pytest

from harness.core.errors import HarnessError
from harness.datastore.backends.base import partition_of
from harness.products.suite import spec as suites
from harness.products.suite import tree
from harness.products.suite.spec import ALL_LAYOUTS, Shape

SWAMP = [  # swamp-club/swamp-extensions datastore/benchmarks/s3_bench.ts, scenarios 1-15, by name
    "Push 1000 files (cold)", "Push 1 modified / 1000", "No-op push (fast path)",
    "Push >200 dirty paths (full walk)", "Pull 1000 files (cold)", "Pull 1 changed / 1000",
    "No-op pull (fast path)", "Scoped pull 1/50 models (partition)", "Writeback partitioned (parallel)",
    "v2: Push 1 modified / 1000", "v2: No-op push (fast path)", "v2: Two-phase no-op (preparePush+commitPush)",
    "v2: Two-phase push 1 modified / 1000", "v2: Pull 1000 files (cold, shard assembly)", "v2: No-op pull (fast path)"]


def test_the_shipped_suite_lists_swamps_scenarios_by_name_and_number():
    s = suites.load("swamp-datastore")
    assert [sc.name for sc in s.scenarios] == SWAMP
    assert [sc.number for sc in s.scenarios] == list(range(1, 16))
    assert (s.shape, s.trials, s.backend) == (Shape(1000, 50, 5120), 5, "s3")
    ops = {sc.number: sc.op for sc in s.scenarios}
    assert {n for n, op in ops.items() if op == "two-phase-push"} == {12, 13}
    assert ops[8] == "scoped-pull" and s.scenarios[7].scope_models == 1
    assert s.scenarios[3].dirty == 201 and s.scenarios[0].dirty is None and s.scenarios[0].fresh == "trial"
    assert s.scenarios[8].phases == ("pushChanged.writeback",)


def test_every_scenario_runs_on_each_backend_and_says_why_where_it_does_not():
    for sc in suites.load("swamp-datastore").scenarios:
        for backend, layouts in suites.LAYOUTS.items():
            assert any(sc.applies(x) for x in layouts), f"{sc.name} runs nowhere on {backend}"
        for layout in ALL_LAYOUTS:
            assert sc.applies(layout) or len(sc.not_applicable[layout]) > 20
        if sc.name.startswith("v2:"):
            assert sc.layouts == ("sharded", "per-model")


def test_quick_is_the_small_shape_two_trials_and_every_scenario():
    q = suites.load("swamp-datastore").quick()
    assert (q.shape, q.trials, q.is_quick, len(q.scenarios)) == (Shape(100, 10, 5120), 2, True, 15)
    assert q.scenarios[3].dirty == 21  # 201 of 1,000 files does not fit in 100: the scenario's quick value
    assert q.with_trials(5).trials == 5


def test_select_by_number_or_name():
    s = suites.load("swamp-datastore")
    assert [x.number for x in s.select("5, 1,Scoped pull 1/50 models (partition)").scenarios] == [1, 5, 8]
    with pytest.raises(HarnessError, match="has no scenario '99'"):
        s.select("99")


def _parse(tmp_path, body: str):
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(body))
    return suites.load(str(p))


GOOD = """
name = "t"
[[scenario]]
name = "Push 1"
op = "push"
dirty = 1
"""


@pytest.mark.parametrize(("body", "message"), [
    (GOOD.replace('dirty = 1', 'dirty = 1\ncolour = "red"'), "scenario 1 (Push 1).colour is not a known key"),
    (GOOD.replace('dirty = 1', 'dirty = -1'), 'dirty must be a count of files or "all"'),
    (GOOD.replace('dirty = 1', 'dirty = 2000'), "dirty = 2000 is more than the 1000 files of the shape"),
    (GOOD.replace('dirty = 1', 'dirty = 1\nlayouts = ["sharded"]'), "must say why the scenario does not apply to"),
    (GOOD.replace('op = "push"', 'op = "pull"'), "dirty is for pushes"),
    (GOOD.replace('dirty = 1', 'dirty = 1\ncache = "cold"'), "a cold cache cannot push into a seeded datastore"),
    (GOOD.replace('op = "push"\ndirty = 1', 'op = "scoped-pull"'), "scope_models (at least 1) goes with"),
    (GOOD.replace('op = "push"', 'op = "fetch"'), "op must be one of push, two-phase-push, pull, scoped-pull"),
    ('name = "t"\n[shape]\nfiles = 5\nmodels = 10\n[[scenario]]\nname = "x"\n', "models (10) is more than files"),
    ('name = "t"\n', "needs at least one [[scenario]]"),
])
def test_a_bad_suite_file_is_one_line_naming_the_key(tmp_path, body, message):
    with pytest.raises(HarnessError) as e:
        _parse(tmp_path, body)
    assert message in str(e.value) and "\n" not in str(e.value) and str(tmp_path) in str(e.value)


def test_unknown_suite_names_the_ones_there_are():
    with pytest.raises(HarnessError, match="unknown suite 'nope': choose one of swamp-datastore"):
        suites.load("nope")


def test_the_tree_is_swamps_seed_shape():
    shape = Shape(1000, 50, 5120)
    files = tree.files(shape)
    assert len(files) == 1000 and len({m for m, _ in files}) == 50 and files[:2] == [(0, 0), (0, 1)]
    assert len(tree.content(shape, 0, 0, "2026-01-01T00:00:00.000Z")) == pytest.approx(5120, abs=80)
    assert tree.path(3, 7).startswith("data/@test/model-type-003/") and tree.path(3, 7).endswith("/file-0007.json")
    assert tree.path(3, 7) == tree.path(3, 7)  # ids are derived, not random: two runs write the same keys
    assert partition_of(tree.path(3, 7), None) == tree.partition(3)


def test_dirty_paths_are_spread_as_swamps_bulk_modify():
    shape = Shape(1000, 50, 5120)
    assert tree.spread(shape, 1) == [(0, 0)]  # modifyOneFile: file-0000 of model 0
    assert tree.spread(shape, 10) == [(m, 0) for m in range(10)]  # one file of each of the first 10 models
    got = tree.spread(shape, 201)  # ceil(201 / 50) = 5 files a model: 40 models, then 1 of the 41st
    assert len(got) == 201 and len(set(got)) == 201
    assert {m for m, _ in got} == set(range(41)) and sum(1 for m, _ in got if m == 40) == 1
    assert len(tree.spread(Shape(100, 10, 5120), 21)) == 21
