"""Remake the docs' screenshots: the first screen (1280 x 800) of a report's page, in headless Debian Chromium.

    python docs/make_screenshots.py RUN_DIR [STORY_DIR] [SUITE_DIR] [--out DIR]

Each directory is what `harness run`, `harness story` or `harness suite` made; its page
(`report/index.html`, `index.html` beside `story.json`, `suite.html`) is opened at 1280 x 800 and its first
screen saved as `docs/report.png` (a run), `docs/story.png` or `docs/suite.png`, as a 256-colour PNG (well
under 300 KB). The README's picture is `docs/report.png` from the demo's run (`bash demo.sh`: namespaced, 90 s).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"  # Debian's (Playwright never downloads a browser of its own here)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WIDTH, HEIGHT = 1280, 800
DOCS = Path(__file__).resolve().parent


def page_of(d: Path) -> tuple[Path, str]:
    """The page a directory holds and the screenshot's name."""
    if (d / "report" / "index.html").is_file():
        return d / "report" / "index.html", "report.png"
    if (d / "story.json").is_file() and (d / "index.html").is_file():
        return d / "index.html", "story.png"
    if (d / "suite.html").is_file():
        return d / "suite.html", "suite.png"
    raise SystemExit(f"{d}: no report/index.html, story index.html or suite.html (run `harness report {d}` first)")


def small_png(png: bytes) -> bytes:
    """The screenshot as a 256-colour PNG: a page of text and plots loses nothing a reader sees."""
    im = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    im.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="a run, story or suite directory")
    ap.add_argument("--out", type=Path, default=DOCS, help="where the PNGs go (default: docs/)")
    a = ap.parse_args(argv)
    pages = [page_of(d) for d in a.dirs]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for path, name in pages:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
            out = a.out / name
            out.write_bytes(small_png(page.screenshot()))
            print(f"{out}: the first screen of {path} ({out.stat().st_size // 1024} KB)")
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
