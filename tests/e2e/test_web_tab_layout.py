"""The Harness tab in a real browser (1400 x 1000, the issue's viewport) during a real `harness run --web` test.

Its charts are drawn (the rate with its band, each step's share, the bound's utilization) and come first: each
chart's box lies above the table's (bounding boxes), so a reader sees the curves, then the numbers. The harness
panel does not cover the table: the stand-in probe's row, the table's last, ends above it. On Locust's own tabs
the panel follows the page too, below the statistics table.
"""

from __future__ import annotations

import re
import signal

import pytest

from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS, WebRun, require_chromium, wait_for

pytestmark = pytest.mark.e2e

sync_playwright = require_chromium()

GEOMETRY = """() => {
  const rows = [...document.querySelectorAll('tr')];
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {top: r.top + scrollY, bottom: r.bottom + scrollY, right: r.right + scrollX};
  };
  const panel = document.getElementById('harness-panel');
  const figs = [...document.querySelectorAll('#harness-charts figure')];
  return {last: rows[rows.length - 1].innerText, lastRow: box(rows[rows.length - 1]),
          table: box(document.querySelector('#root table')), charts: box(document.getElementById('harness-charts')),
          chartBoxes: figs.map((f) => ({...box(f), drawn: f.querySelectorAll('polyline, polygon').length,
                                        width: f.querySelector('svg').getBoundingClientRect().width})),
          panel: box(panel),
          panelPosition: getComputedStyle(panel).position,
          figures: figs.map((f) => f.dataset.chart),
          lines: document.querySelectorAll('#harness-charts polyline, #harness-charts polygon').length};
}"""


def test_the_harness_tab_draws_its_charts_above_its_table_and_nothing_covers_it(tmp_path, capsys):
    web = WebRun(tmp_path / "session", "--users", "2", "--duration", "60s", scenario="shared-lock")
    try:
        web.wait_ready()
        assert web.post("/swarm", {"user_count": 2, "spawn_rate": 2, "host": "", "scenario": "shared-lock"})["success"]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(web.base + "/")
            page.get_by_role("tab", name="Harness").click()
            page.locator("td", has_text=re.compile("^Bound by$")).wait_for(timeout=60_000)
            geo = wait_for("three charts with data", lambda: (g := page.evaluate(GEOMETRY))["lines"] >= 4
                           and len(g["figures"]) == 3 and g, 90)
            assert geo["last"].startswith("Stand-in probe")
            # the charts first: each one's top (indeed its whole box) above the table's top; each drawn
            assert len(geo["chartBoxes"]) == 3
            for c in geo["chartBoxes"]:
                assert c["top"] < geo["table"]["top"] and c["bottom"] <= geo["table"]["top"], (c, geo["table"])
                assert c["drawn"] >= 1 and c["width"] > 100
                assert c["right"] <= 1400, c  # within the window: no sideways scrolling to see a chart
            assert geo["charts"]["bottom"] <= geo["table"]["top"]
            assert geo["lastRow"]["bottom"] <= geo["panel"]["top"]
            assert geo["panelPosition"] == "static"
            assert [f.split(":")[0] for f in geo["figures"]] == [
                "Successful iterations / s (95 % band)", "Each step's share of a successful iteration",
                "Utilization of the bound resource"]
            page.screenshot(path=str(tmp_path / "harness-tab.png"), full_page=True)
            page.get_by_role("tab", name="Statistics").click()
            # on Locust's own tabs too the panel follows the page (fixed over it, it covered the start form's
            # fields and START at 1400 x 900: issue 54): below the statistics table
            stats = wait_for("the statistics table", lambda: "Aggregated" in (g := page.evaluate(GEOMETRY))["last"]
                             and g, 30)
            assert stats["panelPosition"] == "static" and stats["lastRow"]["bottom"] <= stats["panel"]["top"]
            browser.close()
        assert web.stop(signal.SIGINT) == 128 + signal.SIGINT, web.output()
    finally:
        web.kill()
    with capsys.disabled():
        print(f"\nscreenshot for review: {tmp_path / 'harness-tab.png'}")
