"""The suite's report from a run directory alone: suite.json's shape and numbers, the table, the page."""

from __future__ import annotations

import json

import pytest

from harness.products.suite import page as suite_page
from harness.products.suite import suite as suite_report


def _phase(name, ms, requests=None, sent=0, received=0, detail=""):
    return {"phase": name, "ms": ms, "requests": requests or {}, "bytes_sent": sent, "bytes_received": received,
            "detail": detail}


def _run_dir(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    info = {"suite": "swamp-datastore", "backend": "s3", "layouts": ["monolith", "sharded"], "trials": 3,
            "quick": False, "shape": {"files": 1000, "models": 50, "file_bytes": 5120},
            "scenarios": [{"number": 2, "name": "Push 1 modified / 1000", "phases": [], "note": "n2"},
                          {"number": 9, "name": "Writeback partitioned (parallel)",
                           "phases": ["pushChanged.writeback"], "note": ""},
                          {"number": 10, "name": "v2: Push 1 modified / 1000", "phases": [], "note": ""}],
            "outcomes": [{"number": 10, "scenario": "v2: Push 1 modified / 1000", "layout": "monolith", "trials": 0,
                          "error": None, "not_applicable": "v2 is swamp's shard-first index"},
                         {"number": 9, "scenario": "Writeback partitioned (parallel)", "layout": "sharded",
                          "trials": 1, "error": "ClientError: boom", "not_applicable": None}],
            "stand_in": {"name": "seaweedfs", "services": {"s3": "seaweedfs 4.48"}}}
    (tmp_path / suite_report.RUN_JSON).write_text(json.dumps(info))
    lines = []
    for trial, (lock, up, wb) in enumerate([(3.0, 10.0, 20.0), (4.0, 12.0, 30.0), (5.0, 11.0, 25.0)]):
        for layout in ("sharded", "monolith"):  # written out of order: the report orders by the run's layouts
            lines.append({"number": 2, "scenario": "Push 1 modified / 1000", "layout": layout, "trial": trial,
                          "total_ms": lock + up + wb + 5 + 1,
                          "phases": [_phase("lock", lock, {"PutObject": 1, "GetObject": 2}, 100, 50),
                                     _phase("pushChanged.upload", up, {"PutObject": 1}, 5000, 0, "pushed=1"),
                                     _phase("pushChanged.writeback", wb, {"PutObject": 2, "GetObject": trial % 2},
                                            700, 300, "entries=20"),
                                     _phase("release", 5.0, {"PutObject": 1}, 10, 0),
                                     _phase("lock.held", up + wb + 0.5)]})
    lines.append({"number": 9, "scenario": "Writeback partitioned (parallel)", "layout": "monolith", "trial": 0,
                  "total_ms": 40.0,
                  "phases": [_phase("pushChanged.upload", 9.0), _phase("pushChanged.writeback", 21.0)]})
    (tmp_path / suite_report.TRIALS_JSONL).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return tmp_path


def test_suite_json_has_the_issues_shape_and_the_trials_numbers(tmp_path):
    doc = suite_report.write_summary(_run_dir(tmp_path))
    assert json.loads((tmp_path / "suite.json").read_text()) == doc
    assert doc["suite"] == "swamp-datastore" and doc["backend"] == "s3"
    rows = {(r["number"], r["layout"], r["phase"]): r for r in doc["results"]}
    wanted = {"scenario", "layout", "phase", "trials", "samples_ms", "min_ms", "median_ms", "mean_ms", "max_ms",
              "requests", "bytes"}
    assert all(wanted <= set(r) for r in doc["results"])
    wb = rows[(2, "sharded", "pushChanged.writeback")]
    assert wb["samples_ms"] == [20.0, 30.0, 25.0] and wb["trials"] == 3
    assert (wb["min_ms"], wb["median_ms"], wb["mean_ms"], wb["max_ms"]) == (20.0, 25.0, 25.0, 30.0)
    assert wb["requests"] == 2 and wb["requests_by_op"] == {"GetObject": 0, "PutObject": 2}  # trials: 2, 3, 2
    assert wb["bytes"] == 1000 and wb["detail"] == "entries=20"
    total = rows[(2, "sharded", "total")]
    assert total["samples_ms"] == [39.0, 52.0, 47.0]
    assert total["requests"] == 3 + 1 + 2 + 1 + 0  # lock, upload, writeback (median trial), release; not lock.held
    assert total["bytes"] == 150 + 5000 + 1000 + 10


def test_rows_come_total_first_in_the_order_the_phases_ran_layouts_as_the_run_listed_them(tmp_path):
    doc = suite_report.summary(_run_dir(tmp_path))
    two = [(r["layout"], r["phase"]) for r in doc["results"] if r["number"] == 2]
    phases = ["total", "lock", "pushChanged.upload", "pushChanged.writeback", "release", "lock.held"]
    assert two == [("monolith", p) for p in phases] + [("sharded", p) for p in phases]


def test_a_phase_filter_keeps_the_total_and_the_named_phases(tmp_path):
    doc = suite_report.summary(_run_dir(tmp_path))
    assert [r["phase"] for r in doc["results"] if r["number"] == 9] == ["total", "pushChanged.writeback"]


def test_not_applicable_and_failures_are_listed_with_why(tmp_path):
    doc = suite_report.summary(_run_dir(tmp_path))
    assert doc["not_applicable"] == [{"number": 10, "scenario": "v2: Push 1 modified / 1000", "layout": "monolith",
                                      "not_applicable": "v2 is swamp's shard-first index"}]
    assert doc["errors"][0]["error"] == "ClientError: boom"
    out = suite_page.text(doc)
    assert "monolith   not applicable: v2 is swamp's shard-first index" in out
    assert "sharded    FAILED after 1 trials: ClientError: boom" in out


def test_the_table_and_the_page(tmp_path):
    doc, out = suite_page.build(_run_dir(tmp_path))
    assert out.splitlines()[0] == "swamp-datastore on s3 (seaweedfs 4.48): 3 trials a scenario, 1000 files of 5120 B " \
                                  "over 50 models"
    line = next(x for x in out.splitlines() if "pushChanged.writeback" in x and "entries" in x)
    assert line.split()[1:8] == ["25.00", "20.00", "25.00", "30.00", "2", "1.00", "KB"]
    page = (tmp_path / "suite.html").read_text()
    assert "Push 1 modified / 1000" in page and "n2" in page and (tmp_path / suite_page.FIGURE).stat().st_size > 1000
    assert (tmp_path / "suite.txt").read_text() == out


def test_read_summary_refuses_what_is_not_a_suite_json(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"runs": []}))
    with pytest.raises(ValueError, match="no \"results\" list"):
        suite_report.read_summary(tmp_path / "x.json")
    doc = suite_report.write_summary(_run_dir(tmp_path))
    assert suite_report.read_summary(tmp_path) == doc  # a run directory stands for its suite.json


def test_harness_report_rebuilds_a_suite_run_from_its_files(tmp_path, capsys):
    from harness.cli.main import main

    run = _run_dir(tmp_path / "run")
    assert main(["report", str(run)]) == 2  # its kind is said by the command: one line naming it
    assert f"`harness report --suite {run}` builds its report" in capsys.readouterr().err
    assert main(["report", "--suite", str(run)]) == 0
    assert json.loads((run / "suite.json").read_text())["suite"] == "swamp-datastore"
    assert f"suite report {run / 'suite.html'}" in capsys.readouterr().out
    assert main(["report", "--suite", str(run), str(tmp_path)]) == 2
    assert f"{tmp_path} is not a suite's directory" in capsys.readouterr().err
