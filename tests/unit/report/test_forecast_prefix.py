"""A run's first T seconds as a run of its own (``harness/report/forecast/prefix.py``, issue 59): the cut keeps
what had been recorded by T, and the cut long run forecasts as a separate short run of the same fleet does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.report.forecast.horizon import parse
from harness.report.forecast.prefix import prefix
from harness.report.load import open_run
from harness.report.run.build import findings_of
from harness.report.series import run_span
from tests.support.forecast_runs import findings_at, prefix_against, simulate, write_run
from tests.support.synthetic import make_run


def _const(v: float):
    return lambda t: v + 0 * t


def test_the_cut_keeps_what_had_been_recorded_by_then(tmp_path):
    path = make_run(tmp_path / "r", workers=4, duration_s=360.0, rate=_const(2.0), seed=3,
                    probe=_const(5.0), generator={"local": _const(40.0)}, history=True, lock_history="per-user")
    run = open_run(path)
    t0 = run_span(run.info, run.rows).t0
    cut = prefix(run, 120.0)
    end = t0 + pd.Timedelta(seconds=120)
    ended = run.rows["ts_end"] <= end
    assert 0 < len(cut.rows) == int(ended.sum()) < len(run.rows)
    assert cut.rows["ts_end"].max() <= end and (run.rows.loc[~ended, "ts_end"] > end).all()
    for name in ("probes", "generator", "users"):
        before, after = getattr(run, name), getattr(cut, name)
        assert before is not None and 0 < len(after) < len(before), name
        assert after["ts"].max() <= end, name
    assert 0 < len(cut.locks) < len(run.locks)
    assert np.nanmin(cut.locks[["started_ms", "invoke_ms"]].to_numpy(), axis=1).max() <= end.timestamp() * 1000
    # the report sees a run 120 s long; the original run is untouched
    f = findings_of(cut)
    assert f["duration_s"] == pytest.approx(120.0, abs=0.01) and f["successes"] == int(cut.rows["ok"].sum())
    assert run_span(run.info, run.rows).seconds == pytest.approx(360.0, abs=1.0)
    assert prefix(run, 900.0) is run
    with pytest.raises(ValueError):
        prefix(run, 0.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_long_runs_first_two_minutes_forecast_as_a_two_minute_run_of_the_same_fleet(tmp_path, seed):
    """The simulation is the same fleet whatever its length (one seed, the same iterations in the same order):
    the 10-minute run's first 120 s is the 2-minute run but for the few iterations that straddle 120 s, so their
    forecasts at the long run's end level agree within a few per cent, and both land near that level."""
    long_rows = simulate(workers=3, duration_s=600.0, seed=seed)
    short_rows = simulate(workers=3, duration_s=120.0, seed=seed)
    long = write_run(tmp_path / "long", long_rows, workers=3, duration_s=600.0)
    short = write_run(tmp_path / "short", short_rows, workers=3, duration_s=120.0)
    own, lv = prefix_against(long, 120.0)
    sep = findings_at(short, f"{(lv['t0'] + lv['t1']) / 2:.1f}s")["forecast"]
    assert own["basis"] == sep["basis"] == "work"
    assert own["rate"]["point"] == pytest.approx(sep["rate"]["point"], rel=0.03)
    assert abs(float(lv["rate"]) - own["rate"]["point"]) <= 0.15 * own["rate"]["point"]
    # a prefix is a real cut: the same run read at 300 s forecasts from more of the run (a different anchor)
    later = findings_of(prefix(open_run(long), 300.0), horizon=parse("600s"))["forecast"]
    assert later["anchor"]["t1"] == pytest.approx(300.0, abs=0.01) and own["anchor"]["t1"] == pytest.approx(120.0)
