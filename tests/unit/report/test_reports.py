"""Report findings and files on synthetic runs with known curves: each test fails when a finding is wrong."""

from __future__ import annotations

import json
import math
import re
from html import escape

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from harness.core.errors import HarnessError
from harness.report.compare.compare import compare
from harness.report.load import find_runs, open_run
from harness.report.run import build, compute, figures
from harness.report.run.build import build_report
from harness.report.run.findings import findings
from harness.report.series import count_means, rate_series, run_span, step_means, with_windows
from tests.support.synthetic import make_rows, make_run, run_info

T = 3600.0
LOCK_MSG = "Lock timeout after 1000ms on key: dynamodb://harness-legacy-gsi-table"


def _const(v):
    return lambda t: np.full_like(t, float(v))


def _falling(t):  # the legacy GSI: 0.10 -> 0.01 per worker, falling to the very end
    return 0.10 * (1 - 0.9 * t / T)


def _floor(t):  # the shared lock: down to a 0.007 floor within 30 % of the run, then flat
    return np.where(t < 0.3 * T, 0.10 - (0.10 - 0.007) * t / (0.3 * T), 0.007)


def _f(seed=0, info=None, **case):
    rows = make_rows(seed=seed, **case)
    return findings(rows, info or run_info(workers=case["workers"], duration_s=case["duration_s"]))


LEGACY_UNDER_SHARED_LOCK = dict(
    workers=20, duration_s=1200.0, rate=lambda t: 0.25 * (1 - 0.85 * t / 1200),
    steps={"lock_wait_ms": lambda t: 2000 + 8000 * t / 1200, "pull_ms": lambda t: 40 + 900 * t / 1200,
           "commit_ms": _const(60), "push_ms": _const(30)},
    counts={"pull_items_read": lambda t: 20 + 2 * t, "lock_attempts": lambda t: 5 + 30 * t / 1200,
            "index_entries_written": _const(5), "files_pushed": _const(5)},
    failure=_const(0.3), messages={"lock_timeout": LOCK_MSG}, failure_ms=_const(1000),
    failure_counts={"lock_attempts": _const(10)})


# ---- successes and failures apart -----------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_failures_falling_from_90_to_10_percent_do_not_move_work_counts(seed):
    # every successful iteration reads exactly 40 items; failed ones are fast and read nothing
    f = _f(seed, workers=10, duration_s=600.0, rate=_const(0.5), failure=lambda t: 0.9 - 0.8 * t / 600,
           steps={"pull_ms": _const(80.0), "commit_ms": _const(40.0)},
           counts={"pull_items_read": _const(40), "index_entries_written": _const(5)})
    w = f["work_counts"]["pull_items_read"]
    assert w["first"] == w["last"] == 40 and w["growth"] == 1.0 and w["grew"] is False
    assert f["explained_by"] is None and f["grew_most"] is None
    assert f["steps"]["pull"]["growth"] == pytest.approx(1.0, abs=0.1) and not f["steps"]["pull"]["grew"]
    assert not any("items read per pull" in s and "grew" in s for s in f["sentences"])
    assert f["failure_rates"]["changed"] and f["failure_rates"]["end"] < f["failure_rates"]["start"]


def test_step_and_count_means_leave_windows_with_no_success_as_gaps():
    rows = make_rows(workers=4, duration_s=120.0, rate=lambda t: np.where((t > 40) & (t < 60), 0.0, 1.0),
                     failure=lambda t: np.where((t > 40) & (t < 60), 1.0, 0.0), steps={"pull_ms": _const(50)},
                     counts={"pull_items_read": _const(40)})
    rows = pd.concat([rows, make_rows(workers=2, duration_s=120.0, rate=lambda t: np.where(
        (t > 40) & (t < 60), 1.0, 0.0), failure=_const(1.0), seed=9)], ignore_index=True)
    span = run_span(run_info(workers=4, duration_s=120.0), rows)
    b = with_windows(rows, span, 5.0)
    steps, counts = step_means(b, span, 5.0), count_means(b, span, 5.0)
    rate = rate_series(b, span, 5.0)
    hole = (steps.index > 42) & (steps.index < 55)
    assert steps.loc[hole, "pull_ms"].isna().all() and counts.loc[hole, "pull_items_read"].isna().all()
    assert (rate.loc[hole, "ok_rate"] == 0).all() and (rate.loc[hole, "failed_rate"] > 0).all()
    assert counts.loc[~hole, "pull_items_read"].dropna().eq(40).all()


# ---- cause per step -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_legacy_gsi_under_the_shared_lock_names_items_read_per_pull(seed):
    # lock wait dominates and grows (it queues behind longer pulls), but pull is the step that grew
    f = _f(seed, **LEGACY_UNDER_SHARED_LOCK)
    assert f["dominant_step"]["first"]["step"] == f["dominant_step"]["last"]["step"] == "lock wait"
    assert f["grew_most"] == "pull" and f["explained_by"] == "pull_items_read"
    assert f["steps"]["lock wait"]["grew"] and f["work_counts"]["pull_items_read"]["grew"]
    assert f["fleet"]["degraded"] and f["fleet"]["shape"] == "still falling"
    text = " ".join(f["sentences"])
    assert "Pull grew most" in text and "with items read per pull" in text and "Lock wait grew too" in text


@pytest.mark.parametrize("seed", range(10))
def test_items_read_per_pull_is_named_even_when_iteration_time_falls(seed):
    # the real legacy-gsi case: lock wait dominates and shrinks, so iteration time falls while pull
    # and the items it reads grow; the old report correlated counts with iteration time and named nothing
    f = _f(seed, **{**LEGACY_UNDER_SHARED_LOCK,
                    "steps": {"lock_wait_ms": lambda t: 9000 - 5000 * t / 1200,
                              "pull_ms": lambda t: 40 + 1500 * t / 1200, "commit_ms": _const(60),
                              "push_ms": _const(30)},
                    "counts": {"pull_items_read": lambda t: 20 + 2 * t, "lock_attempts": lambda t: 30 - 10 * t / 1200,
                               "index_entries_written": _const(5), "files_pushed": _const(5)}})
    assert f["dominant_step"]["last"]["step"] == "lock wait" and f["steps"]["lock wait"]["fell"]
    assert f["grew_most"] == "pull" and f["explained_by"] == "pull_items_read"


def test_the_bottleneck_migrates_and_commit_is_explained_by_index_entries():
    f = _f(workers=20, duration_s=T, rate=_const(0.1),
           steps={"lock_wait_ms": lambda t: 800 - 700 * t / T, "pull_ms": _const(40.0),
                  "commit_ms": lambda t: 50 + 3000 * t / T},
           counts={"index_entries_written": lambda t: 10 + 3 * t, "catalog_rows": _const(6),
                   "pull_items_read": _const(7)})
    d = f["dominant_step"]
    assert d["first"]["step"] == "lock wait" and d["last"]["step"] == "commit"
    assert re.fullmatch(r"lock wait \d+ % -> commit \d+ %", d["migration"])
    assert f["grew_most"] == "commit" and f["explained_by"] == "index_entries_written"
    assert f["steps"]["commit"]["rho"] > 0.9 and f["work_counts"]["pull_items_read"]["growth"] == 1.0
    assert any(s.startswith("The bottleneck migrated: lock wait") for s in f["sentences"])


def test_a_step_that_grew_without_its_count_points_at_the_probe_by_its_own_operation(tmp_path):
    # moto's scan: pull slows while items read per pull stays put; the probe (a GetItem) slowed too
    run = open_run(make_run(tmp_path / "scan", workers=5, duration_s=600.0, rate=_const(0.3),
                            steps={"pull_ms": lambda t: 20 + 300 * t / 600, "commit_ms": _const(30)},
                            counts={"pull_items_read": _const(12)}, probe=lambda t: 2 + 8 * t / 600,
                            probe_op="GetItem"))
    f = build.findings_of(run)
    assert f["grew_most"] == "pull" and f["explained_by"] is None
    assert f["probe"]["op"] == "GetItem" and f["probe"]["slowed"] and f["probe"]["interval"][0] > 1
    text = " ".join(f["sentences"])
    assert "no recorded count explains it" in text and "its GetItem probe went" in text
    assert "Query" not in text


def test_a_flat_probe_is_reported_flat_and_idle_samples_after_the_load_are_ignored(tmp_path):
    path = make_run(tmp_path / "flatprobe", workers=5, duration_s=600.0, rate=_const(0.3),
                    steps={"pull_ms": lambda t: 20 + 300 * t / 600}, counts={"pull_items_read": _const(12)},
                    probe=_const(2.0))
    probes = pd.read_csv(path / "probes.csv")
    idle = pd.DataFrame({"ts": probes["ts"].max() + np.arange(2, 200) * 5.0, "op": "GetItem", "ms": 0.1})
    pd.concat([probes, idle]).to_csv(path / "probes.csv", index=False)  # after ended_at: must not count
    f = build.findings_of(open_run(path))
    p = f["probe"]
    assert p["samples"] == len(probes) and p["growth"] == pytest.approx(1.0, abs=0.15) and not p["slowed"]
    assert any("probe did not credibly slow down" in s for s in f["sentences"])


# ---- the load generator, safety, incomplete processes, checks -------------------------------


def test_a_saturated_load_process_is_named_as_the_ceiling(tmp_path):
    gen = {"master": _const(99.0), "worker-0": _const(40.0), "worker-1": lambda t: np.where(t > 100, 97.0, 60.0)}
    f = build.findings_of(open_run(make_run(tmp_path / "gen", workers=4, duration_s=300.0, rate=_const(0.5),
                                            generator=gen)))
    g = f["generator"]
    assert g["ceiling"] and g["saturated"] == ["worker-1"] and not g["processes"]["master"]["saturated"]
    assert any(s.startswith("The load generator, not the datastore, was the ceiling: Locust process worker-1")
               for s in f["sentences"])
    cool = build.findings_of(open_run(make_run(tmp_path / "cool", workers=4, duration_s=300.0, rate=_const(0.5),
                                               generator={"master": _const(99.0), "local": _const(30.0)})))
    assert not cool["generator"]["ceiling"]
    assert any("had headroom" in s and "local" in s for s in cool["sentences"])


def test_safety_incomplete_processes_and_stand_in_are_shown(tmp_path):
    safety = {"acknowledged": 120, "lost": 1, "phantom": 0, "overlaps": 2, "violations": 3, "examples": ["x"]}
    path = make_run(tmp_path / "s", workers=4, duration_s=120.0, rate=_const(0.5), safety=safety,
                    info={"incomplete": [{"process": "worker-2", "reason": "killed"}],
                          "stand_in": {"name": "dynalite", "version": "3.2.2"}})
    out = build_report([path])
    summary = json.loads((out / "summary.json").read_text())
    f = summary["runs"][0]["findings"]
    assert f["safety"]["violations"] == 3 and f["safety"]["lost"] == 1
    html = (out / "index.html").read_text()
    assert "<h4>Safety</h4>" in html and "never delivered their final report: worker-2 (killed)" in html
    assert "dynalite 3.2.2" in html
    assert any("worker-2 (killed)" in s for s in f["sentences"])


def test_the_report_names_each_services_stand_in_and_its_version(tmp_path):
    stand_in = {"name": "dynalite", "version": "4.0.0", "s3": {"name": "seaweedfs", "version": "4.48"},
                "services": {"dynamodb": "dynalite 4.0.0", "s3": "seaweedfs 4.48"}}
    path = make_run(tmp_path / "s", workers=2, duration_s=60.0, rate=_const(0.5), info={"stand_in": stand_in})
    html = (build_report([path]) / "index.html").read_text()
    flat = html.replace("\n", "")
    assert '<td>stand-in</td><td class="t">dynalite 4.0.0 (DynamoDB), seaweedfs 4.48 (S3)</td>' in flat


def test_checks_use_the_reports_numbers_and_catch_a_hang_at_the_end(tmp_path):
    from harness.report.run.checks import evaluate

    checks = {"max_failure_ratio": 0.5, "min_rate_last_window": 1.0, "window_s": 10.0}
    rows = make_rows(workers=4, duration_s=120.0, rate=lambda t: np.where(t < 100, 1.25, 0.0))
    info = run_info(workers=4, duration_s=120.0, checks=checks)
    failed = evaluate(rows, checks, info)
    assert any(re.match(r"fleet rate 0\.000 it/s in the last 10s is below the required 1 it/s", x) for x in failed)
    assert any(x.startswith("no successful iteration in the last 2") and "stalled" in x for x in failed)
    # the old gate took the end from the last row: the same run passed
    assert evaluate(rows, checks, {}) == []
    f = findings(rows, info)
    assert {c["name"]: c["passed"] for c in f["checks"]} == {"max_failure_ratio": True,
                                                             "min_rate_last_window": False, "stalled": False}
    assert f["fleet"]["shape"] == "stalled"


# ---- words and numbers ----------------------------------------------------------------------


def test_no_infinity_anywhere_when_nothing_succeeded_at_the_floor(tmp_path):
    path = make_run(tmp_path / "zero", workers=4, duration_s=300.0,
                    rate=lambda t: np.where((t > 100) & (t < 200), 0.0, 1.0),
                    counts={"catalog_rows": lambda t: np.where(t < 60, 0, t)})
    out = build_report([path])
    text = (out / "summary.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    f = json.loads(text)["runs"][0]["findings"]
    assert f["fleet"]["floor_rate"] == 0 and f["fleet"]["degradation_ratio"] is None
    assert f["fleet"]["degradation_note"] and f["fleet"]["shape"] == "recovering"
    assert f["work_counts"]["catalog_rows"]["growth"] is None and f["work_counts"]["catalog_rows"]["note"]
    html = (out / "index.html").read_text()
    for s in f["sentences"]:
        assert "inf" not in s.lower().replace("info", "") and "∞" not in s
    assert "∞" not in html


def test_every_error_kind_is_counted_with_its_full_message_and_when(tmp_path):
    kinds = ("lock_timeout", "throttled", "fenced", "other")
    msgs = {"lock_timeout": LOCK_MSG, "throttled": "ProvisionedThroughputExceededException: Rate exceeded"}
    rows = make_rows(workers=20, duration_s=600.0, rate=_const(0.2), failure=_const(0.4), error_kinds=kinds,
                     messages=msgs)
    f = findings(rows, run_info(workers=20, duration_s=600.0))
    assert f["failure_ratio"] == pytest.approx(0.4, abs=0.03)
    assert all(f["errors"][k] > 0 for k in kinds) and f["errors"]["conflict"] == 0
    assert sum(f["errors"].values()) == int((~rows["ok"]).sum())
    table = {r["message"]: r for r in f["failures_table"]}
    assert table[LOCK_MSG]["kind"] == "lock_timeout" and table[LOCK_MSG]["count"] == f["errors"]["lock_timeout"]
    assert 0 <= table[LOCK_MSG]["first_s"] < 30 and 570 < table[LOCK_MSG]["last_s"] <= 600
    span = run_span(run_info(workers=20, duration_s=600.0), rows)
    series = compute.failure_series(with_windows(rows, span, 30.0), span, 30.0)
    assert list(series.columns) == ["lock_timeout", "throttled", "fenced", "other"]


def test_percentile_table_has_locusts_columns_per_step():
    rows = make_rows(workers=5, duration_s=300.0, rate=_const(1.0), failure=_const(0.2),
                     steps={"pull_ms": _const(100), "commit_ms": _const(10)})
    table = {r["name"]: r for r in compute.percentile_table(rows)}
    # failed iterations only waited for the lock: lock wait has no successful time to show
    assert set(table) == {"pull", "commit", "iteration (succeeded)", "iteration (failed)"}
    for r in table.values():
        for k in ("p50", "p66", "p75", "p80", "p90", "p95", "p98", "p99", "p99.9", "p100", "min", "max", "count"):
            assert k in r
        assert r["min"] <= r["p50"] <= r["p99"] <= r["p100"] == r["max"]
    assert table["pull"]["count"] == int(rows["ok"].sum())
    assert 80 <= table["pull"]["p50"] <= 120


# ---- scaling and backends -------------------------------------------------------------------


def _triple(tmp_path, name, **kw):
    r = open_run(make_run(tmp_path / name, **kw))
    return r.label, r.info, r.rows


def test_fleet_doubling_is_an_efficiency_and_the_sentence_follows_it(tmp_path):
    small = _triple(tmp_path, "w10", workers=10, duration_s=1800.0, rate=_const(0.1), scenario="shared-lock")
    same = _triple(tmp_path, "w20", workers=20, duration_s=1800.0, rate=_const(0.05), scenario="shared-lock")
    (s,) = compare([small, same])["fleet_scaling"]
    assert s["workers"] == [10, 20] and s["fleet_ratio"] == 2
    assert s["rate_ratio"] == pytest.approx(1.0, abs=0.15) and s["raised_rate"] is False
    assert "did not credibly raise the rate" in s["sentence"]
    part = _triple(tmp_path, "w20p", workers=20, duration_s=1800.0, rate=_const(0.073), scenario="shared-lock")
    (p,) = compare([small, part])["fleet_scaling"]
    assert p["raised_rate"] and p["efficiency"] == pytest.approx(0.73, abs=0.08)
    assert f"{p['efficiency'] * 100:.0f} % scaling efficiency" in p["sentence"]
    assert "less than the fleet" in p["sentence"] and "did not" not in p["sentence"]
    full = _triple(tmp_path, "w20f", workers=20, duration_s=1800.0, rate=_const(0.1), scenario="shared-lock")
    (q,) = compare([small, full])["fleet_scaling"]
    assert "scaled with the fleet" in q["sentence"]


def test_dynamodb_against_s3_sentence_is_computed_either_way(tmp_path):
    kw = dict(workers=10, duration_s=1800.0, scenario="pruning", counts={"requests": _const(10)})
    ddb = _triple(tmp_path, "d", rate=_const(0.15), steps={"push_ms": _const(30)}, **kw)
    s3 = _triple(tmp_path, "s", rate=_const(0.05), backend="s3", steps={"push_ms": _const(900)}, **kw)
    (b,) = compare([s3, ddb])["backends"]
    assert b["dynamodb_over_s3"] == pytest.approx(3.0, rel=0.15) and b["s3_ms_per_request_over_dynamodb"] > 10
    assert b["step"] == "push" and b["sentence"].endswith("so S3 workers top out lower per operation.")
    fast_s3 = _triple(tmp_path, "s2", rate=_const(0.3), backend="s3", steps={"push_ms": _const(5)}, **kw)
    (b2,) = compare([fast_s3, ddb])["backends"]
    assert b2["dynamodb_over_s3"] < 1 and b2["sentence"].endswith("so DynamoDB workers top out lower per operation.")
    even = _triple(tmp_path, "s3", rate=_const(0.15), backend="s3", steps={"push_ms": _const(30)}, seed=4, **kw)
    (b3,) = compare([even, ddb])["backends"]
    assert b3["sentence"].endswith("the rates do not differ credibly.")


# ---- files --------------------------------------------------------------------------------


def test_report_files_figures_and_legends(tmp_path, monkeypatch):
    kept = []
    real_save = figures.save

    def keep(fig, path):
        kept.append((path.name, [(ax, ax.get_legend()) for ax in fig.axes]))
        for ax in fig.axes:  # legends sit outside every axes: they cover no data
            leg = ax.get_legend()
            if leg is not None:
                fig.canvas.draw()
                a, b = leg.get_window_extent(), ax.get_window_extent()
                assert a.x0 >= b.x1 - 1 or a.y1 <= b.y0 + 1, f"{path.name}: legend over the data"
        return real_save(fig, path)

    monkeypatch.setattr(figures, "save", keep)
    run = make_run(tmp_path / "run", workers=10, duration_s=T, rate=_falling, failure=_const(0.1), backend="s3",
                   steps={"pull_ms": lambda t: 20 + 500 * t / T, "lock_wait_ms": _const(30)},
                   counts={"pull_items_read": lambda t: 5 + t, "write_units": _const(3)}, history=True)
    out = build_report([run])
    summary = json.loads((out / "summary.json").read_text())
    html = (out / "index.html").read_text()
    assert set(summary["figures"]) == {"rate.png", "bound.png", "grew.png", "failures.png", "step_time.png",
                                       "work_counts.png", "lock_wait.png", "latency_percentiles.png", "causes.png",
                                       "forecast.png"}
    for name in summary["figures"]:
        assert f'src="figures/{name}"' in html
        with Image.open(out / "figures" / name) as im:
            assert im.format == "PNG" and im.width >= 600 and im.height >= 300
            assert len(im.convert("L").getcolors(maxcolors=65536) or []) > 20  # not a blank canvas
    panels = dict(kept)["work_counts.png"]
    titles = {ax.get_title() for ax, _ in panels if ax.get_visible()}
    assert titles == {"items read per pull", "write units per iteration"}  # all-zero counts (read units) hidden
    legend = [t.get_text() for ax, leg in dict(kept)["rate.png"] if leg for t in leg.get_texts()]
    assert any(t.startswith("start ") for t in legend) and any(t.startswith("floor = end ") for t in legend)
    f = summary["runs"][0]["findings"]
    assert f["fleet"]["shape"] == "still falling" and all(escape(s) in html for s in f["sentences"])
    # the page leads with the verdict: the bound, the rate and what grew come before the first table of numbers
    lead = html.index('<table class="verdict">')
    assert lead < html.index("<h3>") and escape(f["outcome"]["bound"]) in html[lead:html.index("<h3>")]
    # nothing said twice: the verdict's lines are not repeated below it, and no bullet list repeats the box
    for line in f["verdict"].values():
        assert line is None or html.count(escape(line)) == 1, line
    assert "<ul>" not in html
    for header in ("99.9 %", "first seen", "Scenario settings", "Versions", "time range", "Which step grew"):
        assert header in html


def test_comparison_report_goes_next_to_the_runs_with_settings_and_checks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    a = make_run(runs / "a", workers=10, duration_s=T, rate=_floor, scenario="shared-lock",
                 checks={"max_failure_ratio": 0.1, "min_rate_last_window": 0.0, "window_s": 30.0})
    b = make_run(runs / "b", workers=20, duration_s=T, rate=lambda t: _floor(t) / 2, scenario="shared-lock",
                 checks={"max_failure_ratio": 0.2, "min_rate_last_window": 0.0, "window_s": 30.0})
    out = build_report([a, b])
    assert out.parent == runs and out.name.startswith("comparison-a-and-1-more-")
    assert not (tmp_path / "comparison-report").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert {"compare_rate.png", "compare_steps.png"} <= set(summary["figures"])
    assert summary["comparison"]["fleet_scaling"][0]["raised_rate"] is False
    html = (out / "index.html").read_text()
    assert "did not credibly raise the rate" in html and "Settings that differ" in html
    assert "checks.max_failure_ratio" in html and "<h3>Checks</h3>" in html
    assert find_runs(runs) == [a, b]  # the comparison folder is not a run


def test_comparison_of_runs_in_different_folders_goes_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = make_run(tmp_path / "x" / "a", workers=4, duration_s=300.0, rate=_const(0.5))
    b = make_run(tmp_path / "y" / "b", workers=4, duration_s=300.0, rate=_const(0.5), backend="s3")
    out = build_report([a, b])
    assert out.parent == tmp_path / "runs" or out.parent.resolve() == (tmp_path / "runs").resolve()


def test_a_web_session_reports_each_test_as_a_run(tmp_path):
    session = tmp_path / "session"
    session.mkdir()
    (session / "run.json").write_text(json.dumps({"tests": ["tests/001", "tests/002"]}))
    make_run(session / "tests" / "001", workers=4, duration_s=120.0, rate=_const(1.0))
    make_run(session / "tests" / "002", workers=8, duration_s=120.0, rate=_const(1.0), t0=1_750_001_000.0)
    assert [p.name for p in find_runs(session)] == ["001", "002"]
    out = build_report([session])
    assert out == session / "report"
    summary = json.loads((out / "summary.json").read_text())
    assert [r["run_dir"][-3:] for r in summary["runs"]] == ["001", "002"] and summary["comparison"]


# ---- bad input ------------------------------------------------------------------------


def test_not_a_run_directory(tmp_path):
    with pytest.raises(HarnessError, match=r"is not a run directory \(no run.json\)"):
        open_run(tmp_path)
    with pytest.raises(HarnessError, match="is not a directory"):
        open_run(tmp_path / "missing")


def test_run_with_no_rows(tmp_path):
    run = make_run(tmp_path / "empty", workers=1, duration_s=10, rate=lambda t: np.zeros_like(t))
    for p in (run / "iterations").glob("*.parquet"):
        p.unlink()
    with pytest.raises(HarnessError, match="has no iteration rows yet"):
        open_run(run)


def test_run_still_being_written_gets_a_partial_report(tmp_path, capsys):
    run = make_run(tmp_path / "live", workers=5, duration_s=600, rate=_falling, status="running")
    (run / "iterations" / "part-x-000009.parquet.tmp").write_bytes(b"half a shard")  # a flush in progress
    out = build_report([run])
    assert "still being written" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    f = summary["runs"][0]["findings"]
    assert summary["runs"][0]["partial"] is True and f["span"]["end_from"] == "rows"
    html = (out / "index.html").read_text()
    assert "still being written" in html and "ended_at" in html
    assert all(math.isfinite(x) for x in f["fleet"]["start_interval"])


def test_compared_windows_stretch_a_level_of_one_iteration_to_five_without_overlapping():
    """A slow machine's level can hold one iteration, which compares with nothing: each side takes five."""
    from harness.report.series import compared_windows

    t = np.arange(15, dtype=float)  # one success a second
    # the start level holds only t=0, the end level only t=14: each stretched inwards to five successes
    assert compared_windows(t, (0.0, 0.5), (13.5, 14.0)) == ((0.0, 4.0), (10.0, 14.0))
    # levels that already hold five stay as they are
    assert compared_windows(t, (0.0, 6.0), (8.0, 14.0)) == ((0.0, 6.0), (8.0, 14.0))
    # six successes in all: three a side, never the same one on both
    (a0, a1), (b0, b1) = compared_windows(t[:6], (0.0, 0.0), (5.0, 5.0))
    assert (a1, b0) == (2.0, 3.0)
    # one success: nothing to stretch to
    assert compared_windows(t[:1], (0.0, 0.0), (0.0, 0.0)) == ((0.0, 0.0), (0.0, 0.0))
