"""The conformance test of `harness jobs pre-age --layout swamp-s3@c25ec91`: the real swamp reads what it wrote.

`harness jobs pre-age ... --layout swamp-s3@c25ec91 --bucket B --prefix P` fills a bucket on SeaweedFS (the
embedded S3 stand-in, a real process); a fresh swamp repository on that bucket and prefix then runs
`swamp datastore sync --json` (a full pull: it must pull every file written) and `swamp data search --json`
(swamp's own catalog of the pulled data: every pre-aged model's data at its last version). The prefix is given
on purpose: the extension puts it before every key (``s3_client.ts`` ``fullKey``), which the recorded fixture
(no prefix) does not show.

Gated as tests/e2e/test_swamp_layout_e2e.py is: ``HARNESS_SWAMP`` (a swamp executable) and
``HARNESS_SWAMP_S3_REPO`` (realswamp's ``template/s3``: swamp-club/swamp-extensions c25ec91's S3 datastore).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import boto3
import pytest

from tests.e2e.conftest import clean_env, harness

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-e2e")]

SWAMP = os.environ.get("HARNESS_SWAMP", "")
S3_REPO = os.environ.get("HARNESS_SWAMP_S3_REPO", "")
if not (SWAMP and S3_REPO):
    pytest.skip("the real swamp is not here: set HARNESS_SWAMP to a swamp executable and HARNESS_SWAMP_S3_REPO to "
                "the S3 repository template (../shared/realswamp/setup.sh builds both: template/s3) to run it",
                allow_module_level=True)

MODELS, VERSIONS = 30, 2
LAYOUT, BUCKET, PREFIX = "swamp-s3@c25ec91", "pre-aged-s3", "team/swamp"
CREDS = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def seaweedfs(tmp_path_factory):
    from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS, missing_runtime

    if missing_runtime():
        pytest.skip(f"seaweedfs unavailable: {missing_runtime()}")
    w = EmbeddedSeaweedFS(data_dir=tmp_path_factory.mktemp("weed")).start()
    yield w
    w.stop()


def _swamp(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([SWAMP, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _repository(tmp_path: Path, url: str, env: dict[str, str]) -> Path:
    """A fresh swamp repository on the bucket, as the swamp driver makes one (its `datastore_yaml`)."""
    from harness.load.drivers.swamp import datastore_yaml

    repo = tmp_path / "repo"
    repo.mkdir()
    assert _swamp(repo, "init", "--tool", "none", env=env).returncode == 0
    shutil.copytree(Path(S3_REPO) / "extensions", repo / "extensions")
    shutil.copy2(Path(S3_REPO) / "deno.json", repo / "deno.json")
    with (repo / ".swamp.yaml").open("a") as f:
        f.write(datastore_yaml("s3", {"bucket": BUCKET, "region": "us-east-1", "prefix": PREFIX, "endpoint": url}))
    return repo


def test_a_fresh_swamp_repository_sees_every_pre_aged_models_data_in_s3(seaweedfs, tmp_path):
    from harness.jobs.pacing.journal import Journal
    from harness.jobs.pacing.swamp_s3_layout import S3Target, SwampS3LayoutSource

    env = clean_env(AWS_ENDPOINT_URL_S3=seaweedfs.url, HARNESS_JOBS_DIR=str(tmp_path), **CREDS)
    p = harness("jobs", "pre-age", "legacy-gsi", "--models", str(MODELS), "--versions", str(VERSIONS),
                "--layout", LAYOUT, "--bucket", BUCKET, "--prefix", PREFIX, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    (job,) = Journal(tmp_path / "jobs.db").all()
    assert (job.state, job.done, job.failed, job.total) == ("done", MODELS, 0, MODELS)
    # the job's own parameters name the models it wrote (no request to the bucket needed)
    seeded = SwampS3LayoutSource(None, S3Target(BUCKET, PREFIX), MODELS, VERSIONS, job.params["epoch"])

    swamp_env = clean_env(HOME=str(tmp_path / "home"), **CREDS)
    repo = _repository(tmp_path, seaweedfs.url, swamp_env)
    sync = _swamp(repo, "datastore", "sync", "--json", env=swamp_env)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    result = json.loads(sync.stdout)
    assert result["errors"] == [] and result["filesPulled"] == seeded.files() == MODELS * (2 + 3 * VERSIONS)
    # swamp read the job's index as it is: had it found none (or one it could not use) it would have listed the
    # bucket and written its own (``discoverIndexFromBucket``), with another ``lastPulled``
    s3 = boto3.client("s3", endpoint_url=seaweedfs.url, region_name="us-east-1", aws_access_key_id="x",
                      aws_secret_access_key="x")
    for rel, body in seeded.shared_objects().items():
        assert s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{rel}")["Body"].read() == body, rel

    search = _swamp(repo, "data", "search", "--json", env=swamp_env)
    assert search.returncode == 0, search.stdout + search.stderr
    found = json.loads(search.stdout)["results"]
    assert {r["modelId"] for r in found} == set(seeded.model_ids)  # every pre-aged model's data
    assert {(r["modelType"], r["name"], r["version"]) for r in found} == {("@webframp/system", "current", VERSIONS)}
