"""The review notebook executes top to bottom from the repo root and from its own folder (a real kernel, nbclient).

The old notebook looked for ``runs/`` relative to the kernel's working
directory (IndexError from its folder), and opened whatever it found there
(``runs/jobs is not a run directory``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from tests.support.synthetic import make_run

ROOT = Path(__file__).resolve().parents[3]
# a session-scoped fixture (not torn down when the worker runs another module's test in between),
# built once: the module's tests stay on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("reports_notebook")


def _execute(cwd: Path, monkeypatch, **env: str) -> tuple[str, int]:
    for k in ("HARNESS_REVIEW_RUNS", "HARNESS_RUNS_DIR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    scratch = Path(tempfile.mkdtemp(prefix="notebook-tmp-"))
    monkeypatch.setenv("TMPDIR", str(scratch))  # the kernel's: the figures' files must not outlive the run
    nb = nbformat.read(ROOT / "harness" / "products" / "notebook" / "review.ipynb", as_version=4)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
        assert not [p for p in scratch.rglob("*") if p.suffix == ".png"], "figure files left behind"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    return text, images


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory):
    """A runs/ folder as users have it: runs, a jobs folder, a comparison report and a web session."""
    root = tmp_path_factory.mktemp("repo") / "runs"
    make_run(root / "legacy", workers=4, duration_s=300.0, scenario="legacy-gsi",
             rate=lambda t: 1.0 * (1 - 0.8 * t / 300), steps={"pull_ms": lambda t: 20 + 400 * t / 300},
             counts={"pull_items_read": lambda t: 5 + 3 * t}, failure=lambda t: np.full_like(t, 0.1))
    (root / "jobs").mkdir()
    (root / "jobs" / "jobs.db").write_bytes(b"")
    (root / "comparison-x").mkdir()
    (root / "comparison-x" / "summary.json").write_text("{}")
    session = root / "web-session"
    session.mkdir()
    (session / "run.json").write_text(json.dumps({"tests": ["tests/001", "tests/002"]}))
    make_run(session / "tests" / "001", workers=4, duration_s=120.0, scenario="shared-lock",
             rate=lambda t: np.full_like(t, 0.5), t0=1_750_010_000.0)
    make_run(session / "tests" / "002", workers=8, duration_s=120.0, scenario="shared-lock",
             rate=lambda t: np.full_like(t, 0.25), t0=1_750_020_000.0)
    return root


def test_from_the_repo_root_with_a_session_overlays_its_tests(runs_dir, monkeypatch):
    text, images = _execute(ROOT, monkeypatch, HARNESS_REVIEW_RUNS=str(runs_dir / "web-session"))
    assert "tests/001" in text and "tests/002" in text
    assert "shared-lock / dynamodb / 4 workers" in text and "shared-lock / dynamodb / 8 workers" in text
    assert "x2 workers (4 -> 8)" in text and "did not credibly raise the rate" in text
    assert "Settings that differ" in text and "Checks" in text
    assert images >= 2 * 3 + 1  # each run's rate, step time, latency, ... and the overlay


def test_from_reports_it_finds_the_latest_run_and_skips_what_is_not_a_run(runs_dir, monkeypatch):
    text, images = _execute(ROOT / "harness" / "products" / "notebook", monkeypatch, HARNESS_RUNS_DIR=str(runs_dir))
    assert f"Reviewing:\n  {runs_dir / 'web-session' / 'tests' / '002'}" in text  # the latest, jobs/ skipped
    assert "Successful iterations of the fleet" in text and images >= 3
    assert "One run: add more" in text


def test_says_clearly_when_there_is_no_run(tmp_path, monkeypatch):
    (tmp_path / "jobs").mkdir()
    text, images = _execute(ROOT / "harness" / "products" / "notebook", monkeypatch, HARNESS_RUNS_DIR=str(tmp_path))
    assert f"No runs found in {tmp_path}: make one with `harness run SCENARIO`" in text
    assert "No runs to compare." in text and images == 0


def test_the_notebook_names_the_same_bound_as_the_report(tmp_path, monkeypatch):
    from harness.report.load import open_run
    from harness.report.run.build import findings_of
    from tests.support.synthetic import make_lock_run

    run, _ = make_lock_run(tmp_path / "runs" / "lock", workers=6, duration_s=60.0, hold_ms=(40, 60),
                           retry_ms=(50, 100))
    text, _ = _execute(ROOT, monkeypatch, HARNESS_REVIEW_RUNS=str(run))
    f = findings_of(open_run(run))
    assert f["bottleneck"]["kind"] == "lock" and f["bottleneck"]["sentence"] in text
    # the outcome in the words its report and `harness runs` use (harness/record/outcome.py)
    assert f["outcome"]["bound"].startswith("the lock dynamodb://synthetic-table (")
    assert f"bound by {f['outcome']['bound']}; checks" in text and f["outcome"]["completion_short"] in text
    assert f["sentences"][0] in text  # the failures first: the lock timeouts and the lock behind them
