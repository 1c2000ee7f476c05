"""The conformance test of `harness jobs pre-age --layout`: the real swamp reads what the pre-age wrote.

`harness jobs pre-age ... --layout swamp-dynamodb@<version>` fills a table on dynalite (the embedded stand-in, a
real process); a fresh swamp repository on that table then runs `swamp datastore sync --json` (a full pull:
it must pull every file written) and `swamp data search --json` (swamp's own catalog of the pulled data: every
pre-aged model's data at its last version).

Gated as tests/e2e/test_swamp_e2e.py is: ``HARNESS_SWAMP`` (a swamp executable) and ``HARNESS_SWAMP_REPO``
(realswamp's ``template/ddb``: webframp a929b7a); the legacy layout also needs ``HARNESS_SWAMP_LEGACY_REPO``
(``template/ddb-legacy``: bc36088a, ../shared/realswamp/build_legacy_template.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, clean_env, harness

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-e2e")]

SWAMP = os.environ.get("HARNESS_SWAMP", "")
REPO = os.environ.get("HARNESS_SWAMP_REPO", "")
LEGACY_REPO = os.environ.get("HARNESS_SWAMP_LEGACY_REPO", "")
if not (SWAMP and REPO):
    pytest.skip("the real swamp is not here: set HARNESS_SWAMP to a swamp executable and HARNESS_SWAMP_REPO to a "
                "repository template (../shared/realswamp/setup.sh builds both) to run it", allow_module_level=True)

MODELS, VERSIONS = 30, 2
TEMPLATES = {"swamp-dynamodb@a929b7a": REPO, "swamp-dynamodb@bc36088a": LEGACY_REPO}


@pytest.fixture(scope="module")
def dynalite():
    from harness.aws.standin.dynalite import EmbeddedDynalite

    d = EmbeddedDynalite(in_memory=True, s3_moto=False, node_modules=ROOT / "node_modules").start()
    yield d
    d.stop()


def _swamp(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([SWAMP, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _repository(tmp_path: Path, template: str, table: str, url: str, env: dict[str, str]) -> Path:
    """A fresh swamp repository on the table, as a swamp user makes one (../shared/realswamp/README.md)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    assert _swamp(repo, "init", "--tool", "none", env=env).returncode == 0
    shutil.copytree(Path(template) / "extensions", repo / "extensions")
    with (repo / ".swamp.yaml").open("a") as f:
        f.write(f'datastore:\n  type: "@webframp/dynamodb-datastore"\n  config:\n    tableName: "{table}"\n'
                f'    region: us-east-1\n    endpoint: "{url}"\n    autoCreateTable: true\n')
    return repo


@pytest.mark.parametrize("layout", sorted(TEMPLATES))
def test_a_fresh_swamp_repository_sees_every_pre_aged_models_data(layout, dynalite, tmp_path):
    if not TEMPLATES[layout]:
        pytest.skip(f"{layout} needs HARNESS_SWAMP_LEGACY_REPO (realswamp's template/ddb-legacy)")
    from harness.jobs.pacing.journal import Journal
    from harness.jobs.pacing.swamp_layout import LAYOUTS, SwampLayoutSource

    table = "pre-aged-" + layout[-7:]
    creds = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}
    env = clean_env(AWS_ENDPOINT_URL=dynalite.dynamodb_url, HARNESS_JOBS_DIR=str(tmp_path), **creds)
    p = harness("jobs", "pre-age", "legacy-gsi", "--models", str(MODELS), "--versions", str(VERSIONS), "--table", table,
                "--layout", layout, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    (job,) = Journal(tmp_path / "jobs.db").all()
    assert (job.state, job.done, job.failed) == ("done", job.total, 0)
    # the job's own parameters name the models it wrote (no request to the table needed)
    seeded = SwampLayoutSource(None, table, LAYOUTS[layout], MODELS, VERSIONS, job.params["epoch"])

    swamp_env = clean_env(HOME=str(tmp_path / "home"), **creds)
    repo = _repository(tmp_path, TEMPLATES[layout], table, dynalite.dynamodb_url, swamp_env)
    sync = _swamp(repo, "datastore", "sync", "--json", env=swamp_env)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    result = json.loads(sync.stdout)
    assert result["errors"] == [] and result["filesPulled"] == seeded.files() == MODELS * (2 + 3 * VERSIONS)

    search = _swamp(repo, "data", "search", "--json", env=swamp_env)
    assert search.returncode == 0, search.stdout + search.stderr
    found = json.loads(search.stdout)["results"]
    assert {r["modelId"] for r in found} == set(seeded.model_ids)  # every pre-aged model's data
    assert {(r["modelType"], r["name"], r["version"]) for r in found} == {("@webframp/system", "current", VERSIONS)}
