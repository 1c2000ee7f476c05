"""How every product shows its numbers: in words, in figures, on a page and as JSON.

Shared by the run report, the comparison, the story and the suite, so a number
reads the same wherever it is shown: ``g``, ``ci``, ``times`` and ``pct`` in
sentences; the figures' resolution, the level marks' colours and ``save``;
the pages' frame (``frame``: a first screen, then ``details``), CSS, ``figure``,
``verdict_box`` and ``table``; ``shape_words`` for how a rate moved (``harness/record/outcome.py``'s); ``json_safe``
for summary.json and story.json.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

from harness.core import atomic
from harness.core.errors import HarnessError
from harness.record.outcome import shape_words, times  # noqa: F401 - how a rate moved: the outcome's own words

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def g(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def ci(v: list[float] | None) -> str:
    return "" if not v else f" [{v[0]:.3g}-{v[1]:.3g}]"


def pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:.{digits}f} %"


MARK_COLORS = {"start": "#2ca02c", "floor": "#d62728", "end": "#1f77b4"}  # the start, floor and end levels
DPI = 100


def figures_dir(out_dir: Path) -> Path:
    """``out_dir/figures``, made, and emptied of its PNGs: a rebuilt page shows only this build's figures."""
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    for old in fig_dir.glob("*.png"):
        old.unlink()
    return fig_dir


CHAR_EM = 0.6  # a title character's mean width, in ems of its font size (DejaVu Sans: ~0.55-0.6)


def fit_titles(fig: plt.Figure) -> None:
    """Shrink any axes title or suptitle that would run past the figure's edges (a long scenario name, a long
    resource name), so no title is cut off in the PNG. Estimated from the character count and the axes'
    position, without a draw: the figures keep fixed margins because a layout engine costs seconds a figure."""
    width_in = fig.get_figwidth()
    texts = [(ax.title, ax.get_position().x0 + ax.get_position().width / 2) for ax in fig.axes
             if ax.get_title()]
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text():
        texts.append((sup, sup.get_position()[0]))
    for text, centre in texts:
        room_in = 2 * min(centre, 1 - centre) * width_in * 0.98  # a centred text may spread this far
        need_in = len(text.get_text()) * CHAR_EM * text.get_fontsize() / 72
        if need_in > room_in > 0:
            text.set_fontsize(max(6.0, text.get_fontsize() * room_in / need_in))


YLABEL_LINES = 2  # a y-axis label wraps to at most this many lines, then its font shrinks (not below 6 pt)


def fit_ylabels(fig: plt.Figure) -> None:
    """Wrap, then shrink, a y-axis label longer than its panel is tall: a short panel's label (observed.png's
    "catalog export bytes per namespace") ran over the panels above and below it (issue 54). Estimated like
    ``fit_titles``, without a draw."""
    height_in = fig.get_figheight()
    for ax in fig.axes:
        label = ax.yaxis.label
        text = " ".join(label.get_text().split())
        room_in = ax.get_position().height * height_in * 0.95
        size = label.get_fontsize()
        if not text or room_in <= 0 or len(text) * CHAR_EM * size / 72 <= room_in:
            continue
        lines = textwrap.wrap(text, max(1, int(room_in / (CHAR_EM * size / 72))), break_long_words=False)
        width = -(-len(text) // YLABEL_LINES)
        while len(lines) > YLABEL_LINES:  # the words in as many lines, at the size that fits them
            lines = textwrap.wrap(text, width, break_long_words=False)
            width += 1
        longest = max(len(x) for x in lines) * CHAR_EM * size / 72
        if longest > room_in:
            label.set_fontsize(max(6.0, size * room_in / longest))
        label.set_text("\n".join(lines))


def save(fig: plt.Figure, path: Path) -> Path:
    fit_titles(fig)
    fit_ylabels(fig)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:.8em auto;padding:0 1em;color:#222;
overflow-wrap:anywhere}h1{font-size:1.35em;margin:.3em 0 .5em}
h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.05em;margin-top:1.4em}table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right;vertical-align:top;overflow-wrap:normal}
th{background:#f5f5f5}td:first-child,th:first-child,td.t,th.t{text-align:left}
table:not(.verdict){display:block;max-width:100%;overflow-x:auto}
td.msg{text-align:left;font-family:monospace;word-break:break-all}
.warn{background:#fff3cd;padding:.6em}.bad{background:#f8d7da}.good{background:#d4edda}.ok{color:#060}
img{max-width:100%;height:auto;border:1px solid #eee;margin:.3em 0}figure{margin:.6em 0}
figcaption{font-size:.85em;color:#555}li{margin:.3em 0}code{background:#f5f5f5;padding:0 .2em}
figure.lead{margin:.3em 0}figure.lead img{max-height:60vh;width:auto}
table.verdict{font-size:.95em;border-left:4px solid #2f6f4f;max-width:100%;margin:.3em 0}
table.verdict th{text-align:left;width:6.5em}table.verdict td{text-align:left}
div.verdict{border-left:4px solid #2f6f4f;padding:.5em .8em;margin:.3em 0;font-size:1.05em}
details{margin:.4em 0;border-top:1px solid #eee}summary{cursor:pointer;padding:.2em 0}
summary h2,summary h3{display:inline;border:0;font-size:1.1em;margin:0}details>:not(summary){margin-left:.2em}
h2.numbers{margin-top:1.4em}"""
LEAD_CLASS = "lead"


def figure(src: str, caption: str, lead: bool = False) -> str:
    """One figure with its caption; ``lead``: the first screen's picture (kept within the window's height)."""
    cls = f' class="{LEAD_CLASS}"' if lead else ""
    return (f'<figure{cls}><img src="{escape(src)}" alt="{escape(caption)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def verdict_box(rows: list[tuple[str, str | None]]) -> str:
    """The lead's few lines (``<table class="verdict">``): a name, then its sentence; empty lines left out."""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(x)}</td></tr>" for k, x in rows if x)
    return f'<table class="verdict">{body}</table>' if body else ""


def details(question: str, body: str, open_: bool = False) -> str:
    """A section a reader opens: its heading is the question its numbers answer."""
    if not body:
        return ""
    return f"<details{' open' if open_ else ''}><summary><h3>{escape(question)}</h3></summary>{body}</details>"


def frame(title: str, first: list[str], sections: list[str], css: str = "") -> str:
    """Every product's page: the first screen (title, verdict, the lead figure), then the numbers behind it, each
    in a ``<details>`` section under the question it answers."""
    rest = [s for s in sections if s]
    body = [f"<h1>{escape(title)}</h1>", *[x for x in first if x]]
    if rest:
        body.append('<h2 class="numbers">The numbers behind it</h2>')
        body.extend(rest)
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
            f"<title>{escape(title)}</title><style>{CSS}{css}</style></head><body>{''.join(body)}</body></html>")


def fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 10000 else f"{v:.4g}"
    return escape(str(v))


def iv(v: list[float] | None) -> str:
    return "" if not v else f"{v[0]:.3g} - {v[1]:.3g}"


NUMERIC = re.compile(r"^[\s\d.,:+\-–x×%e\[\]()/]*(ms|s|it/s)?$")  # 1,234 · 99 % · 4.35 [3.35 - 5.56] · x4.8 · 2 - 17
BLANK = {"", "-", "–", "n/a"}


def _text_column(values: list[Any]) -> bool:
    """A column of words (a name, a sentence, yes / no) rather than numbers: read from the left."""
    for v in values:
        if isinstance(v, bool) or (isinstance(v, str) and v.strip() not in BLANK and not NUMERIC.match(v.strip())):
            return True
    return False


def table(header: list[str], rows: list[list[Any]], raw_cols: tuple[int, ...] = ()) -> str:
    """A table; columns in ``raw_cols`` are already HTML (escaped by the caller). A column of words is
    left-aligned (class ``t``), a column of numbers right-aligned; cells wrap between words only (at 1400 px the
    body's ``overflow-wrap: anywhere`` broke headers mid-word, "reso urce", issue 54)."""
    text = [i in raw_cols or _text_column([r[i] for r in rows if i < len(r)]) for i in range(len(header))]

    def cls(i: int) -> str:  # the first column is left-aligned whatever it holds (CSS)
        return ' class="t"' if 0 < i < len(text) and text[i] else ""

    head = "".join(f"<th{cls(i)}>{escape(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{c if i in raw_cols else fmt(c)}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def read_record(path: Path, schema: int, what: str) -> dict[str, Any]:
    """A product's record (``story.json``, ``sweep.json``): one line naming the file when it is damaged or was
    written by a harness of another schema, never a traceback."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise HarnessError(f"{path} cannot be read ({e}): the {what} directory is damaged") from None
    if data.get("schema") != schema:
        raise HarnessError(f"{path} has schema {data.get('schema')!r}; this harness reads schema {schema}")
    return data


def write_record(path: Path, data: dict[str, Any]) -> Path:
    """Written whole or not at all (a temporary file renamed over it): a reader never sees half a record."""
    return atomic.write_text(path, json.dumps(json_safe(data), indent=2, allow_nan=False) + "\n")


def json_safe(o: object) -> object:
    """Plain JSON: numpy scalars unwrapped, inf/NaN (an unbounded ratio, a missing value) as null."""
    if isinstance(o, dict):
        return {str(k): json_safe(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [json_safe(v) for v in o]
    if hasattr(o, "item"):
        o = o.item()
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o
