"""`harness story` as a user meets it: a real ladder of real runs on the embedded default, its page in a browser.

One shared story of two short chapters (session-scoped, one xdist group): the first cannot show what it
expects (the one datastore lock with a single worker: nobody queues behind it, so no lock binds the fleet and
no lock times out), the second shows it at two fleet sizes (two run directories and a comparison). `--strict`
exits 3 naming the first; `harness report --story STORY_DIR` judges the same runs the same way; the page, opened in
Debian's Chromium at 1280 px, loads every figure, has one closing row a chapter and no text outside its
column. Ctrl-C during a chapter keeps the finished one and writes the page from it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, clean_env, harness
from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("story_e2e")]

LADDER = """
name = "e2e"
title = "A story in two chapters"
description = "a chapter that cannot show its expectation, then one that does"

[[chapter]]
name = "one lock, one worker"
fix = "one datastore lock and a single worker: nobody to queue behind it"
scenario = "shared-lock"
workers = 1
duration = "8s"
expect = { bound_by = ["lock"], errors = ["lock_timeout"] }

[[chapter]]
name = "namespaced at two fleet sizes"
fix = "a lock per namespace"
scenario = "namespaced"
workers = [1, 2]
duration = "120s"
overrides = { fleet = { max_iterations = 15 } }  # bounded by count: a loaded machine takes longer, not fewer
seed = { models = 2, versions = 2 }
expect = { grew = ["index_entries_written"], no_errors = ["lock_timeout"], not_bound_by = ["lock"] }
"""


@pytest.fixture(scope="session")
def told(tmp_path_factory):
    d = tmp_path_factory.mktemp("story")
    ladder = d / "e2e.toml"
    ladder.write_text(LADDER)
    story_dir = d / "story"
    p = harness("story", str(ladder), "--strict", "--run-dir", str(story_dir), timeout=420)
    return p, story_dir


def _data(story_dir: Path) -> dict:
    return json.loads((story_dir / "story.json").read_text())


def test_strict_exits_3_on_the_chapter_that_did_not_show_its_expectation(told):
    p, story_dir = told
    assert p.returncode == 3, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    # one line as each chapter starts and one as it ends (its verdict); the second chapter's two runs too
    heads = [":".join(x.split(":")[:2]) for x in lines if x.startswith("harness: chapter ")]
    assert heads == ["harness: chapter 1/2 one lock, one worker"] * 2 + \
                    ["harness: chapter 2/2 namespaced at two fleet sizes"] * 2
    assert any(x.startswith("harness: chapter 1/2 one lock, one worker: Not shown: expected a lock, the "
                            "fleet was bound by") for x in lines), p.stdout
    assert any(x.startswith("harness: chapter 2/2 namespaced at two fleet sizes: Shown: ") for x in lines), \
        p.stdout + p.stderr
    assert f"harness: story {story_dir / 'index.html'}" in lines
    assert "harness: 1 of 2 chapters showed what they expected" in lines
    err = [x for x in p.stderr.splitlines() if x.startswith("harness: not shown:")]
    assert len(err) == 1 and err[0].startswith("harness: not shown: chapter 1 one lock, one worker: Not shown: ")
    assert "expected lock timeouts, none of" in err[0]


def test_story_json_has_each_chapter_with_its_run_directories_and_verdict(told):
    _, story_dir = told
    data = _data(story_dir)
    assert data["status"] == "finished" and data["ladder"]["name"] == "e2e"
    one, two = data["chapters"]
    assert (one["shown"], two["shown"]) == (False, True), (one["sentence"], two["sentence"])
    assert one["run_dirs"] == ["01-one-lock-one-worker/shared-lock-dynamodb-1w"]
    assert two["run_dirs"] == ["02-namespaced-at-two-fleet-sizes/namespaced-dynamodb-1w",
                               "02-namespaced-at-two-fleet-sizes/namespaced-dynamodb-2w"]
    for c in (one, two):
        assert {"name", "run_dirs", "expected", "bound_by", "grew", "shown", "sentence"} <= set(c)
        for rel in c["run_dirs"]:
            run = json.loads((story_dir / rel / "run.json").read_text())
            assert run["status"] == "finished" and run["endpoint_kind"] == "embedded"
            assert (story_dir / rel / "report" / "summary.json").is_file()
    # the first chapter's verdict rests on its run's own finding: what bound it, with the numbers and interval
    bound = one["bound_by"][0]
    assert bound["kind"] != "lock" and bound["interval"] is not None
    assert one["sentence"].startswith(f"Not shown: expected a lock, the fleet was bound by {bound['label']} (")
    assert one["expected"] == {"bound_by": ["lock"], "errors": ["lock_timeout"]}
    # the second chapter: seeded, its count grew in both runs, and the two runs were compared
    assert [g["run"] for g in two["grew"] if g["count"] == "index_entries_written"] == \
           ["namespaced-dynamodb-1w", "namespaced-dynamodb-2w"]
    assert (story_dir / "02-namespaced-at-two-fleet-sizes" / "comparison" / "summary.json").is_file()
    assert len(two["scaling"]) == 1 and "1 -> 2" in two["scaling"][0]
    plan = json.loads((story_dir / two["run_dirs"][0] / "plan.json").read_text())
    assert plan["seeding"]["preage"] == {"models": 2, "versions": 2, "orphans": 0, "layout": None}  # the model's layout


def test_report_rebuilds_the_story_from_its_directory(told, tmp_path):
    _, story_dir = told
    before = _data(story_dir)
    p = harness("report", "--story", str(story_dir), "--out", str(tmp_path / "again"), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == f"harness: story {tmp_path / 'again' / 'index.html'}"
    again = json.loads((tmp_path / "again" / "story.json").read_text())
    assert [(c["shown"], c["sentence"]) for c in again["chapters"]] == \
           [(c["shown"], c["sentence"]) for c in before["chapters"]]


OVERFLOW = """() => {
  const out = [];
  for (const e of document.querySelectorAll('td, th, p, li, h1, h2, figcaption')) {
    if (e.scrollWidth > e.clientWidth + 1) out.push(e.tagName + ': ' + e.textContent.slice(0, 80));
  }
  if (document.documentElement.scrollWidth > window.innerWidth) out.push('the page scrolls sideways');
  return out;
}"""


def test_the_page_in_a_browser(told):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    _, story_dir = told
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((story_dir / "index.html").as_uri())
        page.wait_for_load_state("load")
        images = page.evaluate("() => Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, "
                               "i.naturalWidth, i.naturalHeight])")
        assert len(images) == 4, images  # the rate and the bound across chapters, one figure per chapter
        assert {src for src, *_ in images} == {"figures/story_rate.png", "figures/story_bound.png",
                                               "figures/chapter-01.png", "figures/chapter-02.png"}
        assert all(done and w > 0 and h > 0 for _, done, w, h in images), images
        assert page.locator("table.closing tr.chapter").count() == 2
        assert page.evaluate(OVERFLOW) == []
        assert "1 of 2 chapters showed what they expected" in page.locator("body").inner_text()
        page.screenshot(path=str(story_dir / "page-1280.png"), full_page=True)
        browser.close()
    from tests.support.first_screen import assert_answer_first, first_screen

    got = first_screen(story_dir / "index.html")  # at 1280 x 800: the verdict and the one time axis first
    assert_answer_first(got)
    assert "1 of 2 chapters showed what they expected" in got["text"]


CTRL_C_LADDER = """
name = "interrupted"
[[chapter]]
name = "short"
scenario = "namespaced"
workers = 1
duration = "5s"
expect = { no_errors = ["lock_timeout"] }

[[chapter]]
name = "long"
scenario = "namespaced"
workers = 1
duration = "90s"
seed = { models = 2, versions = 2 }
expect = { no_errors = ["lock_timeout"] }
"""


def test_ctrl_c_keeps_the_finished_chapters_and_writes_the_page_from_them(tmp_path):
    ladder = tmp_path / "interrupted.toml"
    ladder.write_text(CTRL_C_LADDER)
    story_dir = tmp_path / "story"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "story", str(ladder), "--run-dir", str(story_dir)],
                            cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        long_run = story_dir / "02-long" / "namespaced-dynamodb-1w"

        def loading() -> bool:  # the second chapter is past its pre-ageing: Locust is running its load
            info = json.loads((long_run / "run.json").read_text())
            return info.get("status") == "running" and bool(list((long_run / "iterations").glob("*.parquet")))

        wait_for("the second chapter's load", loading, 240)
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends the command (Locust runs in a session of its own)
        out, _ = proc.communicate(timeout=120)
        stopped_in = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGINT, out
    data = json.loads((story_dir / "story.json").read_text())
    assert data["status"] == "interrupted"
    assert data["interrupted"]["chapter"] == "long" and data["interrupted"]["signal"] == "SIGINT"
    assert [c["name"] for c in data["chapters"]] == ["short"] and data["chapters"][0]["shown"] is True
    run = json.loads((long_run / "run.json").read_text())  # the interrupted chapter's run is kept, recorded
    assert run["stop_reason"] == "SIGINT" and run["rows_written"] > 0
    assert run["outcome"] == "interrupted" and run["outcome_line"].startswith("interrupted by Ctrl-C (SIGINT) at ")
    # its load was cut short of its 90 s (what the run recorded, not how long a loaded machine took to stop)
    loaded = datetime.fromisoformat(run["ended_at"]) - datetime.fromisoformat(run["started_at"])
    assert loaded.total_seconds() < 75, (run["started_at"], run["ended_at"], f"stopped {stopped_in:.0f} s after")
    html = (story_dir / "index.html").read_text()
    assert "1 of 1 chapters showed what they expected" in html and "interrupted (SIGINT)" in html
    assert "harness: chapter 2/2 long: stopped (SIGINT)" in out
