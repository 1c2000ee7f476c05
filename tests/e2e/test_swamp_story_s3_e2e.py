"""`harness story --driver swamp --quick`, end to end, on the real swamp's S3 chapter: swamp-club's S3 extension
(c25ec91) on a bucket pre-aged in its own layout (swamp-s3@c25ec91) in the run's bucket, through the front with
PutObject at AWS's latency (aws-s3-vpce), on the embedded SeaweedFS. A small pre-age (20 models x 2 runs) so it
stays a few minutes (104 s here, 2026-12-07, a busy 2-core machine); the shipped chapter pre-ages 3,520 index
entries.

It runs only where ``HARNESS_SWAMP`` names a swamp executable and ``HARNESS_SWAMP_S3_REPO`` the S3 template
(realswamp's ``template/s3``), as the other real-swamp tests are gated, and says why it was skipped otherwise.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from harness.record.reader import read_rows
from tests.e2e.conftest import harness

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("swamp-e2e")]

SWAMP = os.environ.get("HARNESS_SWAMP", "")
S3_REPO = os.environ.get("HARNESS_SWAMP_S3_REPO", "")
if not (SWAMP and S3_REPO):
    pytest.skip("the real swamp is not here: set HARNESS_SWAMP to a swamp executable and HARNESS_SWAMP_S3_REPO "
                "to the S3 template (c25ec91: realswamp's template/s3) to run it", allow_module_level=True)

LADDER = """
name = "s3-swamp-smallest"
driver = "swamp"
[[chapter]]
name = "S3 beside DynamoDB"
model = "S3 beside DynamoDB"
why_not = "no namespace: swamp 06b6147 writes no catalog export (repo_context.ts writeCatalogExportIfNeeded)"
scenario = "disposable"
backend = "s3"
swamp_repo = "s3"
front = true
latency = "aws-s3-vpce"
overrides = { datastore = { namespaces = "shared", lock_scope = "datastore" } }
workers = 2
duration = "120s"
quick = { duration = "90s" }
seed = { models = 20, versions = 2, layout = "swamp-s3@c25ec91" }
expect = { steady = ["files_pushed"], grew = ["catalog_rows"] }
"""


def test_the_s3_chapter_on_the_real_swamp_reads_the_pre_aged_bucket_and_says_why_the_catalog_is_not_shown(tmp_path):
    ladder = tmp_path / "ladder.toml"
    ladder.write_text(textwrap.dedent(LADDER))
    story_dir = tmp_path / "story"
    p = harness("story", str(ladder), "--quick", "--driver", "swamp", "--swamp", SWAMP, "--swamp-repo",
                f"s3={S3_REPO}", "--run-dir", str(story_dir), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((story_dir / "story.json").read_text())
    (c,) = data["chapters"]
    assert c["runs"][0]["seed"]["layout"] == "swamp-s3@c25ec91" and c["runs"][0]["backend"] == "s3"
    # no namespace, no catalog export: the catalog cannot grow where the harness sees it, and the page says why
    assert c["sentence"].startswith("Not shown, and why: no namespace"), c["sentence"]
    run_dir = story_dir / c["run_dirs"][0]
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["seeding"]["preage"]["layout"] == "swamp-s3@c25ec91"
    rows = read_rows(run_dir)
    ok = rows[rows["ok"]]
    assert len(ok) >= 2, rows[["error_kind", "error"]].to_string()
    # a fresh repository's first run pulls every pre-aged file (20 models x 2 runs: 160 files), one GET each
    assert ok["requests"].max() >= 160, ok["requests"].tolist()
    assert (ok["files_pushed"] >= 1).all() and ok["catalog_rows"].isna().all()
    assert "through the front" in (story_dir / "index.html").read_text()
