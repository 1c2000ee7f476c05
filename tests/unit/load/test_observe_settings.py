"""``[observe]``: its keys, bad values as one line and exit 2, and what a test's plan tells the observer."""

from __future__ import annotations

import pytest

from harness.cli.main import main
from harness.config import scenario as scenarios
from harness.load.observing import layout_of, namespaces, spend_of
from tests.support.plans import make_plan


def test_the_defaults_and_every_key():
    assert scenarios.load("namespaced").observe.every_s == 10.0
    ob = scenarios.parse({"observe": {"every": "30s", "share": 0.1, "rate": "5/s", "gsi": "swamp",
                                      "s3_index": "monolith", "s3_shards": "swamp"}}).observe
    assert (ob.every_s, ob.share, ob.rate_per_s, ob.gsi, ob.s3_index, ob.s3_shards) == \
        (30.0, 0.1, 5.0, "swamp", "monolith", "swamp")
    off = scenarios.parse({"observe": {"every": "off"}}).observe
    assert not off.on and scenarios.scenario_from_dict(scenarios.parse({}).to_dict()).observe.on


@pytest.mark.parametrize("section,message", [
    ('every = "500ms"', 'observe.every must be at least 1s (or "off"), got \'500ms\''),
    ('every = "soon"', "observe.every must be a duration"),
    ('gsi = "flat"', "observe.gsi is not a layout the observer can read: choose one of legacy, per-model, swamp"),
    ('s3_index = "btree"', "observe.s3_index is not a layout the observer can read: choose one of monolith, sharded"),
    ("share = 1.5", "observe.share must be above 0 and at most 1"),
    ('rate = "fast"', "observe.rate must be a rate like"),
    ('evry = "10s"', "observe.evry is not a known key"),
])
def test_bad_settings_are_one_line_and_exit_2(tmp_path, capsys, section, message):
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "bad"\n[observe]\n{section}\n')
    assert main(["run", str(path), "--no-report", "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"harness: {path}: {message}"), err
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_tests_plan_becomes_the_observers_primitives():
    plan = make_plan("namespaced", workers=4, processes=2)
    assert namespaces(plan, [0, 1]) == ("w0-0", "w0-1", "w1-0", "w1-1")
    assert namespaces(plan, [0]) == ("w0-0", "w0-1", "w0-2", "w0-3")
    layout = layout_of(plan, [0, 1], backend=None)
    assert (layout.gsi, layout.lock_scope, layout.table) == ("per-model", "namespace", plan.resources.table)
    assert spend_of(plan).modelled_read is None  # the scenario's [fidelity] is on-demand: a request rate
    legacy = make_plan("legacy-gsi", workers=3)
    assert namespaces(legacy, [0]) == () and layout_of(legacy, [0], None).gsi == "legacy"
