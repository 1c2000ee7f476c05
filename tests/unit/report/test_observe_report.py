"""The report reads observed.csv: what grew from the observer alone when the rows carry no counts (the command
driver's), beside the rows' counts when they do, the agreement of both, the observer's cost, its figure.

Synthetic run directories (tests/support/synthetic.py): the rows and the observer's samples are made from one model
of a namespaced run, so the test knows what each must say.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.record import runinfo
from harness.record.schema import COUNT_COLUMNS, SIZE_COLUMNS, UNIT_COLUMNS
from harness.report.load import open_run
from harness.report.run.build import build_report, findings_of
from tests.support.synthetic import T0, make_table, run_info

WORKERS, DURATION = 4, 120.0
PER_ITERATION = 5  # index entries a namespace gains with each iteration of its worker


def namespaced_run(path, *, counts: bool, every: float = 10.0, budget: float = 20.0, after_commit_ms: float = 0.0):
    """A namespaced run whose commit grows with the namespace's entries; ``counts``: the rows carry them.
    ``after_commit_ms``: each row's delete after its commit (a starved machine's tail): the store holds a row's
    entries from its commit's end, and the observer's samples read them so."""
    entries = lambda t: PER_ITERATION * 2.0 * t  # noqa: E731 - 2 iterations/s per worker
    table = make_table(workers=WORKERS, duration_s=DURATION, rate=lambda t: np.full_like(t, 2.0),
                       steps={"lock_wait_ms": lambda t: np.full_like(t, 5.0), "pull_ms": lambda t: 20 + 0.05 * t,
                              "commit_ms": lambda t: 20 + 0.8 * entries(t),
                              "delete_ms": lambda t: np.full_like(t, after_commit_ms)},
                       counts={"index_entries_written": entries, "pull_items_read": lambda t: entries(t) * WORKERS,
                               "read_units": lambda t: np.full_like(t, 2.0)},
                       unrecorded=() if counts else (*COUNT_COLUMNS, *UNIT_COLUMNS, *SIZE_COLUMNS))
    if counts:  # a full commit writes every entry of the namespace: 5 more with each of its worker's iterations
        written = pa.array((table["iteration"].to_numpy() + 1) * PER_ITERATION)
        table = table.set_column(table.schema.get_field_index("index_entries_written"), "index_entries_written",
                                 written)
    (path / "iterations").mkdir(parents=True)
    pq.write_table(table, path / "iterations" / "part-synthetic-000000.parquet")
    rows = table.select(["ts_end", "user", "ok", "delete_ms"]).to_pandas()
    end = (rows["ts_end"].astype("int64").to_numpy() / 1e6) - T0 - rows["delete_ms"].to_numpy() / 1000.0
    with (path / "observed.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time", "what", "key", "value"])
        w.writerow([T0, "observer_budget", "read units", budget])
        w.writerow([T0, "observer_capacity", "5 % of the [fidelity] model's 400 provisioned read units/s", 400])
        spent = 0.0
        for t in np.arange(0.5, DURATION + 0.5, every):
            for i in range(WORKERS):
                user = f"w0-{i}"
                done = int(((rows["user"] == user).to_numpy() & rows["ok"].to_numpy() & (end <= t)).sum())
                w.writerow([f"{T0 + t:.3f}", "index_entries", user, PER_ITERATION * done])
            spent += 0.6 * every * budget
            w.writerow([f"{T0 + t:.3f}", "observer_read_units", "ns:w0-0", spent])
            w.writerow([f"{T0 + t:.3f}", "observer_requests", "ns:w0-0", int(spent)])
            w.writerow([f"{T0 + t:.3f}", "observer_interval_s", "ns:w0-0", every])
        w.writerow([f"{T0 + 50:.3f}", "gap", "locks", "AccessDeniedException"])
    scenario = {"datastore": {"namespaces": "per-worker", "index_commit": "full", "gsi": "per-model"},
                "observe": {"every_s": every}}
    info = run_info(workers=WORKERS, duration_s=DURATION, scenario="namespaced")
    info["scenario"].update(scenario)
    runinfo.write(path, info)
    return path


def report(path):
    build_report([path])
    summary = json.loads((path / "report" / "summary.json").read_text())
    return summary["runs"][0]["findings"], (path / "report" / "index.html").read_text()


def findings(path):
    """The findings alone (no figures: a report's pictures take most of its time)."""
    return findings_of(open_run(path))


@pytest.fixture(scope="module")
def command_run(tmp_path_factory):
    return report(namespaced_run(tmp_path_factory.mktemp("command") / "run", counts=False))


def test_without_counts_in_the_rows_what_grew_is_named_from_the_observer_alone(command_run):
    f, html = command_run
    assert f["work_counts"]["index_entries_written"]["first"] is None  # the rows have no counts
    assert f["grew_most"] == "commit"
    assert f["explained_by"] == "observed_index_entries"
    commit = f["steps"]["commit"]
    assert commit["explained"] and commit["driver_label"] == "index entries in the namespace (observed)"
    assert commit["rho"] > 0.8
    grew = f["verdict"]["grew"]
    assert grew.startswith("Commit grew most") and "index entries in the namespace (observed)" in grew
    assert 'src="figures/grew.png"' in html and 'src="figures/observed.png"' in html


def test_the_observers_changes_and_cost_are_in_the_report(command_run):
    f, html = command_run
    ob = f["observed"]
    entries = ob["changes"]["index_entries"]
    assert entries["grew"] and entries["keys"] == WORKERS and entries["beside"] is None
    assert entries["last"] == pytest.approx(PER_ITERATION * 2 * DURATION, rel=0.15)  # per namespace
    c = ob["cost"]
    assert c["unit"] == "read units" and c["budget_rate"] == 20.0 and c["within_budget"]
    assert c["rate"] == pytest.approx(12.0, rel=0.1) and c["gaps"] == {"locks": {"count": 1,
                                                                                 "first": "AccessDeniedException"}}
    said = " ".join(f["sentences"])
    assert "Seen from outside (observed.csv, every 10 s)" in said and "locks: 1 (AccessDeniedException)" in said
    assert "against its budget of 20 read units/s (5 % of the [fidelity] model's 400" in said
    assert "What did the datastore hold?" in html


def test_with_counts_the_observer_stands_beside_them_and_agrees(tmp_path):
    f = findings(namespaced_run(tmp_path / "run", counts=True, every=2.0))
    assert f["explained_by"] == "index_entries_written"  # the rows' own count, when they carry it
    ob = f["observed"]
    assert ob["changes"]["index_entries"]["beside"] == "index_entries_written"
    a = ob["agreement"]["index_entries"]
    assert a["agrees"] and a["between"] == a["exact"] == a["samples"] >= 200
    said = " ".join(f["sentences"])
    assert "index entries per namespace" in said and f"{a['samples']} of {a['samples']} sample(s)" in said


def test_a_row_counts_from_its_commits_end_not_its_own(tmp_path):
    # 600 ms of delete after each commit: most samples are read after a commit landed and before its row ended
    f = findings(namespaced_run(tmp_path / "run", counts=True, every=2.0, after_commit_ms=600.0))
    a = f["observed"]["agreement"]["index_entries"]
    # (not every sample exactly: the synthetic rows' jittered deletes let a worker's next commit land first)
    assert a["agrees"] and a["between"] == a["samples"] >= 200 and a["exact"] >= 0.8 * a["samples"], a


def test_a_sample_off_its_neighbours_is_no_agreement(tmp_path):
    path = namespaced_run(tmp_path / "run", counts=True, every=2.0)
    obs = pd.read_csv(path / "observed.csv")
    mask = (obs["what"] == "index_entries") & (obs["key"] == "w0-1")
    obs.loc[mask, "value"] = (pd.to_numeric(obs.loc[mask, "value"]) + 1).astype(int).astype(str)  # one too many
    obs.to_csv(path / "observed.csv", index=False)
    a = findings(path)["observed"]["agreement"]["index_entries"]
    assert not a["agrees"] and a["keys_off"] == ["w0-1"]  # between its neighbours, but never exactly


def legacy_pairs(observed: list[tuple[float, float]], pulls: list[tuple[float, float, float]]):
    """Observed (t, FILE items) against rows (pull end t, items read, files fetched), on one span."""
    from harness.report.run.observed import legacy_agreement
    from harness.report.series import Span

    t0 = pd.Timestamp(T0, unit="s", tz="UTC")
    obs = pd.DataFrame({"time": [T0 + t for t, _ in observed], "what": "gsi_items", "key": "FILE",
                        "num": [v for _, v in observed]})
    rows = pd.DataFrame({"ts_start": [t0 + pd.Timedelta(seconds=t - 0.1) for t, _, _ in pulls],
                         "lock_wait_ms": 0.0, "pull_ms": 100.0, "ok": True,
                         "pull_items_read": [r for _, r, _ in pulls], "files_pulled": [f for _, _, f in pulls]})
    return legacy_agreement(obs, rows, Span(t0, t0 + pd.Timedelta(seconds=100), "rows", "rows"))


def test_the_file_key_pairs_with_the_pulls_that_ended_in_the_second_before_it():
    a = legacy_pairs([(10, 100), (20, 500), (30, 1000), (40, 2000)],
                     # a pull reads the FILE key's items, then one item per file it fetched
                     [(9.5, 100 + 7, 7), (19.2, 495 + 40, 40), (19.9, 505, 0), (29.0, 900, 0),  # 29.0: not in
                      (29.5, 995, 0), (33.0, 1500, 0), (39.8, 2000 + 1, 1)])                     # (29, 30]
    assert a["pairs"] == 4 and a["pulls"] == 5
    assert a["series"]["pulls"] == [100, 500, 995, 2000]
    assert a["slope"] == pytest.approx(1.0, abs=0.003) and a["agrees"]
    off = legacy_pairs([(10, 100), (20, 500), (30, 1000)], [(9.5, 90, 0), (19.5, 450, 0), (29.5, 900, 0)])
    assert off["slope"] == pytest.approx(1.11, abs=0.01) and not off["agrees"]
    none = legacy_pairs([(10, 100)], [(5.0, 100, 0)])
    assert none["pairs"] == 0 and "second before" in none["note"]


def test_a_run_without_observed_csv_reports_as_before(tmp_path):
    path = namespaced_run(tmp_path / "run", counts=True)
    (path / "observed.csv").unlink()
    f = findings(path)
    assert f["observed"] is None and f["explained_by"] == "index_entries_written"
    assert not any("observed" in s for s in f["sentences"])
