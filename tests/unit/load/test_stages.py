"""``[[fleet.stages]]``: a load shape as data, run through Locust's LoadTestShape only when a scenario has one;
and `harness run --rate` and the check flags reaching the plan."""

from __future__ import annotations

from harness.config import scenario
from harness.supervisor.run import SHAPEFILE, locust_command
from tests.support.plans import make_plan

SHAPED = '''[fleet]
workers = 2
arrival = "open"
rate = "2/s"
[[fleet.stages]]
duration = "10s"
[[fleet.stages]]
duration = "5s"
workers = 6
rate = "9/s"
[[fleet.stages]]
duration = "20s"
rate = "1/s"
'''


def test_stages_hold_users_and_rates_and_the_last_one_holds_until_the_harness_stops():
    fleet = scenario.parse({"fleet": {"workers": 2, "arrival": "open", "rate": "2/s", "stages": [
        {"duration": "10s"}, {"duration": "5s", "workers": 6, "rate": "9/s"}, {"duration": "20s", "rate": "1/s"}]}}
    ).fleet
    assert [st.workers for st in fleet.stages] == [2, 6, 6]  # a stage without users keeps the last stage's
    assert fleet.duration_s == 35.0 and fleet.peak_workers == 6  # the stages' total; Locust's -u
    assert [fleet.users_at(t) for t in (0, 9.9, 10, 14.9, 15, 34, 99)] == [2, 2, 6, 6, 6, 6, 6]
    assert [fleet.rate_at(t) for t in (0, 9.9, 10, 15, 99)] == [2.0, 2.0, 9.0, 1.0, 1.0]


def test_only_a_scenario_with_stages_gets_the_shape(tmp_path):
    path = tmp_path / "shaped.toml"
    path.write_text(SHAPED)
    shaped = locust_command(make_plan(str(path)), tmp_path / "plan.json")
    assert shaped[shaped.index("-f") + 1].endswith(f",{SHAPEFILE}")
    assert shaped[shaped.index("-u") + 1] == "6"
    plain = locust_command(make_plan("namespaced"), tmp_path / "plan.json")
    assert str(SHAPEFILE) not in plain[plain.index("-f") + 1]  # the web form keeps its user count


def test_rate_and_check_flags_reach_the_plan():
    plan = make_plan("shared-lock", rate_per_s=12.0, workers=3,
                     checks={"max_p99_wait_s": 5.0, "max_failure_ratio": 0.1, "min_rate_last_window": None})
    sc = plan.scenario
    assert (sc.fleet.arrival, sc.fleet.rate_per_s, plan.locust.users) == ("open", 12.0, 3)
    assert (sc.checks.max_p99_wait_s, sc.checks.max_failure_ratio) == (5.0, 0.1)
    test = plan.for_test(1, users=3, spawn_rate=3.0, run_time_s=None, latency=None)
    assert test.scenario.fleet.arrival == "open"  # every worker's copy carries it


def test_each_of_n_processes_arrives_at_rate_over_n():
    from harness.load.process import open_arrivals

    plan = make_plan("namespaced", rate_per_s=12.0)
    assert open_arrivals(make_plan("namespaced")) is None  # a closed fleet has no arrivals
    for share, rate in ((1.0, 12.0), (0.25, 3.0)):
        q = open_arrivals(plan.for_test(1, users=4, spawn_rate=4.0, run_time_s=None, latency=None,
                                        capacity_share=share))
        assert q is not None and q.schedule.rate_at(0.0) == rate and q.schedule.process == "poisson"
