"""A story's or a sweep's directory: named for what ran, never one that already holds something."""

from __future__ import annotations

import re

import pytest

from harness.core.errors import HarnessError
from harness.products.product_dir import product_dir


def test_default_names_the_kind_the_slug_quick_and_the_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = product_dir("sweep", "Shared Lock", None, quick=True)
    assert re.fullmatch(r"runs/sweep-shared-lock-quick-\d{8}-\d{6}", p.as_posix()) and not p.exists()
    assert re.fullmatch(r"runs/story-x-\d{8}-\d{6}", product_dir("story", "x", None, quick=False).as_posix())


def test_an_empty_or_missing_run_dir_is_taken_a_full_one_or_a_file_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    assert product_dir("story", "s", tmp_path / "empty", quick=False) == tmp_path / "empty"
    assert product_dir("story", "s", tmp_path / "new", quick=False) == tmp_path / "new"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "story.json").write_text("{}")
    (tmp_path / "file").write_text("")
    refused = r"^sweep directory .* already exists and is not empty: choose another --run-dir$"
    for taken in ("full", "file"):
        with pytest.raises(HarnessError, match=refused):
            product_dir("sweep", "s", tmp_path / taken, quick=False)
    assert (tmp_path / "full" / "story.json").read_text() == "{}"  # nothing lost
