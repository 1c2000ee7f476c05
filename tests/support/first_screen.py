"""A page's first screen in Debian's Chromium at 1280 x 800: the verdict and the lead figure within the first
800 px, the figure loaded, and no table of numbers before it (the verdict box, ``table.verdict``, may be one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.web_session import CHROMIUM, CHROMIUM_ARGS

WIDTH, HEIGHT = 1280, 800

MEASURE = """(lead) => {
  const img = document.querySelector(lead), box = document.querySelector('.verdict');
  if (!img || !box) return null;
  const r = img.getBoundingClientRect(), v = box.getBoundingClientRect();
  const before = Array.from(document.querySelectorAll('table')).filter(
      t => !t.classList.contains('verdict') && (t.compareDocumentPosition(img) & Node.DOCUMENT_POSITION_FOLLOWING));
  return {img: [r.top, r.bottom], natural: img.naturalWidth, verdict: [v.top, v.bottom], text: box.innerText,
          tables_before: before.length, height: document.documentElement.scrollHeight};
}"""


def first_screen(path: Path, lead: str = "figure.lead img", screenshot: Path | None = None) -> dict:
    """What the first screen of the page at ``path`` holds (``MEASURE``'s numbers), in headless Chromium."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        got = page.evaluate(MEASURE, lead)
        if screenshot is not None:
            page.screenshot(path=str(screenshot))
        browser.close()
    assert got is not None, f"{path}: no {lead} or no .verdict"
    return got


def assert_answer_first(got: dict) -> None:
    """The verdict's text and the lead figure both inside the first screen, the figure loaded, no table before it."""
    assert got["text"].strip(), got
    assert 0 <= got["verdict"][0] and got["verdict"][1] <= HEIGHT, got
    assert 0 <= got["img"][0] and got["img"][1] <= HEIGHT, got
    assert got["natural"] > 0, got
    assert got["tables_before"] == 0, got
