"""``RUN_DIR/explore.html`` from ``explore.json`` alone: what violated, in its steps, then what was explored."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px;color:#222}
h1{font-size:1.5rem}table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;
padding:.25rem .5rem;text-align:left;vertical-align:top;font-size:.9rem}th{background:#f4f4f4}
.bad{color:#a00;font-weight:600}.ok{color:#060;font-weight:600}ol{margin:0;padding-left:1.2rem}
.verdict{border:2px solid #999;padding:.75rem 1rem;margin-bottom:1.5rem;font-size:1.05rem}"""


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
    violating = (f"<h2>Violating schedules ({len(bad)})</h2><table><tr><th>target</th><th>operation</th>"
                 f"<th>boundary</th><th>disturbance</th><th>violations</th><th>steps</th></tr>{rows}</table>"
                 if bad else "")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>harness explore</title>"
            f"<style>{STYLE}</style></head><body><h1>harness explore{' (quick)' if result['quick'] else ''}</h1>"
            f"<div class='verdict {'bad' if bad else 'ok'}'>{e(verdict(result))}</div>{violating}"
            f"<h2>What was explored</h2><table><tr><th>target</th><th>operation</th><th>disturbance</th>"
            f"<th>schedules</th><th>violating</th></tr>{totals}</table></body></html>")
    path = out / "explore.html"
    path.write_text(page)
    return path
