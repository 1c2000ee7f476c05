"""How every product shows its numbers: in words, in figures, on a page and as JSON.

Shared by the run report, the comparison, the story and the suite, so a number
reads the same wherever it is shown: ``g``, ``ci``, ``times`` and ``pct`` in
sentences; the figures' resolution, the level marks' colours and ``save``;
the pages' CSS and ``table``; ``json_safe`` for summary.json and story.json.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def g(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def ci(v: list[float] | None) -> str:
    return "" if not v else f" [{v[0]:.3g}-{v[1]:.3g}]"


def times(x: float | None) -> str:
    return "n/a" if x is None else f"x{x:.3g}"


def pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:.{digits}f} %"


MARK_COLORS = {"start": "#2ca02c", "floor": "#d62728", "end": "#1f77b4"}  # the start, floor and end levels
DPI = 100


def save(fig: plt.Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin-top:1.4em}table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right;vertical-align:top}th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left}td.msg{text-align:left;font-family:monospace;word-break:break-all}
.warn{background:#fff3cd;padding:.6em}.bad{background:#f8d7da}.good{background:#d4edda}
img{max-width:100%;border:1px solid #eee;margin:.3em 0}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
li{margin:.3em 0}code{background:#f5f5f5;padding:0 .2em}
table.verdict{font-size:1em;border-left:4px solid #2f6f4f;max-width:100%}table.verdict th{text-align:left;width:7em}
table.verdict td{text-align:left}"""


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


def table(header: list[str], rows: list[list[Any]], raw_cols: tuple[int, ...] = ()) -> str:
    """A table; columns in ``raw_cols`` are already HTML (escaped by the caller)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c if i in raw_cols else fmt(c)}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


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
