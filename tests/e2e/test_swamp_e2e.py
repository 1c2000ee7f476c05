"""`harness run namespaced --driver swamp`, end to end, on the real swamp: real Locust, real swamp processes
(deno), the embedded dynalite, every step timed by swamp's own spans.

It runs only where ``HARNESS_SWAMP`` names a swamp executable and ``HARNESS_SWAMP_REPO`` a repository template
(realswamp's ``template/ddb``: ../shared/realswamp/README.md) — never merely because ``swamp`` is on PATH,
since CI runs on machines that may have one — and says why it was skipped otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.conftest import harness, rows

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-e2e")]

SWAMP = os.environ.get("HARNESS_SWAMP", "")
REPO = os.environ.get("HARNESS_SWAMP_REPO", "")
if not (SWAMP and REPO):
    pytest.skip("the real swamp is not here: set HARNESS_SWAMP to a swamp executable and HARNESS_SWAMP_REPO to a "
                "repository template (../shared/realswamp/setup.sh builds both) to run it", allow_module_level=True)


@pytest.fixture(scope="module")
def swamp_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("swamp") / "namespaced-swamp"
    p = harness("run", "namespaced", "--driver", "swamp", "--swamp", SWAMP, "--swamp-repo", REPO, "--users", "2",
                "--duration", "40s", "--run-dir", str(run_dir), timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr
    return run_dir


def test_every_iteration_syncs_with_each_lock_its_own_column(swamp_run):
    d = rows(swamp_run)
    ok = d[d["ok"]]
    assert len(d) >= 2 and set(d["scenario"]) == {"namespaced-swamp"}  # a busy machine runs few: no rate here
    assert len(ok) == len(d), d.loc[~d["ok"], ["error_kind", "error"]].to_string()
    assert (ok["requests"] > 0).mean() >= 0.95  # every model was created before its first run
    assert ok["lock_wait_ms"].notna().all() and ok["commit_lock_ms"].notna().all()
    assert (ok["lock_ttl_ms"] == 30_000).all() and (ok["lock_timeout_ms"] == 60_000).all()  # swamp's own
    assert ok["after_exit_ms"].median() < 100  # OTEL_BSP_USE=1: the trace is whole at the exit


def test_each_user_has_its_own_repository_on_the_runs_table(swamp_run):
    import json

    plan = json.loads((swamp_run / "plan.json").read_text())
    table = plan["resources"]["table"]
    for w in (swamp_run / "workdirs").iterdir():
        if not w.is_dir():
            continue
        cfg = (w / ".swamp.yaml").read_text()
        assert f'tableName: "{table}"' in cfg and f'namespace: "{w.name}"' in cfg
        assert (w / "extensions" / "datastores").is_dir()


def test_the_report_says_swamps_lock_and_the_drivers_own_wait(swamp_run):
    html = (Path(swamp_run) / "report" / "index.html").read_text()
    assert "TTL 30 s, wait 60 s" in html and "the driver&#x27;s own wait for spans" in html
