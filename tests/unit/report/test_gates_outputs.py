"""What the gates write: JUnit XML a JUnit schema accepts, the baseline comparison, the history and its trend.

Synthetic run directories (tests/support/synthetic.py) with known shapes, made once for the module; the JUnit file is
validated against Apache Ant's JUnit XSD (tests/fixtures/junit/JUnit.xsd) with xmlschema.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import xmlschema

from harness.cli.main import main
from harness.core.errors import HarnessError
from harness.products.runs import history
from harness.report.run import junit
from harness.report.run.baseline import compare_dirs, identity, refusal, segment_medians
from tests.support.synthetic import T0, make_run

XSD = Path(__file__).parents[2] / "fixtures" / "junit" / "JUnit.xsd"
CHECKS = {"max_failure_ratio": 0.5, "min_rate_last_window": 1.0, "window_s": 30.0, "undecided": "pass",
          "thresholds": [{"check": "p95(commit_ms) < 50ms"}, {"check": "rate > 1/s"},
                         {"check": "utilization(lock) < 99%"}]}

pytestmark = pytest.mark.xdist_group("gates-outputs")


def _run(path: Path, commit_ms: float, seed: int, t0: float = T0, **kw) -> Path:
    return make_run(path, workers=4, duration_s=90.0, rate=lambda t: np.full_like(t, 2.0), seed=seed, t0=t0,
                    steps={"commit_ms": lambda t: np.full_like(t, commit_ms),
                           "lock_wait_ms": lambda t: np.full_like(t, 20.0)},
                    checks=CHECKS, lock_history="shared", **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _run(root / "base", 20.0, 1, T0)
    _run(root / "same", 20.0, 2, T0 + 3600)
    _run(root / "slow", 60.0, 3, T0 + 7200)
    for name in ("base", "same", "slow"):
        assert main(["report", str(root / name)]) == 0
    return root


def test_junit_has_one_case_per_check_and_the_schema_accepts_it(runs, tmp_path):
    out = tmp_path / "junit.xml"
    code = main(["report", str(runs / "slow"), "--out", str(tmp_path / "r"), "--junit", str(out)])
    assert code == 0
    xmlschema.XMLSchema(str(XSD)).validate(str(out))  # raises on any departure from Ant's format
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    checks = summary["runs"][0]["findings"]["checks"]
    cases = ET.parse(out).getroot().findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [c["name"] for c in checks]
    failed = {c.get("name"): c.find("failure").get("message") for c in cases if c.find("failure") is not None}
    assert failed == {c["name"]: c["line"] for c in checks if not c["passed"]}
    assert "p95(commit_ms) < 50ms" in failed  # the slow commit (60 ms) fails its threshold


def test_the_schema_refuses_what_ci_readers_would_not_read():
    """The validator is no rubber stamp: a suite without its counts is refused."""
    doc = junit.xml([junit.Suite("s", [junit.Case("c", "harness.x", False, "no")], datetime.now(UTC))])
    broken = doc.replace(' failures="1"', "")
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        xmlschema.XMLSchema(str(XSD)).validate(broken)


def test_the_same_code_twice_is_no_regression(runs):
    cmp = compare_dirs(runs / "base", runs / "same")
    assert cmp["regressions"] == []
    assert {x["verdict"] for x in cmp["items"]} <= {"unchanged", "cannot tell"}


def test_a_slower_commit_is_a_regression_naming_the_commit(runs, capsys):
    assert main(["report", str(runs / "slow"), "--baseline", str(runs / "base")]) == 3
    out = capsys.readouterr().out
    assert re.search(r"REGRESSION commit: (59|60)[.0-9]* against (19|20)[.0-9]* ms", out), out
    cmp = json.loads((runs / "slow" / "report" / "summary.json").read_text())["runs"][0]["findings"]["baseline"]
    commit = next(x for x in cmp["items"] if x["name"] == "commit")
    assert commit["regression"] and 2.8 < commit["ratio"] < 3.2
    page = (runs / "slow" / "report" / "index.html").read_text()
    assert page.index("Against the baseline") < page.index("<figure")  # on the first screen, before the figure


def test_a_baseline_of_another_question_is_refused_in_one_line(runs, tmp_path, capsys):
    base = identity({"scenario_name": "shared-lock", "backend": "dynamodb", "fleet": {"workers": 6},
                     "fidelity": {"latency": "local"}})
    for key, other in (("scenario", "namespaced"), ("backend", "s3"), ("fleet size", 12), ("latency profile", "aws")):
        why = refusal(base, {**base, key: other}, "B")
        assert why is not None and f"its {key} is" in why and "\n" not in why
    other = _run(tmp_path / "other", 20.0, 4, backend="s3")
    assert main(["report", str(other), "--baseline", str(runs / "base")]) == 2
    assert "its backend is 'dynamodb', this run's 's3'" in capsys.readouterr().err
    with pytest.raises(HarnessError, match="not a run directory"):
        compare_dirs(tmp_path, runs / "base")


def test_segments_carry_the_runs_own_drift():
    import pandas as pd

    ts = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.arange(100), unit="s")
    rows = pd.DataFrame({"ts_end": ts, "ok": True, "commit_ms": np.arange(100, dtype=float)})
    assert segment_medians(rows, "commit_ms") == [4.5 + 10 * k for k in range(10)]
    assert len(segment_medians(rows.head(8), "commit_ms")) == 2  # at least 3 iterations a segment


# ---- the history ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(runs, tmp_path_factory) -> Path:
    """A runs/ folder holding each kind of directory the history has a rule for."""
    root = tmp_path_factory.mktemp("history")
    for name in ("base", "same", "slow"):
        (root / name).symlink_to(runs / name, target_is_directory=True)
    _run(root / "no-report", 20.0, 5, T0 + 9000)  # never reported: read from run.json alone
    session = root / "session"
    _run(session / "tests" / "001", 20.0, 6, T0 + 10_000)
    (session / "run.json").write_text(json.dumps({"session": True, "started_at": None, "tests": [
        {"number": 1, "dir": "tests/001"}]}))
    (root / "story-x").mkdir()
    story = {"schema": 1, "ladder": {"name": "migrating"}, "status": "finished", "started_at": "2025-06-01T00:00:00Z",
             "chapters": [{"shown": True}, {"shown": False}], "not_run": []}
    (root / "story-x" / "story.json").write_text(json.dumps(story))
    (root / "story-x" / "01-a" / "run-inside").mkdir(parents=True)  # a chapter's run is the story's
    (root / "sweep-y").mkdir()
    (root / "sweep-y" / "sweep.json").write_text(json.dumps({"sweep": {"scenario": "shared-lock", "backend": "s3"},
                                                              "sizes": [{"rate": 3.0}], "fit": {"peak_workers": 5}}))
    (root / "climb-z" / "closed").mkdir(parents=True)
    (root / "climb-z" / "climb.json").write_text(json.dumps({"closed_per_s": 4.0, "sentence": "grows past 3/s"}))
    (root / "explore-1").mkdir()
    (root / "explore-1" / "explore.json").write_text(json.dumps({"violating": 0, "explored": 12,
                                                                  "targets": ["dynamodb/per-model"]}))
    (root / "jobs").mkdir()
    (root / "jobs" / "run.json").write_text("{}")  # the job journal's folder is never a run
    return root


def test_the_history_lists_each_kind_by_its_rule_newest_first(tree):
    found = history.entries(tree)
    kinds = {e.path.name: e.kind for e in found}
    assert kinds == {"base": "run", "same": "run", "slow": "run", "no-report": "run", "001": "web test",
                     "story-x": "story", "sweep-y": "sweep", "climb-z": "climb", "explore-1": "explore"}
    dated = [e.started_at for e in found if e.started_at is not None]
    assert dated == sorted(dated, reverse=True)
    by = {e.path.name: e for e in found}
    assert by["no-report"].checks == "not judged" and not by["no-report"].reported
    assert by["slow"].checks.startswith("FAILED 1/") and "p95(commit_ms) < 50ms" in by["slow"].checks
    assert by["base"].checks.startswith("passed") and 7 < by["base"].rate < 9
    assert by["story-x"].verdict == "finished: 1 of 2 chapters shown"
    assert by["explore-1"].verdict == "0 violating of 12 schedules"


def test_harness_runs_filters_by_scenario_and_since(tree, capsys):
    assert main(["runs", "--runs-dir", str(tree), "--scenario", "synthetic", "--since", "2025-06-15T16:30"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["started", "(UTC)"]
    assert [line.split()[-1] for line in out[1:]] == ["session/tests/001", "no-report", "slow"]
    assert main(["runs", "--runs-dir", str(tree), "--since", "yesterday"]) == 2


def test_the_trend_page_in_a_browser(tree):
    from tests.support.first_screen import assert_answer_first, first_screen

    assert main(["runs", "--runs-dir", str(tree), "--trend", "synthetic", "--step", "commit"]) == 0
    page = tree / "trend-synthetic" / "index.html"
    html = page.read_text()
    assert html.count("<tr><td>") == 3  # the three reported runs of the scenario, oldest first
    assert html.index("base") < html.index("same") < html.index("slow")
    got = first_screen(page)
    assert_answer_first(got)
    assert "3 reported runs of synthetic" in got["text"]


def test_a_safety_scenario_leads_with_its_safety_verdict(tmp_path):
    """lifecycle-safety's "0 violations" used to sit in a closed section; now it is the first screen's first line."""
    from tests.support.first_screen import assert_answer_first, first_screen

    safety = {"acknowledged": 812, "lost": 0, "phantom": 0, "corrupt": 0, "torn_reads": 0, "overlaps": 0,
              "violations": 0, "sequence_anomalies": 0, "details": {}}
    run = make_run(tmp_path / "safe", workers=3, duration_s=60.0, rate=lambda t: np.full_like(t, 2.0), seed=7,
                   safety=safety, checks={**CHECKS, "thresholds": [], "safety": True})
    assert main(["report", str(run)]) == 0
    page = (run / "report" / "index.html").read_text()
    line = ("Safety: 812 acknowledged commits, 0 lost, 0 phantom, 0 torn reads, 0 corrupt: 0 violations.")
    assert line in page
    assert page.index("</h1>") < page.index(line) < page.index('<table class="verdict">')
    assert_answer_first(first_screen(run / "report" / "index.html"))  # the verdict and figure still fit


def _processes_csv(run: Path, t0: float, busy: tuple[float, float], own: float, total: float) -> None:
    """processes.csv over 90 s on 2 cores: a quiet machine but for ``busy`` (seconds), where the run's Locust
    took ``own`` % of a core and the machine ``total`` % (of all its cores together)."""
    lines = ["ts,process,role,pid,cpu_percent,cores"]
    for s in range(91):
        inside = busy[0] <= s <= busy[1]
        lines += [f"{t0 + s},local,locust,42,{own if inside else 30.0},2",
                  f"{t0 + s},machine,machine,0,{total if inside else 40.0},2"]
    (run / "processes.csv").write_text("\n".join(lines) + "\n")


def test_a_floor_the_machine_made_is_no_regression_and_one_the_run_made_is(tmp_path):
    """A 20 s fall of the same code's rate is a floor regression (the counts alone cannot say why). When the
    machine's cores were full and others' work took most of them over it, the floor is ``cannot tell``, its
    line saying so; the cores full with the run's own work leave it a regression."""
    def stalled(t):
        return np.where((t >= 18) & (t < 38), 0.02, 2.0)  # before the steady half

    base = _run(tmp_path / "base", 20.0, 1, T0)
    same = make_run(tmp_path / "same", workers=4, duration_s=90.0, rate=stalled, seed=5, t0=T0 + 3600,
                    steps={"commit_ms": lambda t: np.full_like(t, 20.0),
                           "lock_wait_ms": lambda t: np.full_like(t, 20.0)},
                    checks=CHECKS, lock_history="shared")
    floor = next(x for x in compare_dirs(base, same)["items"] if x["name"] == "floor")
    assert floor["regression"] and floor["verdict"] == "worse", floor["line"]

    _processes_csv(same, T0 + 3600, (16, 40), own=40.0, total=195.0)  # others on ~78 % of the two cores
    cmp = compare_dirs(base, same)
    floor = next(x for x in cmp["items"] if x["name"] == "floor")
    assert not floor["regression"] and floor["verdict"] == "cannot tell" and cmp["regressions"] == []
    assert floor["machine_busy"]["other"] > 0.7 and "work not this run's" in floor["line"], floor
    assert floor["ratio"] < 0.2  # the fall itself is still reported

    _processes_csv(same, T0 + 3600, (16, 40), own=190.0, total=195.0)  # the run's own work filled the cores
    floor = next(x for x in compare_dirs(base, same)["items"] if x["name"] == "floor")
    assert floor["regression"], floor["line"]
