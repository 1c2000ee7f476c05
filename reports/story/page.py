"""The story's page: chapter by chapter, the fix, what bound the fleet, the figure, the verdict; the closing table.

HTML only: every sentence here was computed (``reports/story/expect.py``, ``reports/story/numbers.py``) from the
runs; this module lays them out. Long names (lock keys, run directories) wrap inside their cells, so no text
leaves its column on a narrow screen.
"""

from __future__ import annotations

from html import escape
from typing import Any

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;
overflow-wrap:anywhere}h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:2em}table{border-collapse:collapse;margin:.5em 0;font-size:.9em;width:100%;table-layout:fixed}
td,th{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere;
word-break:break-word}th{background:#f5f5f5}img{max-width:100%;height:auto;border:1px solid #eee;margin:.3em 0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}li{margin:.3em 0}code{background:#f5f5f5;padding:0 .2em}
.good{background:#d4edda}.bad{background:#f8d7da}.warn{background:#fff3cd;padding:.6em}p.verdict{padding:.5em .7em}
ul.checks{list-style:none;padding-left:.5em}ul.checks li::before{content:attr(data-mark);display:inline-block;
width:1.4em;font-weight:bold}col.n{width:3em}col.fix{width:20%}col.rate{width:17%}col.bound{width:19%}
col.grew{width:18%}col.verdict{width:auto}"""


def _lines(cells: list[str]) -> str:
    return "<br>".join(escape(c) for c in cells)


def _figure(src: str, caption: str) -> str:
    return (f'<figure><img src="{escape(src)}" alt="{escape(caption)}"><figcaption>{escape(caption)}</figcaption>'
            "</figure>")


def _chapter(c: dict[str, Any], figure: str | None, links: list[tuple[str, str]]) -> str:
    verdict = ("Shown: the runs showed what the chapter expected." if c["shown"] else
               "Not shown: " + "; ".join(x["sentence"] for x in c["checks"] if not x["shown"]) + ".")
    short = {r["label"]: r.get("short") or r["label"] for r in c["runs"]}
    many = len(c["runs"]) > 1

    def who(run: str | None) -> str:
        return escape(f"{short.get(run, run)}: ") if many and run else ""

    checks = "".join(
        f'<li data-mark="{"✓" if x["shown"] else "✗"}" class="{"good" if x["shown"] else "bad"}">'
        f'{who(x["run"])}{escape(x["sentence"])}</li>' for x in c["checks"])
    bounds = "".join(f"<li>{who(b['run'])}{escape(b['sentence'])}</li>" for b in c["bound_by"])
    runs = "".join(f"<li>{escape(r['line'])} (<code>{escape(r['run_dir'])}</code>)</li>" for r in c["runs"])
    compare = "".join(f"<li>{escape(s)}</li>" for s in [*c.get("scaling", []), *c.get("backends", [])])
    parts = [f'<h2 id="chapter-{c["number"]}">{c["number"]}. {escape(c["name"])}</h2>']
    if c.get("fix"):
        parts.append(f"<p><b>The fix:</b> {escape(c['fix'])}</p>")
    parts.append(f"<p><b>Runs:</b></p><ul>{runs}</ul>")
    parts.append(f"<p><b>Expected:</b> {escape(c['expected_sentence'])}.</p>")
    parts.append(f'<p class="verdict {"good" if c["shown"] else "bad"}"><b>{escape(verdict)}</b></p>')
    parts.append(f'<p><b>What the runs showed:</b></p><ul class="checks">{checks}</ul>')
    if bounds:
        parts.append(f"<p><b>What the fleet was bound by</b> (the report's own finding):</p><ul>{bounds}</ul>")
    if compare:
        parts.append(f"<p><b>Run against run:</b></p><ul>{compare}</ul>")
    if figure:
        parts.append(_figure(figure, f"chapter {c['number']}: each run's rate and the counts its verdict rests on"))
    if links:
        parts.append("<p>Reports: " + ", ".join(f'<a href="{escape(h)}">{escape(t)}</a>' for t, h in links) + "</p>")
    return "\n".join(parts)


def closing_table(rows: list[dict[str, Any]]) -> str:
    head = ("<colgroup><col class='n'><col class='fix'><col class='rate'><col class='bound'><col class='grew'>"
            "<col class='verdict'></colgroup><tr><th>#</th><th>fix</th><th>rate start -> floor</th><th>bound by</th>"
            "<th>what grew</th><th>verdict</th></tr>")
    body = "".join(
        f'<tr class="chapter"><td>{r["number"]}</td><td><b>{escape(r["name"])}</b><br>{escape(r["fix"])}</td>'
        f'<td>{_lines(r["rate"])}</td><td>{_lines(r["bound_by"])}</td><td>{_lines(r["grew"])}</td>'
        f'<td class="{"good" if r["shown"] else "bad"}">{escape(r["verdict"])}</td></tr>' for r in rows)
    return f'<table class="closing">{head}{body}</table>'


def page(story: dict[str, Any], chapters: list[dict[str, Any]], rows: list[dict[str, Any]],
         figures: dict[str, str], chapter_figures: dict[int, str], links: dict[int, list[tuple[str, str]]]) -> str:
    lad = story["ladder"]
    shown = sum(1 for c in chapters if c["shown"])
    head = [f"<h1>{escape(lad['title'])}</h1>"]
    if lad.get("description"):
        head.append(f"<p>{escape(lad['description'])}</p>")
    mode = "quick" if lad.get("quick") else "full"
    head.append(f"<p><b>{shown} of {len(chapters)} chapters showed what they expected</b> ({mode} ladder "
                f"<code>{escape(lad['source'])}</code>; every sentence below is computed from the runs).</p>")
    if story.get("interrupted"):
        it = story["interrupted"]
        head.append(f'<p class="warn">The story was interrupted ({escape(str(it.get("signal")))}) during chapter '
                    f'{escape(str(it.get("chapter")))}: that chapter and the ones after it were not judged'
                    + (f" ({escape(', '.join(story.get('not_run') or []))})" if story.get("not_run") else "")
                    + ".</p>")
    elif story.get("not_run"):
        head.append(f'<p class="warn">Not run yet: {escape(", ".join(story["not_run"]))}.</p>')
    body = head + [_figure(src, cap) for src, cap in figures.items()]
    body += [_chapter(c, chapter_figures.get(c["number"]), links.get(c["number"], [])) for c in chapters]
    body.append("<h2 id='closing'>The climb, chapter by chapter</h2>" + closing_table(rows))
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
            f"<title>{escape(lad['title'])}</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>")
