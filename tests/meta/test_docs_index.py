"""The docs' front door (issue 54): a newcomer who just ran the demo finds "Reading your first report" first, the
README is a page of the built site, and every page is reachable from the index's own text (every toctree of the
index is hidden: a page only in a toctree is reachable from the sidebar alone, and `live-metrics.md` was linked
only from inside `cli.md`). The guide names every section the report can show, so it cannot silently fall behind.
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.docs_text import DOCS, ROOT, fenced_blocks, read


def _index_text() -> str:
    """The index without its toctrees: what a reader of the page itself sees."""
    text = read("docs/index.md")
    for block in fenced_blocks(text):
        text = text.replace(block, "")
    return text


def _links(text: str) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text)]


def test_every_page_is_linked_from_the_index_text():
    linked = set(_links(_index_text()))
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages - linked == set(), f"pages no link in the index's text leads to: {sorted(pages - linked)}"


def test_the_index_opens_with_reading_your_first_report():
    assert _links(_index_text())[0] == "first-report.md"
    guide = read("docs/first-report.md")
    assert guide.startswith("# Reading your first report\n")
    for needed in ("bash demo.sh", "report/index.html", "What to do next", "Bound by", "What grew", "Rate"):
        assert needed in guide, needed


def test_the_guide_names_every_section_of_the_report():
    page = read("harness/report/run/page.py")
    questions = [q.split("?")[0] + "?" for q in re.findall(r'details\("([^"]+\?)', page)
                 if not q.startswith("Run against run")]  # a comparison's, not a run report's
    assert len(questions) >= 10
    guide = read("docs/first-report.md")
    missing = [q for q in questions if q not in guide]
    assert not missing, f"the report's sections docs/first-report.md does not explain: {missing}"


def test_the_readme_is_a_page_of_the_built_site(tmp_path):
    # the strict build .ci/run makes, of the docs as they are (its output, doctrees included, under tmp_path)
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", str(DOCS),
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "out" / "readme.html").read_text()
    assert "demo.sh" in html and "load-test sync layers on DynamoDB and S3" in html
    # its links lead to the site's pages (docs/x.md -> x.html, CONTRIBUTING.md -> the contributing page), its
    # picture is copied
    assert 'href="cli.html"' in html and 'href="contributing.html"' in html and 'src="_images/report.png"' in html
    assert (tmp_path / "out" / "_images" / "report.png").exists()
    index = (tmp_path / "out" / "index.html").read_text()
    assert 'href="readme.html"' in index and 'href="first-report.html"' in index
