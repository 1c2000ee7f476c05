"""A real short run on the embedded default, its report, and the review notebook on it."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient
from PIL import Image

from tests.e2e.conftest import ROOT, harness

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("real") / "run"
    p = harness("run", "namespaced", "--duration", "15s", "--run-dir", str(run_dir))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"harness: report {run_dir / 'report' / 'index.html'}" in p.stdout
    return run_dir


def test_harness_run_builds_the_report(real_run):
    out = real_run / "report"
    summary = json.loads((out / "summary.json").read_text())
    html = (out / "index.html").read_text()
    names = summary["figures"]
    assert {"rate.png", "failures.png", "step_time.png", "work_counts.png", "lock_wait.png",
            "latency_percentiles.png"} == set(names)
    for name in names:
        assert f'src="figures/{name}"' in html
        with Image.open(out / "figures" / name) as im:
            assert im.format == "PNG" and im.width >= 600
            assert len(im.convert("L").getcolors(maxcolors=65536) or []) > 20
    f = summary["runs"][0]["findings"]
    assert f["rows"] > 20 and f["workers"] == 4 and f["fleet"]["shape"] in ("flat", "still falling")
    assert f["dominant_step"]["first"]["step"] and len(f["sentences"]) >= 3
    # the namespaced scenario's full commit is the step that grows, with index entries written
    ie = f["work_counts"]["index_entries_written"]
    assert ie["last"] > 2 * ie["first"]
    assert summary["runs"][0]["endpoint_kind"] == "embedded"


def test_report_of_a_directory_that_is_not_a_run(tmp_path):
    p = harness("report", str(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().endswith("is not a run directory (no run.json): pass a directory that `harness run` made")


def test_review_notebook_runs_top_to_bottom(real_run, monkeypatch):
    nb = nbformat.read(ROOT / "reports" / "review.ipynb", as_version=4)
    monkeypatch.setenv("HARNESS_REVIEW_RUNS", str(real_run))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "namespaced / dynamodb / 4 workers" in printed and "Fleet rate went from" in printed
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 6
