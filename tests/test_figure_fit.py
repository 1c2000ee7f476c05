"""A report figure's title and legend stay inside the PNG, however long the scenario's or the bound's name.

The figures keep fixed margins (no layout engine), so a long title centred over the axes once ran past the
figure's left edge and a long legend label past its right edge: both were cut off in the saved PNG.
"""

from __future__ import annotations

import numpy as np

from reports.run.figures import _fig, _finish
from reports.show import save

LONG = "namespaced-command-blind-with-a-long-suffix / dynamodb / 100 workers: utilization per segment"
LABEL = "binds: step the commands' own start and exit (outside every step's span)"


def _inside(fig, artist) -> bool:
    box, frame = artist.get_window_extent(), fig.bbox
    return frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1


def _figure(title: str, label: str):
    fig, ax = _fig(1, 1, 7.4, 4.0)
    ax.plot(np.arange(10), np.arange(10), label=label)
    _finish(ax, title, "utilization %", 120.0)
    return fig, ax


def test_a_long_title_and_legend_label_fit_the_saved_figure(tmp_path):
    fig, ax = _figure(LONG, LABEL)
    save(fig, tmp_path / "long.png")
    fig.canvas.draw()  # the figure as it was saved (closed by save, still drawable)
    assert _inside(fig, ax.title), (ax.title.get_window_extent(), fig.bbox)
    assert _inside(fig, ax.get_legend()), (ax.get_legend().get_window_extent(), fig.bbox)
    assert ax.title.get_fontsize() >= 6


def test_a_short_title_is_left_as_it_is(tmp_path):
    fig, ax = _figure("shared-lock / s3 / 4 workers: rate", "machine")
    size = ax.title.get_fontsize()
    save(fig, tmp_path / "short.png")
    assert ax.title.get_fontsize() == size
    assert ax.get_legend().get_texts()[0].get_text() == "machine"
