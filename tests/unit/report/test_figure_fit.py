"""A report figure's title and legend stay inside the PNG, however long the scenario's or the bound's name.

The figures keep fixed margins (no layout engine), so a long title centred over the axes once ran past the
figure's left edge and a long legend label past its right edge: both were cut off in the saved PNG.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.report.run import observed_figure
from harness.report.run.figures import _fig, _finish
from harness.report.show import save

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


def test_the_observed_figures_y_labels_stay_inside_their_panels(tmp_path, monkeypatch):
    # observed.png: one short panel per measure, each named on its y-axis ("catalog export bytes per namespace"):
    # a label longer than its panel is tall ran over the panels above and below it (issue 54). Measured on the
    # drawn figure: every label's extent lies within its panel's height, and within the PNG.
    from harness.report.run.observed import MEASURES
    from harness.report.run.observed_figure import observed

    t = np.arange(0.0, 90.0, 3.0)
    series = pd.DataFrame({"ok_rate": np.linspace(6, 2, len(t))}, index=t)
    levels = {label: pd.Series(np.linspace(10, 10_000_000, len(t)), index=t) for label in MEASURES.values()}
    captured = {}
    real_save = observed_figure.save

    def keep(fig, path):
        captured["fig"] = fig
        return real_save(fig, path)

    monkeypatch.setattr(observed_figure, "save", keep)
    observed(series, 10.0, levels, None, 90.0, "namespaced / dynamodb / 4 workers", tmp_path / "observed.png")
    fig = captured["fig"]
    fig.canvas.draw()
    for ax in fig.axes:
        label, panel = ax.yaxis.label, ax.get_window_extent()
        box = label.get_window_extent()
        assert panel.y0 - 1 <= box.y0 and box.y1 <= panel.y1 + 1, (label.get_text(), box, panel)
        assert _inside(fig, label), (label.get_text(), box, fig.bbox)
        assert label.get_fontsize() >= 6
