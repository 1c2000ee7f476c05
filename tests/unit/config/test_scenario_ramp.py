"""``[fleet] ramp``: users start evenly over a duration, with the scenario's fleet or the one `--workers` gives."""

from __future__ import annotations

import pytest

from harness.config import scenario
from harness.core.errors import HarnessError
from harness.supervisor.run import locust_command
from tests.support.plans import make_plan


def test_ramp_sets_the_spawn_rate_from_the_fleet():
    sc = scenario.parse({"fleet": {"workers": 6, "ramp": "3s"}}, "x.toml")
    assert (sc.fleet.ramp_s, sc.fleet.spawn_rate) == (3.0, 2.0)
    assert sc.with_overrides(workers=12).fleet.spawn_rate == 4.0  # --workers keeps the ramp's length
    assert sc.with_overrides(workers=12, spawn_rate=1.0).fleet.spawn_rate == 1.0  # --spawn-rate wins
    flat = scenario.parse({"fleet": {"workers": 6}}, "x.toml")
    assert flat.fleet.ramp_s == 0.0 and flat.with_overrides(workers=12).fleet.spawn_rate == 12.0  # as before


@pytest.mark.parametrize("fleet,message", [
    ({"ramp": "5s", "spawn_rate": 2}, "fleet.ramp and fleet.spawn_rate both set how fast users start"),
    ({"ramp": "soon"}, "fleet.ramp must be a duration"),
    ({"ramp": "-2s"}, "fleet.ramp must be a"),
])
def test_a_bad_ramp_is_one_line_naming_the_key(fleet, message):
    with pytest.raises(HarnessError, match=message) as e:
        scenario.parse({"fleet": fleet}, "x.toml")
    assert str(e.value).startswith("x.toml: ") and "\n" not in str(e.value)


def test_the_ramp_reaches_locust_through_the_plan(tmp_path):
    path = tmp_path / "ramped.toml"
    path.write_text('[fleet]\nworkers = 8\nramp = "4s"\n')
    plan = make_plan(str(path))
    cmd = locust_command(plan, tmp_path / "plan.json")
    assert cmd[cmd.index("-u") + 1:cmd.index("-u") + 4] == ["8", "-r", "2"]
    assert make_plan(str(path), workers=4).locust.spawn_rate == 1.0
    test = plan.for_test(1, users=8, spawn_rate=plan.locust.spawn_rate, run_time_s=None, latency=None)
    assert test.scenario.fleet.ramp_s == 4.0  # every worker's copy of the scenario carries it
