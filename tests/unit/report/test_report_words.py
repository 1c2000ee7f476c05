"""The words a person reads once: how the rate moved, CPU samples, which forecasts reach the findings' sentences."""

from __future__ import annotations

from harness.metrics.bound import Resource, describe
from harness.report.run.findings import worth_saying
from harness.report.run.words import cpu_samples, rate_line
from harness.report.show import shape_words


def test_a_run_that_fell_and_held_is_not_called_flat():
    s = shape_words("flat", True, 4.69, 0.815, 0.82)
    assert s == "fell x5.75, then held at the floor" and "flat" not in s
    assert shape_words("still falling", True, 4.0, 1.0, 1.0) == "fell x4 and was still falling at the end"
    assert shape_words("recovering", True, 4.0, 1.0, 2.0) == "fell x4, then recovered to x2 the floor"
    assert shape_words("rising", False, 1.0, 1.0, 1.5) == "rose x1.5"
    assert shape_words("flat", False, 5.35, 2.94, 2.94).startswith("within the noise")
    assert shape_words("stalled", False, 1.0, 0.0, 0.0).startswith("stalled")
    assert shape_words("flat", True, 3.0, 0.0, 0.0) == "fell to no successful iteration, then held at the floor"


def _level(t0, rate):
    return {"t0": t0, "t1": t0 + 5, "rate": rate, "lo": rate * 0.8, "hi": rate * 1.2}


def test_the_verdicts_rate_names_the_lowest_only_between_the_start_and_the_end():
    lv = [_level(0, 4.69), _level(5, 0.815), _level(10, 0.82)]
    f = {"fleet": {"levels": lv, "floor_index": 1, "shape": "flat", "degraded": True, "start_rate": 4.69,
                   "floor_rate": 0.815, "end_rate": 0.82}}
    line = rate_line(f)
    assert "at the lowest" in line and line.endswith(": fell x5.75, then held at the floor.")
    assert "shape" not in line
    f["fleet"].update(levels=lv[:1] + lv[2:], floor_index=1)
    assert "at the lowest" not in rate_line(f)


def test_too_few_cpu_samples_are_said_plainly():
    assert cpu_samples(0.0, 1) == "from 1 CPU sample only, too few to tell how often it was at 90 %"
    assert cpu_samples(0.0, 40) == "never at 90 % in 40 samples"
    assert cpu_samples(0.25, 40) == ">= 90 % in 25 % of 40 samples"
    one = describe(Resource("generator", "local", 0.2, evidence={"samples": 1, "saturated_share": 0.0}))
    assert "1 samples" not in one and "0 % of" not in one and "too few" in one


def _key(multiple: float, share: float = 0.6, within: bool = False) -> dict:
    return {"kind": "partition", "within_run": within, "share_of_modelled": share,
            "fleet_multiple_to_limit": multiple}


def test_forecasts_from_a_short_run_or_far_past_the_fleet_stay_out_of_the_sentences():
    assert not worth_saying(_key(97.9), data_s=6.0)  # a 6-second test's "throttles at 97.9x this fleet"
    assert not worth_saying(_key(97.9), data_s=300.0)  # past 10x the fleet
    assert not worth_saying(_key(5.0), data_s=20.0)  # under 30 s of data
    assert worth_saying(_key(5.0), data_s=300.0)
    assert worth_saying(_key(2.0, within=True), data_s=6.0)  # it throttled in this run: a fact, not a forecast
    item = {"kind": "item size", "growing": True, "slowing": False, "within_run": False}
    assert worth_saying(item, 60.0) and not worth_saying(item, 10.0)
