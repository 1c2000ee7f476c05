"""The story's bound figure: the name above each run stays inside the run's own stretch of the axis, so
neighbouring runs' names never overlap (the real swamp's story: six runs of two minutes, each bound by "the
commands' own start and exit (outside every step's span)", drawn as one unreadable line)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harness.products.story import figures

LONG = "the commands' own start and exit (outside every step's span)"


def _run(seconds: float, kind: str, name: str, short: str = "") -> dict:
    segs = [{"t0": t, "t1": t + seconds / 3, "utilization": 0.6, "kind": kind, "interval": [0.5, 0.7]}
            for t in np.arange(0, seconds, seconds / 3)]
    return {"seconds": seconds, "segments": segs, "bound": {"kind": kind, "name": name}, "short": short}


def _chapters() -> list[dict]:
    """The real swamp's full story (/tmp/swampstory-full): the legacy chapter bound by its FILE partition,
    then five runs of 120 s by the commands' own start and exit, the second chapter with two."""
    return [{"number": 1, "runs": [_run(120, "partition", "FILE")]},
            {"number": 2, "runs": [_run(120, "step", LONG, "2 workers"), _run(120, "step", LONG, "4 workers")]},
            *({"number": n, "runs": [_run(120, "step", LONG)]} for n in (3, 4, 5))]


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """The bound figure's names above the runs, laid out by matplotlib's own renderer: (text, bounding box)."""
    got = {}

    def keep(fig, path):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        got["names"] = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts
                        if t.get_position()[1] == 103]
        got["axes"] = ax.get_window_extent(renderer)
        return path

    monkeypatch.setattr(figures, "save", keep)
    figures.story_bound(_chapters(), tmp_path / "story_bound.png")
    return got


def test_the_names_above_the_runs_do_not_overlap(drawn):
    names = drawn["names"]
    assert len(names) == 6
    for (a, box_a), (b, box_b) in itertools.combinations(names, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def test_each_name_stays_readable_and_inside_the_axes(drawn):
    axes = drawn["axes"]
    for text, box in drawn["names"][1:]:
        assert text.replace("\n", " ") == "the commands' own start and exit"  # the parenthesis dropped, not cut
        assert text.count("\n") <= figures.NAME_LINES - 1
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1 and box.y1 <= axes.y1
    assert drawn["names"][0][0] == "partition"


def test_a_name_too_long_for_its_run_is_cut_with_an_ellipsis():
    name = figures._bound_name({"kind": "step", "name": "a very long step name " * 6}, 0.02)
    lines = name.split("\n")
    assert len(lines) == figures.NAME_LINES and lines[-1].endswith("…")
