"""A load shape from the browser: `[[fleet.stages]]` (a ramp, a hold, a spike) run through Locust's LoadTestShape
in the web UI, in headless Chromium. Locust's user count (what its chart plots) follows the stages, and the
test's report gives each stage its row. One 12 s test; every wait bounded."""

from __future__ import annotations

import itertools
import json
import re
import signal
import time

import pytest

from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS, WebRun, wait_for

pytestmark = pytest.mark.e2e

sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright

SHAPE = '''name = "ramp-hold-spike"
description = "a ramp, a hold and a spike, as stages"
[fleet]
workers = 1
[[fleet.stages]]
duration = "3s"
workers = 1
[[fleet.stages]]
duration = "3s"
workers = 2
[[fleet.stages]]
duration = "3s"
workers = 4
[[fleet.stages]]
duration = "3s"
workers = 1
'''


def _changes(values: list[int]) -> list[int]:
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def _held(values: list[int]) -> list[int]:
    """The levels held for at least two polls in a row: a stage lasts 3 s (six polls), while a level passed
    through once on the way between two stages (2 while Locust stops the spike's users one by one, on a loaded
    machine: seen in CI) is a transition."""
    return _changes([v for v, run in itertools.groupby(values) if len(list(run)) >= 2])


def test_a_stage_shape_from_the_web_ui_follows_its_stages_and_reports_each(tmp_path):
    path = tmp_path / "ramp-hold-spike.toml"
    path.write_text(SHAPE)
    run_dir = tmp_path / "session"
    web = WebRun(run_dir, scenario=str(path))
    users: list[int] = []
    try:
        web.wait_ready()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(web.base + "/")
            start = page.get_by_role("button", name=re.compile("^start$", re.I))
            start.wait_for(timeout=30_000)
            field = page.get_by_label(re.compile("Number of users"))
            assert field.count() == 0 or field.first.is_disabled()  # the stages set it
            start.click()
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:  # what Locust's chart polls, once a second, until the test ends
                s = web.get("/stats/requests")
                if s["state"] == "stopped" and users:
                    break
                if s["state"] in ("running", "spawning"):
                    users.append(int(s["user_count"]))
                time.sleep(0.5)
            page.get_by_role("tab", name=re.compile("charts", re.I)).click()
            page.screenshot(path=str(tmp_path / "charts.png"))
            browser.close()
        wait_for("the test's report", lambda: (web.test_entry(1) or {}).get("report"), 120)
        assert web.stop(signal.SIGINT) == 128 + signal.SIGINT, web.output()
    finally:
        web.kill()
    # the stages' levels, in order; a poll between two levels (3 users while Locust stops the spike's users one by
    # one on a loaded machine, seen in CI) is a transition, not a stage
    levels = _held([u for u in users if u in (1, 2, 4)])
    # the stages in their order, ending at the last one's 1 (a level passed through between two stages for two
    # polls on a very loaded machine may stand between them: it is not a stage, and the report's stages below are)
    rest = iter(levels)
    assert all(stage in rest for stage in [1, 2, 4, 1]) and levels[-1] == 1, (levels, users)
    report = run_dir / "tests" / "001" / "report" / "summary.json"
    stages = json.loads(report.read_text())["runs"][0]["findings"]["stages"]
    assert [(s["stage"], s["t0"], s["t1"], s["workers"]) for s in stages] == [
        (1, 0.0, 3.0, 1), (2, 3.0, 6.0, 2), (3, 6.0, 9.0, 4), (4, 9.0, 12.0, 1)]
    assert all(s["served_per_s"] and s["p50_ms"] for s in stages)  # each stage ran iterations
    assert "<h4>Stages</h4>" in (report.parent / "index.html").read_text()
