"""The first screen of the story's and the suite's pages at 1280 x 800 in Debian's Chromium: the verdict and the
lead figure (the story's one time axis, the suite's per-phase chart) within the first 800 px, the figure loaded,
no table of numbers before it. Generated directories (the story's and the suite's own report tests make them) keep
it to seconds; the run's page is checked on a real run in test_report_e2e.py."""

from __future__ import annotations

import pytest

from harness.cli.main import main
from harness.products.suite import page as suite_page
from tests.support.first_screen import assert_answer_first, first_screen
from tests.unit.products.test_story_report import _story
from tests.unit.products.test_suite_report import _run_dir

pytestmark = [pytest.mark.e2e]


def test_the_storys_first_screen_is_its_verdict_and_its_one_time_axis(tmp_path):
    d = _story(tmp_path)
    assert main(["report", "--story", str(d)]) == 0
    got = first_screen(d / "index.html")
    assert_answer_first(got)
    assert "1 of 2 chapters showed what they expected" in got["text"]


def test_the_suites_first_screen_is_what_ran_and_its_per_phase_chart(tmp_path):
    d = _run_dir(tmp_path / "suite")
    suite_page.build(d)
    got = first_screen(d / "suite.html")
    assert_answer_first(got)
    assert got["text"].startswith("Suite") and "Slowest" in got["text"]
