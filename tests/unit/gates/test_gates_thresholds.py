"""Thresholds on built rows with known answers: each kind on each side of its limit, one that straddles it,
the four named checks of before, and malformed expressions (one line, exit 2, before anything starts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.cli.main import main
from harness.config import scenario as scenarios
from harness.core.errors import HarnessError
from harness.gates import expr
from harness.gates.judge import LockShare, Observed, judge
from harness.report.run import checks

T0 = pd.Timestamp("2026-01-01T00:00:00Z")


def rows(n: int = 400, seconds: float = 100.0, commit_ms: float | np.ndarray = 100.0, failed: int = 0,
         kind: str = "throttled", files: int = 3, wait_ms: float | None = None, seed: int = 0) -> pd.DataFrame:
    """``n`` iterations ending evenly over ``seconds``; the last ``failed`` of them failed with ``kind``."""
    rng = np.random.default_rng(seed)
    end = T0 + pd.to_timedelta(np.linspace(seconds / n, seconds, n), unit="s")
    ok = np.ones(n, dtype=bool)
    ok[n - failed:] = False
    commit = np.broadcast_to(np.asarray(commit_ms, dtype=float), (n,)).copy()
    return pd.DataFrame({"ts_start": end - pd.Timedelta(milliseconds=50), "ts_end": end, "user": "w0-1", "ok": ok,
                         "error_kind": np.where(ok, None, kind), "total_ms": commit + 10 * rng.random(n),
                         "commit_ms": commit, "files_pushed": files,
                         "wait_ms": np.nan if wait_ms is None else wait_ms})


def info(seconds: float = 100.0) -> dict:
    return {"started_at": T0.isoformat(), "ended_at": (T0 + pd.Timedelta(seconds=seconds)).isoformat()}


def one(text: str, r: pd.DataFrame, undecided: str = "pass", locks: list | None = None):
    res = checks.results(r, {"thresholds": [{"check": text}], "undecided": undecided}, info(), locks)
    return next(x for x in res if x.name == text)


UNIFORM = np.linspace(0, 1000, 400)  # commit times 0..1000 ms: p50 500, p95 950, mean 500, max 1000


@pytest.mark.parametrize("text, passed, side", [
    ("p95(commit_ms) < 1100ms", True, "below"), ("p95(commit_ms) < 800ms", False, "above"),
    ("p95(commit_ms) > 0.8s", True, "above"), ("p50(commit_ms) >= 700", False, "below"),
    ("mean(commit_ms) < 600ms", True, "below"), ("mean(commit_ms) < 400ms", False, "above"),
    ("max(commit_ms) <= 1s", True, "at"), ("max(commit_ms) < 1s", False, "at"), ("min(commit_ms) >= 0", True, "at"),
])
def test_a_column_statistic_on_each_side_of_its_limit(text, passed, side):
    r = one(text, rows(commit_ms=UNIFORM))
    assert (r.passed, r.side) == (passed, side), r.line


def test_the_line_says_the_value_its_interval_and_the_side():
    r = one("p95(commit_ms) < 800ms", rows(commit_ms=UNIFORM))
    lo, hi = r.interval
    assert 900 < lo < 950 < hi <= 1000
    assert r.line.startswith("p95 commit 950 ms [") and r.line.endswith("is above 800 ms (400 successful iterations)")


def test_rates_whole_run_last_window_and_of_a_count():
    r = rows(n=400, seconds=100)  # 4 it/s, 3 files each
    assert one("rate > 3/s", r).passed and not one("rate > 5/s", r).passed
    assert one("rate < 300/min", r).passed  # 4/s is 240/min
    assert one("rate(files_pushed) > 10/s", r).side == "above"  # 12 files/s
    stalled = r.copy()
    stalled.loc[stalled["ts_end"] > T0 + pd.Timedelta(seconds=70), "ok"] = False  # nothing succeeds after 70 s
    last = one("rate(last 30s) >= 1/s", stalled)
    assert (last.passed, last.value) == (False, 0.0), last.line
    assert one("rate >= 1/s", stalled).passed  # the whole run still made 2.8/s


def test_failure_ratios_overall_and_by_kind():
    r = rows(n=1000, failed=50, kind="throttled")  # 5 % throttled
    assert not one("failure_ratio < 2%", r).passed
    assert one("failure_ratio < 10%", r).passed
    assert one("failure_ratio(lock_timeout) < 1%", r).passed  # none of that kind
    assert one("failure_ratio(throttled) > 0.02", r).side == "above"


def test_lock_utilization_reads_the_busiest_shared_key():
    locks = [LockShare("LOCK#a", 0.95, (0.93, 0.97), 6), LockShare("LOCK#solo", 0.99, (0.98, 1.0), 1)]
    r = one("utilization(lock) < 90%", rows(), locks=locks)
    assert not r.passed and r.line.startswith("lock LOCK#a utilization 95 %"), r.line
    assert one("utilization(lock) < 98%", rows(), locks=locks).passed


def test_a_straddling_threshold_cannot_tell_and_counts_as_the_scenario_says():
    r = rows(n=40, commit_ms=np.linspace(0, 1000, 40))  # p95 about 950 with a wide interval
    said = one("p95(commit_ms) < 950ms", r, undecided="pass")
    assert said.side == "cannot tell" and said.passed and "straddles 950 ms" in said.line
    assert "counted as passed" in said.line
    strict = one("p95(commit_ms) < 950ms", r, undecided="fail")
    assert not strict.passed and "counted as failed" in strict.line


def test_no_data_is_undecided_not_a_pass_by_accident():
    r = rows(n=10, failed=10)
    assert one("p95(commit_ms) < 1s", r, undecided="fail").side == "no data"
    assert not one("p95(commit_ms) < 1s", r, undecided="fail").passed


def test_a_small_sample_leaves_a_percentile_open_at_the_top():
    r = rows(n=10, commit_ms=np.linspace(0, 100, 10))
    got = one("p99(commit_ms) < 200ms", r)
    assert got.interval[1] is None and got.side == "cannot tell"  # 10 values say nothing of the p99's top


def test_the_four_named_checks_of_before_still_work():
    r = rows(n=400, failed=40, wait_ms=2000.0)
    named = {"max_failure_ratio": 0.05, "min_rate_last_window": 10.0, "window_s": 30.0, "max_p99_wait_s": 1.0}
    got = {x.name: x for x in checks.results(r, named, info())}
    assert not got["max_failure_ratio"].passed and not got["min_rate_last_window"].passed
    assert not got["max_p99_wait"].passed and "stalled" in got  # the last 40 failed: nothing succeeds at the end
    assert scenarios.parse({"checks": {"safety": True}}).checks.safety


def test_the_scenario_table_form_and_undecided():
    sc = scenarios.parse({"checks": {"undecided": "fail", "thresholds": [
        "p95(commit_ms) < 200ms", {"check": "p95(lock_wait_ms) < 1s", "abort": True}]}})
    assert sc.checks.undecided == "fail"
    assert [(s.check, s.abort) for s in sc.checks.thresholds] == [("p95(commit_ms) < 200ms", False),
                                                                    ("p95(lock_wait_ms) < 1s", True)]
    assert scenarios.scenario_from_dict(sc.to_dict()).checks == sc.checks  # the plan carries them


@pytest.mark.parametrize("text, says", [
    ("p95(commit_ms) <", "no limit"), ("p95(commit_ms) = 200ms", "no comparison"),
    ("p95 < 200ms", "reads one column"), ("p95(commit_ms) < 200 apples", "milliseconds or seconds"),
    ("failure_ratio < 120%", "at most 100 %"), ("frobnicate(x) < 1", "unknown measure"),
    ("rate(commit_ms) > 1/s", "would add up milliseconds"), ("p95(commit_ms, some) < 1s", "which iterations"),
])
def test_a_malformed_expression_is_one_line(text, says):
    with pytest.raises(HarnessError) as e:
        expr.parse(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_malformed_check_exits_2_in_one_line_before_anything_starts(tmp_path, capsys):
    run_dir = tmp_path / "never"
    with pytest.raises(SystemExit) as e:
        main(["run", "shared-lock", "--run-dir", str(run_dir), "--check", "p95(comit_ms) < 200ms"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "did you mean commit_ms?" in err and err.count("\n") == 1
    assert not run_dir.exists()


@pytest.mark.parametrize("threshold, says", [
    ("p95(commit_ms) << 2s", "bad.toml: checks.thresholds[0]"),  # malformed: the file and the item named
    ("mean(pull_itmes_read) < 5", "did you mean pull_items_read?"),  # an unknown column: the nearest named
])
def test_a_bad_threshold_in_a_scenario_exits_2_in_one_line_before_the_run_starts(threshold, says, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "bad"\n[checks]\nthresholds = ["{threshold}"]\n')
    assert main(["run", str(path), "--run-dir", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not (tmp_path / "never").exists()


def test_the_judge_is_the_same_function_live_and_after():
    """The live gate's Observed and the report's give the same verdict on the same rows."""
    r = rows(commit_ms=UNIFORM)
    th = expr.parse("p95(commit_ms) < 800ms")
    report = checks.observed(r, info())
    live = Observed(report.seconds, report.ok, report.error_kind, report.t_end,
                    lambda c: r[c].to_numpy(dtype=float))
    assert judge(th, live).line == judge(th, report).line
