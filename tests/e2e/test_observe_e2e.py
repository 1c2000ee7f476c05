"""A real run with the observer on: observed.csv, its agreement with the rows, its budget.

One short run, shared by the module's tests (its report's figures and page: tests/unit/report/test_observe_report.py):
the model driver on the embedded default (dynalite), a full commit per namespace, the stand-in's
[fidelity] model provisioned at 200 read units/s (the observer's budget: 5 %, 10 read units/s),
sampling every second.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.report.load import open_run
from harness.report.run.build import findings_of
from harness.report.show import json_safe
from tests.e2e.conftest import harness, rows

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("observe_e2e")]

SCENARIO = """
name = "observe-e2e"
backend = "dynamodb"
[fleet]
workers = 2
spawn_rate = 2
duration = "12s"
[workload]
kind = "throughput"
models_per_worker = 5
[datastore]
gsi = "per-model"
lock_scope = "namespace"
namespaces = "per-worker"
index_commit = "full"
[lock]
ttl = "3s"
wait = "6s"
retry = "100ms"
retry_cap = "200ms"
[fidelity]
capacity = "provisioned"
read_capacity = 200
write_capacity = 4000
[observe]
every = "1s"
"""


@pytest.fixture(scope="session")
def observed_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("observe")
    (base / "observe-e2e.toml").write_text(SCENARIO)
    run_dir = base / "run"
    p = harness("run", str(base / "observe-e2e.toml"), "--run-dir", str(run_dir), "--no-report", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    # the report's findings from the files alone (its figures and page: tests/unit/report/test_observe_report.py)
    return run_dir, json.loads(json.dumps(json_safe(findings_of(open_run(run_dir)))))


def test_observed_csv_holds_every_namespace_and_agrees_with_the_rows(observed_run):
    run_dir, f = observed_run
    obs = pd.read_csv(run_dir / "observed.csv")
    assert list(obs.columns) == ["time", "what", "key", "value"]
    d = rows(run_dir)
    entries = obs[obs["what"] == "index_entries"]
    assert set(entries["key"]) == set(d["user"]) == {"w0-0", "w0-1"}
    a = f["observed"]["agreement"]["index_entries"]
    assert a["agrees"] and a["samples"] >= 10 and a["between"] == a["samples"], a
    last = entries.groupby("key")["value"].last().astype(int)
    final = d[d["ok"]].groupby("user")["index_entries_written"].last()
    for ns in final.index:  # the last sample, after the load stopped: every commit that landed
        assert last[ns] >= final[ns]
    assert f["observed"]["changes"]["index_entries"]["grew"]


def test_the_observer_stays_within_its_budget_and_is_counted_apart(observed_run):
    run_dir, f = observed_run
    c = f["observed"]["cost"]
    assert c["unit"] == "read units" and c["budget_rate"] == pytest.approx(10.0)
    assert c["within_budget"] and 0 < c["rate"] <= 10.0 * 1.05, c
    assert c["requests"] > 20 and c["gaps"] == {}
    # it reads the exports' heads, which the fleet only writes: none of its reads is in keys.csv
    keys = pd.read_csv(run_dir / "keys.csv")
    export = keys[keys["key"].astype(str).str.endswith(".catalog-export.json")]
    assert len(export) and export["read_units"].sum() == 0 and export["write_units"].sum() > 0
    said = " ".join(f["sentences"])
    assert "The observer's own reads, counted apart from the fleet's" in said
    assert "against its budget of 10 read units/s (5 % of the [fidelity] model's 200" in said
    log = (run_dir / "locust.log").read_text()
    assert "harness: observer: every 1 s" in log and " 0 gap(s)" in log
