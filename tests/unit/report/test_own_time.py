"""A command-driver run's first screen leads with the datastore's own time beside the fleet's rate (issue 56).

Synthetic run directories (tests/support/synthetic.py) shaped like the real swamp's: an iteration is ~5 s, most of it
the process's start and exit; the steps' spans (the datastore's own time) grow from ~300 to ~600 ms over the
run while the iteration, and so the rate, barely moves. The rate alone reads flat; the line must say the
datastore's time doubled, and that process start hides it.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness.record import runinfo
from harness.report.load import open_run
from harness.report.run.build import build_report, findings_of
from tests.support.synthetic import make_table, run_info

WORKERS, DURATION = 4, 900.0
ITERATION_MS = 5000.0


def command_run(path, *, grow: bool, command: bool = True):
    """Swamp-like rows: commit 300 -> 600 ms (``grow``) or a steady 300 ms, the iteration a steady 5 s."""
    commit = (lambda t: 300.0 + 300.0 * t / DURATION) if grow else (lambda t: np.full_like(t, 300.0))
    t = make_table(workers=WORKERS, duration_s=DURATION, rate=lambda t: np.full_like(t, 1000 / ITERATION_MS),
                   steps={"commit_ms": commit, "pull_ms": lambda t: np.full_like(t, 40.0)},
                   think_ms=lambda t: ITERATION_MS - commit(t) - 40.0, scenario="namespaced-swamp", seed=3)
    if command:  # the command driver's process columns
        total = t.column("total_ms").to_numpy()
        t = t.set_column(t.schema.get_field_index("command_ms"), "command_ms", pa.array(total - 0.5))
        t = t.set_column(t.schema.get_field_index("spans"), "spans", pa.array(np.full(len(total), 54), pa.int64()))
    (path / "iterations").mkdir(parents=True)
    pq.write_table(t, path / "iterations" / "part-synthetic-000000.parquet")
    runinfo.write(path, run_info(workers=WORKERS, duration_s=DURATION, scenario="namespaced-swamp"))
    return path


def test_growth_hidden_by_process_start_is_on_the_first_screen(tmp_path):
    path = command_run(tmp_path / "run", grow=True)
    f = findings_of(open_run(path))
    o = f["own_time"]
    assert 300 <= o["early_ms"] <= 420 and 560 <= o["late_ms"] <= 700, o
    assert o["grew"] and 1.5 <= o["growth"] <= 2.2 and o["interval"][0] > 1.2
    assert 0.85 <= o["rate_ratio"] <= 1.15  # the rate stayed flat ...
    assert o["hidden"] and 0.85 <= o["outside_share"] <= 0.95  # ... because process start is most of an iteration
    line = f["verdict"]["own_time"]
    assert line.startswith("The datastore's own time per iteration (its steps' spans): ")
    assert "grew" in line and line.endswith("so the rate hides the datastore's growth.")
    build_report([path])
    html = (path / "report" / "index.html").read_text()
    lead = html[:html.index('<table class="verdict">') + 6000]
    assert "<th>Datastore&#x27;s own time</th>" in lead or "<th>Datastore's own time</th>" in lead
    summary = json.loads((path / "report" / "summary.json").read_text())
    assert summary["runs"][0]["findings"]["own_time"]["hidden"] is True


def test_a_steady_datastore_is_said_steady_and_a_model_run_has_no_line(tmp_path):
    f = findings_of(open_run(command_run(tmp_path / "steady", grow=False)))
    o = f["own_time"]
    assert not o["grew"] and not o["hidden"] and 0.8 <= o["growth"] <= 1.2
    assert "no credible change" in f["verdict"]["own_time"]
    model = findings_of(open_run(command_run(tmp_path / "model", grow=True, command=False)))
    assert model["own_time"] is None and model["verdict"]["own_time"] is None
