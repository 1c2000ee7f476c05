"""``RUN_DIR/explore.html`` from ``explore.json`` alone: what violated, in its steps, then what was explored (in
``reports/show.py``'s frame: the verdict first, the tables in sections)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from reports.show import details, frame

CSS = ".verdict.bad{color:#a00;font-weight:600}td.bad{color:#a00;font-weight:600}ol{margin:0;padding-left:1.2rem}"


def verdict(result: dict[str, Any]) -> str:
    n, bad = result["explored"], result["violating"]
    if not bad:
        return f"No schedule violates: {n} explored in {result['seconds']:.0f} s."
    return f"{bad} of {n} schedules violate ({result['seconds']:.0f} s): the first is listed below, step by step."


def write_page(result: dict[str, Any], out: Path) -> Path:
    e = html.escape
    bad = [s for s in result["schedules"] if s["violations"]]
    rows = "".join(
        f"<tr><td>{e(s['target'])}</td><td>{e(s['op'])}</td><td>{s['boundary']} of {s['requests']}<br>"
        f"{e(s['request'])}</td><td>{e(s['disturbance'])}</td><td class='bad'>{s['violations']}</td><td><ol>"
        + "".join(f"<li>{e(step)}</li>" for step in s["steps"]) + "</ol></td></tr>" for s in bad[:200])
    totals = "".join(
        f"<tr><td>{e(t['target'])}</td><td>{e(t['op'])}</td><td>{e(t['disturbance'])}</td><td>{t['schedules']}</td>"
        f"<td class='{'bad' if t['violating'] else 'ok'}'>{t['violating']}</td></tr>" for t in result["totals"])
    violating = (f"<table><tr><th>target</th><th>operation</th><th>boundary</th><th>disturbance</th>"
                 f"<th>violations</th><th>steps</th></tr>{rows}</table>" if bad else "")
    explored = (f"<table><tr><th>target</th><th>operation</th><th>disturbance</th><th>schedules</th>"
                f"<th>violating</th></tr>{totals}</table>")
    first = [f"<div class='verdict {'bad' if bad else 'ok'}'>{e(verdict(result))}</div>"]
    page = frame(f"harness explore{' (quick)' if result['quick'] else ''}", first,
                 [details(f"Violating schedules ({len(bad)}): which disturbance breaks what, step by step?",
                          violating, open_=True),
                  details("What was explored? Schedules and violations per target, operation and disturbance",
                          explored, open_=not bad)], CSS)
    path = out / "explore.html"
    path.write_text(page)
    return path
