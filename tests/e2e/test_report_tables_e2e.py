"""A report's tables read as text in a browser (issue 54): in headless Debian Chromium at 1400 x 900, no word of a
table breaks across lines ("reso urce", "utiliza tion" at 1400 px), and every column of words is left-aligned
(names, evidence, "what grew"), numbers right-aligned.

The report is `harness report` on a simulated shared-lock run (the report a user opens), every section opened.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.conftest import ROOT, clean_env
from tests.support.synthetic import make_lock_run
from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS, require_chromium

pytestmark = pytest.mark.e2e

sync_playwright = require_chromium()

# Every word of every table cell (a run of letters and digits: a URL or a date may break at its "/" or "-"): a word
# laid out on two lines has two client rects. And each column's alignment against what its cells hold (a column with
# a cell of words is a text column).
CELLS = r"""() => {
  const broken = [], misaligned = [];
  const range = document.createRange();
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.closest('table.verdict')) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/[\p{L}\p{N}]+/gu)) {
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  const numeric = /^[\s\d.,:+\-–x×%e\[\]()\/]*(ms|s|it\/s)?$/;
  const blank = new Set(['', '-', '–', 'n/a']);
  for (const table of document.querySelectorAll('table:not(.verdict)')) {
    const rows = [...table.rows];
    if (rows.length < 2) continue;
    const width = Math.max(...rows.map((r) => r.cells.length));
    for (let i = 0; i < width; i++) {
      const cells = rows.slice(1).map((r) => r.cells[i]).filter(Boolean);
      const words = cells.some((c) => !blank.has(c.innerText.trim()) && !numeric.test(c.innerText.trim()));
      if (!words) continue;
      for (const c of [rows[0].cells[i], ...cells].filter(Boolean)) {
        if (getComputedStyle(c).textAlign !== 'left' && getComputedStyle(c).textAlign !== 'start') {
          misaligned.push(`${rows[0].cells[i] ? rows[0].cells[i].innerText : i}: ${c.innerText.slice(0, 40)}`);
        }
      }
    }
  }
  return {broken, misaligned, tables: document.querySelectorAll('table').length,
          headers: [...document.querySelectorAll('th')].map((h) => h.innerText)};
}"""


def test_report_tables_wrap_between_words_and_read_text_from_the_left(tmp_path, capsys):
    run, _ = make_lock_run(tmp_path / "run", workers=6, duration_s=60.0, hold_ms=(40, 60), retry_ms=(50, 100),
                           seed=4)
    built = subprocess.run([sys.executable, "-m", "harness", "report", str(run)], capture_output=True, text=True,
                           env=clean_env(), cwd=ROOT, timeout=300)
    assert built.returncode == 0, built.stderr
    page_path = run / "report" / "index.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(page_path.as_uri())
        page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        seen = page.evaluate(CELLS)
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    with capsys.disabled():
        print(f"\nscreenshot for review: {tmp_path / 'report.png'} ({seen['tables']} tables)")
    assert seen["tables"] >= 5 and "resource" in seen["headers"], seen["headers"]
    assert not seen["broken"] and not seen["misaligned"], (
        f"words broken across lines: {sorted(set(seen['broken']))[:20]}; "
        f"text cells not left-aligned ({len(seen['misaligned'])}): {seen['misaligned'][:8]}")
