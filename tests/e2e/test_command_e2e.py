"""`harness run namespaced --driver command`, end to end: real Locust, the reference command (`harness-swamp`)
one process per call against the embedded default, every step timed by its own spans.

Every row's step times are its spans' durations (compared from the spans table, not from the row's own
making); the report reads what the model twin's reads (the full commit's time driven by the index entries it
writes); processes.csv counts the commands under their own role.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.record.schema import STEP_COLUMNS
from harness.record.spans import read_spans
from tests.e2e.conftest import harness, rows

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("command-e2e")]


@pytest.fixture(scope="module")
def command_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("command") / "namespaced-command"
    p = harness("run", "namespaced", "--driver", "command", "--users", "3", "--duration", "30s", "--run-dir",
                str(run_dir), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return run_dir


def test_every_rows_step_times_are_its_spans_durations(command_run):
    d = rows(command_run)
    assert len(d) >= 9 and d["ok"].all() and set(d["scenario"]) == {"namespaced-command"}
    assert (d["spans"] > 0).all() and (d["spans_rejected"] == 0).all()
    s = read_spans(command_run)
    joined = s[s["column"].notna() & s["iteration"].notna()]
    for col in STEP_COLUMNS.values():
        got = joined[joined["column"] == col].groupby(["user", "iteration"])["duration_ms"].sum()
        want = d.set_index(["user", "iteration"])[col].dropna()
        if col == "lock_wait_ms":  # the lock acquire span's lock.wait_duration_ms: its duration, as the model timed it
            attrs = joined[joined["column"] == col].assign(
                wait=lambda x: x["attributes"].map(lambda a: json.loads(a)["lock.wait_duration_ms"]))
            assert (attrs["wait"] - attrs["duration_ms"]).abs().max() < 0.01
        assert set(got.index) == set(want.index), col
        # (spans carry nanoseconds: a row's float milliseconds agree to the microsecond)
        pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False, rtol=0, atol=1e-3)
    for col in ("lock_wait_ms", "pull_ms", "method_ms", "push_ms", "commit_ms", "export_ms", "release_ms"):
        assert d[col].notna().all(), col
    assert d["delete_ms"].isna().all() and d["prune_ms"].isna().all()  # long-lived models: never deleted
    # each command's own span parents what the command sent: nothing dangles, nothing came late
    assert not s["late"].any() and s["iteration"].notna().all()
    assert set(s.loc[s["parent"].isna(), "name"]) == {"harness.command run", "harness.command setup"}


def test_the_report_reads_what_the_model_twin_reads(command_run):
    d = rows(command_run)
    ok = d[d["ok"]].sort_values("iteration")
    growth = [b - a for _, u in ok.groupby("user") for a, b in zip(u["index_entries_written"],
                                                                   u["index_entries_written"][1:], strict=False)]
    assert growth and min(growth) >= 3, growth  # the full commit rewrites the namespace's index, as the model's
    assert set(d["lock_attempts"]) == {1}  # one lock per namespace: never contended
    f = json.loads((command_run / "report" / "summary.json").read_text())["runs"][0]["findings"]
    assert f["errors"]["lock_timeout"] == 0
    assert f["work_counts"]["index_entries_written"]["grew"]
    commit = f["steps"]["commit"]
    assert commit["primary_driver"] == "index_entries_written"  # the count that drives it, as the model's says
    assert commit["driver"] in ("index_entries_written", "commit_requests")  # the full commit's batches grow too
    # the count grew and the step's time is set beside it over every success (whether the ~20 iterations of a
    # 30-s run show the commit growing with it depends on the machine: starved, noise outweighs it)
    grown = commit["driver_change"]
    assert grown["grew"] and grown["trend"]["rising"] and commit["rho_n"] >= 9
    spans = f["spans"]
    assert spans["command"]["without_spans"] == 0 and spans["command"]["iterations"] == len(d)
    assert "delete" in spans["sentence"] and "prune" in spans["sentence"]  # named as not measured, not drawn as 0
    assert {"delete_ms", "prune_ms"} <= set(spans["unmeasured"]) and "commit_ms" not in spans["unmeasured"]
    html = (command_run / "report" / "index.html").read_text()
    assert "not measured (no span filled them)" in html


def test_processes_csv_counts_the_commands_under_their_own_role(command_run):
    p = pd.read_csv(command_run / "processes.csv")
    cmd = p[p["role"] == "command"]
    assert len(cmd) >= 5 and cmd["cpu_percent"].sum() > 0
    assert (cmd["pid"] == p.loc[p["process"] == "local", "pid"].iloc[0]).all()  # the Locust process that ran them
