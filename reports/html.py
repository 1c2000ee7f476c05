"""index.html: the findings in words and numbers, with every figure beside it."""

from __future__ import annotations

from html import escape
from typing import Any

CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f5f5f5}td:first-child,th:first-child{text-align:left}.warn{background:#fff3cd;padding:.6em}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}li{margin:.3em 0}code{background:#f5f5f5;padding:0 .2em}"""


def _fmt(v: Any) -> str:
    if v is None:
        return "∞"
    if isinstance(v, float):
        return f"{v:.4g}"
    return escape(str(v))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _figure(name: str, alt: str) -> str:
    return f'<p><img src="figures/{escape(name)}" alt="{escape(alt)}"></p>'


def run_section(label: str, info: dict, f: dict, figures: list[tuple[str, str]], partial: bool) -> str:
    parts = [f"<h2>{escape(label)}</h2>"]
    if partial:
        parts.append('<p class="warn">This run was still being written (or did not finish): '
                     "the report covers the rows recorded so far.</p>")
    parts.append("<ul>" + "".join(f"<li>{escape(s)}</li>" for s in f["sentences"]) + "</ul>")
    fl, pw = f["fleet"], f["per_worker"]
    parts.append(_table(["", "start", "floor", "ratio", "floor reached at", "end of run"], [
        ["fleet, iterations/s", fl["start_rate"], fl["floor_rate"], fl["degradation_ratio"],
         f"{fl['floor_reached_at_s']:.0f} s", fl["shape"]],
        ["per worker, iterations/s", pw["start_rate"], pw["floor_rate"], pw["degradation_ratio"], "", ""],
    ]))
    d = f["dominant_step"]
    parts.append(_table(["step", "share of time, first window", "share, last window"],
                        [[k, f"{d['shares_first'][k]:.0%}", f"{d['shares_last'][k]:.0%}"] for k in d["shares_first"]]))
    parts.append(_table(["work count", "first window", "last window", "growth", "r with iteration time"],
                        [[w["label"], w["first"], w["last"], w["growth"], w["corr_with_iteration_time"]]
                         for w in f["work_counts"].values()]))
    meta = [["rows", f["rows"]], ["workers", f["workers"]], ["duration", f"{f['duration_s']:.0f} s"],
            ["window", f"{f['window_s']:g} s"], ["backend", info.get("backend")],
            ["endpoint", info.get("endpoint_kind")], ["started", info.get("started_at")]]
    parts.append(_table(["run", ""], meta))
    parts.extend(_figure(name, alt) for name, alt in figures)
    return "\n".join(parts)


def page(title: str, sections: list[str], comparison: dict | None, comparison_figures: list[tuple[str, str]]) -> str:
    body = [f"<h1>{escape(title)}</h1>"]
    if comparison:
        body.append("<h2>Run against run</h2><ul>")
        for s in comparison["fleet_scaling"] + comparison["backends"]:
            body.append(f"<li>{escape(s['sentence'])}</li>")
        body.append("</ul>")
        body.append(_table(["run", "workers", "steady rate, it/s", "mean iteration, ms"],
                           [[r["label"], r["workers"], r["steady_rate"], r["mean_iteration_ms"]]
                            for r in comparison["runs"]]))
        body.extend(_figure(n, a) for n, a in comparison_figures)
    body.extend(sections)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")
