"""The story's page: the verdict and its one time axis first, then the closing table and each chapter (the fix,
what bound the fleet, the figure, the verdict) in sections a reader opens (``harness/report/show.py``'s frame).

HTML only: every sentence here was computed (``expect.py``, ``numbers.py`` beside it) from the
runs; this module lays them out. Long names (lock keys, run directories) wrap inside their cells, so no text
leaves its column on a narrow screen.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from harness.report.show import details, figure, frame, verdict_box

CSS = """table.closing{width:100%;table-layout:fixed}table.closing td,table.closing th{text-align:left;
overflow-wrap:anywhere;word-break:break-word;padding:.3em .5em}p.verdict{padding:.5em .7em}
ul.checks{list-style:none;padding-left:.5em}ul.checks li::before{content:attr(data-mark);display:inline-block;
width:1.4em;font-weight:bold}col.n{width:3em}col.fix{width:20%}col.rate{width:17%}col.bound{width:19%}
col.grew{width:18%}col.verdict{width:auto}.why{background:#fff6e0}"""


def _lines(cells: list[str]) -> str:
    return "<br>".join(escape(c) for c in cells)


def _figure(src: str, caption: str, lead: bool = False) -> str:
    return figure(src, caption, lead)


def _chapter(c: dict[str, Any], figure: str | None, links: list[tuple[str, str]]) -> str:
    verdict = ("Shown: the runs showed what the chapter expected." if c["shown"] else
               f"Not shown, and why: {c['why'].rstrip('.')}." if c.get("why") else
               "Not shown: " + "; ".join(x["sentence"] for x in c["checks"] if not x["shown"]) + ".")
    mark = "good" if c["shown"] else "why" if c.get("why") else "bad"
    short = {r["label"]: r.get("short") or r["label"] for r in c["runs"]}
    many = len(c["runs"]) > 1

    def who(run: str | None) -> str:
        return escape(f"{short.get(run, run)}: ") if many and run else ""

    checks = "".join(
        f'<li data-mark="{"✓" if x["shown"] else "✗"}" class="{"good" if x["shown"] else "bad"}">'
        f'{who(x["run"])}{escape(x["sentence"])}</li>' for x in c["checks"])
    bounds = "".join(f"<li>{who(b['run'])}{escape(b['sentence'])}</li>" for b in c["bound_by"])
    runs = "".join(f"<li>{escape(r['line'])} (<code>{escape(r['run_dir'])}</code>)</li>" for r in c["runs"])
    compare = "".join(f"<li>{escape(s)}</li>" for s in [*c.get("scaling", []), *c.get("backends", []),
                                                        *c.get("with_items", [])])
    parts = []
    if c.get("fix"):
        parts.append(f"<p><b>The fix:</b> {escape(c['fix'])}</p>")
    parts.append(f"<p><b>Runs:</b></p><ul>{runs}</ul>")
    if c.get("model"):
        parts.append(f"<p><b>The model's chapter:</b> {escape(c['model'])} (stories/migrating-bottleneck.toml), "
                     "told here again by swamp's own code.</p>")
    if c.get("beside"):
        parts.append(_beside(c["beside"]))
    parts.append(f"<p><b>Expected:</b> {escape(c['expected_sentence'])}.</p>")
    parts.append(f'<p class="verdict {mark}"><b>{escape(verdict)}</b></p>')
    parts.append(f'<p><b>What the runs showed:</b></p><ul class="checks">{checks}</ul>')
    if bounds:
        parts.append(f"<p><b>What the fleet was bound by</b> (the report's own finding):</p><ul>{bounds}</ul>")
    if compare:
        parts.append(f"<p><b>Run against run:</b></p><ul>{compare}</ul>")
    if figure:
        parts.append(_figure(figure, f"chapter {c['number']}: each run's rate and the counts its verdict rests on"))
    if links:
        parts.append("<p>Reports: " + ", ".join(f'<a href="{escape(h)}">{escape(t)}</a>' for t, h in links) + "</p>")
    return (f'<details id="chapter-{c["number"]}"><summary><h3>{c["number"]}. {escape(c["name"])}: what did it '
            f'expect, and did its runs show it?</h3></summary>{"".join(parts)}</details>')


def _beside(b: dict[str, Any]) -> str:
    """The model's chapter's own verdict (``--beside``), beside the real code's, linked to the model's page."""
    if not b.get("judged"):
        return (f"<p><b>Beside the model:</b> the model's story ({escape(b['story'])}) has no chapter "
                f"{escape(b['name'])!r} judged.</p>")
    mark = "good" if b["shown"] else "bad"
    return (f'<p class="verdict {mark}"><b>Beside the model:</b> <a href="{escape(b["href"])}">the model\'s '
            f"chapter {escape(b['name'])}</a>: {escape(b['sentence'])}</p>")


def closing_table(rows: list[dict[str, Any]]) -> str:
    head = ("<colgroup><col class='n'><col class='fix'><col class='rate'><col class='bound'><col class='grew'>"
            "<col class='verdict'></colgroup><tr><th>#</th><th>fix</th><th>rate start -> floor</th><th>bound by</th>"
            "<th>what grew</th><th>verdict</th></tr>")
    body = "".join(
        f'<tr class="chapter"><td>{r["number"]}</td><td><b>{escape(r["name"])}</b><br>{escape(r["fix"])}</td>'
        f'<td>{_lines(r["rate"])}</td><td>{_lines(r["bound_by"])}</td><td>{_lines(r["grew"])}</td>'
        f'<td class="{"good" if r["shown"] else "why" if r.get("why") else "bad"}">{escape(r["verdict"])}'
        f'{"<br><i>" + escape(r["beside"]) + "</i>" if r.get("beside") else ""}</td></tr>'
        for r in rows)
    return f'<table class="closing">{head}{body}</table>'


def _source(src: str) -> str:
    """The ladder's file as the reader knows it: ``stories/migrating-bottleneck.toml``, not this machine's path."""
    p = Path(src)
    return "/".join(p.parts[-2:]) if p.is_absolute() else src


def page(story: dict[str, Any], chapters: list[dict[str, Any]], rows: list[dict[str, Any]],
         figures: dict[str, str], chapter_figures: dict[int, str], links: dict[int, list[tuple[str, str]]]) -> str:
    """The first screen: the verdict (chapters shown) and the one time axis of every run; then the bound across
    the chapters, the closing table and each chapter, in sections."""
    lad = story["ladder"]
    shown = sum(1 for c in chapters if c["shown"])
    mode = "quick" if lad.get("quick") else "full"
    each = "; ".join(f"{c['number']}. {c['name']}: "
                     f"{'shown' if c['shown'] else 'not shown, and why' if c.get('why') else 'not shown'}"
                     for c in chapters)
    box = verdict_box([("Verdict", f"{shown} of {len(chapters)} chapters showed what they expected"),
                       ("Chapters", each),
                       ("Ladder", (f"{lad['description'].rstrip('.')}. " if lad.get("description") else "")
                        + f"The {mode} ladder {_source(lad['source'])}; every sentence below is computed from the "
                          "runs."
                        + (" Every run is the real swamp CLI on the repository template its line names, pre-aged "
                           "(where its line says) in that extension version's own layout, through the front at the "
                           "capacity scale its line says. \"Not shown, and why\" is a chapter whose runs did not "
                           "show the model's expectation; its why is the ladder's, from swamp's source."
                           if lad.get("driver") == "swamp" else ""))])
    warn = ""
    if story.get("interrupted"):
        it = story["interrupted"]
        warn = (f'<p class="warn">The story was interrupted ({escape(str(it.get("signal")))}) during chapter '
                f'{escape(str(it.get("chapter")))}: that chapter and the ones after it were not judged'
                + (f" ({escape(', '.join(story.get('not_run') or []))})" if story.get("not_run") else "")
                + ".</p>")
    elif story.get("not_run"):
        warn = f'<p class="warn">Not run yet: {escape(", ".join(story["not_run"]))}.</p>'
    figs = [_figure(src, cap, lead=i == 0) for i, (src, cap) in enumerate(figures.items())]
    first = [box, warn, *figs]
    sections = [details("The climb, chapter by chapter: what each fix did to the rate, the bound and the growth",
                        "<div id='closing'>" + closing_table(rows) + "</div>", open_=True)]
    sections += [_chapter(c, chapter_figures.get(c["number"]), links.get(c["number"], [])) for c in chapters]
    return frame(lad["title"], first, sections, CSS)
