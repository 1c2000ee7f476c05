"""`harness story --driver swamp --quick`, end to end, on the real swamp: the smallest useful real-swamp story (the
legacy chapter alone: webframp's extension at bc36088a, pre-aged in its own layout, a full sync after each run,
through the front at a scaled capacity). 77 s here (2026-12-07, a busy 2-core machine; the deno commands
are most of it).

It runs only where ``HARNESS_SWAMP`` names a swamp executable and ``HARNESS_SWAMP_LEGACY_REPO`` the bc36088a
template (realswamp's ``template/ddb-legacy``: ../shared/realswamp/build_legacy_template.sh), as the other
real-swamp tests are gated, and says why it was skipped otherwise.
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
LEGACY = os.environ.get("HARNESS_SWAMP_LEGACY_REPO", "")
if not (SWAMP and LEGACY):
    pytest.skip("the real swamp is not here: set HARNESS_SWAMP to a swamp executable and HARNESS_SWAMP_LEGACY_REPO "
                "to the bc36088a template (../shared/realswamp/build_legacy_template.sh) to run it",
                allow_module_level=True)

LADDER = """
name = "legacy-swamp-smallest"
driver = "swamp"
[[chapter]]
name = "legacy GSI"
model = "legacy GSI"
why_not = "a method run's pull at bc36088a is scoped to its model (swamp 06b6147)"
scenario = "legacy-gsi"
swamp_repo = "ddb-legacy"
sync = true
front = true
latency = "aws-dynamodb"
scale = 0.001
overrides = { fidelity = { partition_write = 500000, burst = "2s" } }
workers = 2
duration = "90s"
quick = { duration = "60s" }
seed = { models = 10, versions = 2, layout = "swamp-dynamodb@bc36088a" }
expect = { grew = ["read_units"] }
"""


def test_the_legacy_chapter_on_the_real_swamp_reads_the_pre_aged_partition_on_every_full_sync(tmp_path):
    ladder = tmp_path / "ladder.toml"
    ladder.write_text(textwrap.dedent(LADDER))
    story_dir = tmp_path / "story"
    p = harness("story", str(ladder), "--quick", "--driver", "swamp", "--swamp", SWAMP, "--swamp-repo",
                f"ddb-legacy={LEGACY}", "--run-dir", str(story_dir), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((story_dir / "story.json").read_text())
    (c,) = data["chapters"]
    assert c["model"] == "legacy GSI" and c["runs"][0]["seed"]["layout"] == "swamp-dynamodb@bc36088a"
    assert c["sentence"].startswith(("Shown:", "Not shown, and why: a method run's pull"))  # judged, either way
    run_dir = story_dir / c["run_dirs"][0]
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["scenario"]["driver"]["options"]["sync"] is True and plan["seeding"]["preage"]["models"] == 10
    rows = read_rows(run_dir)
    ok = rows[rows["ok"]]
    assert len(ok) >= 2, rows[["error_kind", "error"]].to_string()
    # every full sync reads the whole "FILE" partition: the pre-aged 10 models x 2 versions (80 metadata items) at
    # least, from the wire (bc36088a has no spans): above one model's few units
    assert (ok["read_units"] >= 5).all(), ok["read_units"].tolist()
    assert ok["throttles"].notna().all()
    html = (story_dir / "index.html").read_text()
    assert "capacity x0.001" in html and "Every run is the real swamp CLI" in html
