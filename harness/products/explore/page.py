"""``RUN_DIR/explore.html`` from ``explore.json`` alone: what violated, in its steps, then what was explored (in
``harness/report/show.py``'s frame: the verdict first, the tables in sections); for ``--random``, the shrunk schedules
and the totals per target."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from harness.report.show import details, frame

CSS = (".verdict.bad{color:#a00;font-weight:600}td.bad{color:#a00;font-weight:600}ol{margin:0;padding-left:1.2rem}"
       "td.words{text-align:left}")


def verdict(result: dict[str, Any]) -> str:
    n, bad = result["explored"], result["violating"]
    if result.get("mode") == "random":
        if not bad:
            return (f"No drawn schedule violates: {n} drawn in {result['seconds']:.0f} s (seed {result['seed']}, "
                    f"Hypothesis {result['hypothesis']}).")
        return (f"{bad} kind(s) of violation in {n} drawn schedules ({result['violating_drawn']} violating; seed "
                f"{result['seed']}, {result['seconds']:.0f} s): each shrunk, listed below step by step.")
    if not bad:
        return f"No schedule violates: {n} explored in {result['seconds']:.0f} s."
    return f"{bad} of {n} schedules violate ({result['seconds']:.0f} s): the first is listed below, step by step."


def _random_sections(result: dict[str, Any]) -> list[str]:
    """``--random``: the shrunk schedules (with what replays them), then the totals per target."""
    e = html.escape
    bad = result["schedules"]
    rows = "".join(
        f"<tr><td>{i}</td><td>{e(s['target'])}</td><td class='bad words'>{e(s['signature'])}</td><td>seed "
        f"{s['seed']}, round {s['round']}<br>schedule {s['drawn_at']}</td><td>{s['drawn_length']} &rarr; "
        f"{s['length']}</td><td class='words'><ol>"
        + "".join(f"<li>{e(step)}</li>" for step in s["steps"]) + "</ol></td></tr>" for i, s in enumerate(bad, 1))
    totals = "".join(
        f"<tr><td>{e(t['target'])}</td><td>{t['schedules']}</td><td class='{'bad' if t['violating'] else 'ok'}'>"
        f"{t['violating']}</td><td>{t['finds']}</td><td>{t['shrink_runs']}</td><td>{t['seconds']:.0f} s</td></tr>"
        for t in result["totals"])
    violating = (f"<p>{e(result['note'])}; <code>--schedule K</code> picks one.</p><table><tr><th>K</th>"
                 f"<th>target</th><th>violation</th><th>drawn</th><th>steps (drawn &rarr; shrunk)</th>"
                 f"<th>the shrunk schedule</th></tr>{rows}</table>" if bad else "")
    explored = (f"<p>{result['played']} schedules played ({result['pace']} a second), shrinking included.</p>"
                f"<table><tr><th>target</th><th>drawn</th><th>violating</th><th>kinds found</th>"
                f"<th>shrinking runs</th><th>time</th></tr>{totals}</table>")
    return [details(f"Violating schedules ({len(bad)}), shrunk: what breaks, step by step?", violating, open_=True),
            details("What was drawn? Schedules and violations per target", explored, open_=not bad)]


def write_page(result: dict[str, Any], out: Path) -> Path:
    e = html.escape
    if result.get("mode") == "random":
        first = [f"<div class='verdict {'bad' if result['violating'] else 'ok'}'>{e(verdict(result))}</div>"]
        path = out / "explore.html"
        path.write_text(frame("harness explore --random", first, _random_sections(result), CSS))
        return path
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
