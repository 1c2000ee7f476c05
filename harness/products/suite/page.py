"""A suite's results as swamp prints them, and better: a text table and an HTML page, per scenario and phase.

swamp's table shows avg (min-max) per phase; this one shows median, min,
mean and max of the trials, and beside them what each phase did per trial
(requests, bytes sent + received), every layout of a scenario under it, the
layouts it does not apply to with why, and any scenario that failed. The page
leads with its per-phase chart (every scenario's total per layout, and each
phase's share of it), then each scenario's note (what the harness does, where
swamp's benchmark differs) and table in a section a reader opens.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from harness.report.show import details, frame, table, verdict_box  # noqa: E402
from harness.report.show import figure as figure_html  # noqa: E402

FIGURE = "suite_totals.png"


def human_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _num(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"


def header(doc: dict[str, Any]) -> str:
    shape = doc.get("shape") or {}
    stand_in = doc.get("stand_in") or {}
    served = (stand_in.get("services") or {}).get(doc.get("backend"), stand_in.get("name", "")) if stand_in else ""
    return (f"{doc.get('suite')} on {doc.get('backend')}{f' ({served})' if served else ''}: "
            f"{doc.get('trials')} trials a scenario{' (--quick)' if doc.get('quick') else ''}, "
            f"{shape.get('files')} files of {shape.get('file_bytes')} B over {shape.get('models')} models"
            + (f", latency profile {doc['latency']}" if doc.get("latency") else ""))


def _by_scenario(doc: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]], list[dict[str, Any]],
                                                    list[dict[str, Any]]]]:
    names: dict[int, str] = {int(s["number"]): s["name"] for s in doc.get("scenarios", [])}
    for r in doc["results"] + doc.get("not_applicable", []) + doc.get("errors", []):
        names.setdefault(int(r["number"]), r["scenario"])
    out = []
    for number in sorted(names):
        out.append((number, names[number], [r for r in doc["results"] if r["number"] == number],
                    [r for r in doc.get("not_applicable", []) if r["number"] == number],
                    [r for r in doc.get("errors", []) if r["number"] == number]))
    return out


def text(doc: dict[str, Any]) -> str:
    """The table: per scenario, per layout, the total and each phase; ms per trial, counts per trial."""
    lines = [header(doc), "ms per trial (median, min, mean, max over the trials); requests and bytes per trial "
                          "(median); lock.held overlaps the phases inside the lock", ""]
    for number, name, rows, na, errors in _by_scenario(doc):
        lines.append(f"{number:>2}  {name}")
        if rows:
            w = max(len(r["phase"]) for r in rows)
            lines.append(f"    {'layout':10s} {'phase':{w}s} {'median':>9s} {'min':>9s} {'mean':>9s} {'max':>9s} "
                         f"{'requests':>9s} {'bytes':>10s}  detail")
            last = None
            for r in rows:
                lay = r["layout"] if r["layout"] != last else ""
                last = r["layout"]
                lines.append(f"    {lay:10s} {r['phase']:{w}s} {r['median_ms']:9.2f} {r['min_ms']:9.2f} "
                             f"{r['mean_ms']:9.2f} {r['max_ms']:9.2f} {_num(r['requests']):>9s} "
                             f"{human_bytes(r['bytes']):>10s}  {r.get('detail', '')}".rstrip())
        for x in na:
            lines.append(f"    {x['layout']:10s} not applicable: {x['not_applicable']}")
        for x in errors:
            lines.append(f"    {x['layout']:10s} FAILED after {x['trials']} trials: {x['error']}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


OVERLAPPING = ("total", "lock.held")  # not one of the phases a trial's time is split into


@dataclass
class Bar:
    """One scenario's bar for one layout: where it sits, its median total with the distances to its min and max,
    and its phases' shares as (phase index, left %, width %)."""

    y: float
    ms: float
    below: float
    above: float
    parts: list[tuple[int, float, float]]


def bars(doc: dict[str, Any], totals: list[dict[str, Any]], layouts: list[str], numbers: list[int],
         phases: list[str], h: float) -> dict[str, list[Bar]]:
    """The figure's bars per layout (pure: no plotting); scenarios a layout has no total for have no bar."""
    out: dict[str, list[Bar]] = {}
    for j, lay in enumerate(layouts):
        out[lay] = []
        for i, n in enumerate(numbers):
            r = next((r for r in totals if r["number"] == n and r["layout"] == lay), None)
            if r is None:
                continue
            ms = {x["phase"]: x["median_ms"] for x in doc["results"]
                  if x["number"] == n and x["layout"] == lay and x["phase"] in phases}
            out[lay].append(Bar(i + j * h, max(r["median_ms"], 1e-3), max(r["median_ms"] - r["min_ms"], 0),
                                max(r["max_ms"] - r["median_ms"], 0), _phase_parts(ms, phases)))
    return out


def _phase_parts(ms: dict[str, float], phases: list[str]) -> list[tuple[int, float, float]]:
    """Each phase that took time, as (its index, left %, width %) of the phases' sum."""
    whole, left, parts = sum(ms.values()), 0.0, []
    for k, ph in enumerate(phases):
        if whole > 0 and ms.get(ph):
            parts.append((k, left, ms[ph] / whole * 100))
            left += ms[ph] / whole * 100
    return parts


def figure(doc: dict[str, Any], path: Path) -> Path | None:
    """Per scenario and layout: the total (median, with min-max, log scale) and where it goes, each phase's
    median as a share of the phases' sum."""
    totals = [r for r in doc["results"] if r["phase"] == "total"]
    if not totals:
        return None
    layouts = [x for x in doc.get("layouts", []) if any(r["layout"] == x for r in totals)]
    numbers = sorted({int(r["number"]) for r in totals})
    phases = list(dict.fromkeys(r["phase"] for r in doc["results"] if r["phase"] not in OVERLAPPING))
    n_bars = len(numbers) * max(1, len(layouts))
    fig, (ax, share) = plt.subplots(1, 2, figsize=(12, min(0.14 * n_bars + 1.3, 5.6)), sharey=True,
                                    gridspec_kw={"width_ratios": [1, 1.2]})
    h = 0.8 / max(1, len(layouts))
    cmap = plt.get_cmap("tab20")
    for lay, row in bars(doc, totals, layouts, numbers, phases, h).items():
        for b in row:
            for k, left, width in b.parts:
                share.barh(b.y, width, left=left, height=h, color=cmap(k % 20), edgecolor="white", linewidth=0.5)
        ax.barh([b.y for b in row], [b.ms for b in row], height=h, xerr=[[b.below for b in row],
                                                                          [b.above for b in row]],
                label=lay, capsize=2)
    names = {int(r["number"]): r["scenario"] for r in totals}
    ax.set_yticks([i + h * (len(layouts) - 1) / 2 for i in range(len(numbers))])
    ax.set_yticklabels([f"{n} {names[n]}" for n in numbers], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms per trial (median; bars: min to max)")
    ax.legend(loc="lower right", fontsize=8, title="layout", title_fontsize=8)
    ax.set_title("each scenario's total per trial, by layout", fontsize=9)
    handles = [Patch(color=cmap(k % 20), label=ph) for k, ph in enumerate(phases)]
    share.set_xlim(0, 100)
    share.set_xlabel("% of the phases' time (medians)")
    share.set_title("where it goes: each phase's share (layouts in the left panel's order)", fontsize=9)
    share.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, borderaxespad=0)
    fig.suptitle(f"{doc.get('suite')} on {doc.get('backend')}: per scenario and phase", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _slowest(doc: dict[str, Any]) -> str | None:
    totals = [r for r in doc["results"] if r["phase"] == "total"]
    if not totals:
        return None
    r = max(totals, key=lambda r: r["median_ms"])
    fast = min(totals, key=lambda r: r["median_ms"])
    return (f"{r['number']}. {r['scenario']} ({r['layout']}): a median {r['median_ms']:.1f} ms per trial; the "
            f"quickest, {fast['number']}. {fast['scenario']} ({fast['layout']}), {fast['median_ms']:.1f} ms")


def html(doc: dict[str, Any], has_figure: bool, compare_text: str | None = None) -> str:
    """The first screen: what ran, the slowest scenario, the per-phase chart; then each scenario's table."""
    notes = {int(s["number"]): s.get("note", "") for s in doc.get("scenarios", [])}
    failed = len(doc.get("errors", []))
    box = verdict_box([("Suite", header(doc)), ("Slowest", _slowest(doc)),
                       ("Failed", f"{failed} scenario-layout(s) failed: see their sections" if failed else None)])
    first = [box]
    if has_figure:
        first.append(figure_html(FIGURE, "per scenario and layout: the total per trial, median (bars: min to max), "
                                         "log scale; beside it each phase's share of the time", lead=True))
    sections = [details("How are these numbers measured?",
                        "<p>ms per trial: median, min, mean and max over the trials; requests and bytes (sent + "
                        "received) per trial, the median. Phase names are swamp's trace names where the harness has "
                        "the step (<code>docs/suite.md</code> maps them); <code>lock</code>, <code>release</code> "
                        "and <code>lock.held</code> (grant to release, overlapping the phases inside the lock) are "
                        "the harness's.</p>")]
    if compare_text:
        sections.append(details("Compared with a baseline: is it slower or faster?",
                                f"<pre>{escape(compare_text)}</pre>", open_=True))
    for number, name, rows, na, errors in _by_scenario(doc):
        parts = []
        if notes.get(number):
            parts.append(f"<p>{escape(notes[number])}</p>")
        if rows:
            parts.append(table(["layout", "phase", "median ms", "min ms", "mean ms", "max ms", "requests", "bytes",
                                "by operation", "detail"],
                               [[r["layout"], r["phase"], r["median_ms"], r["min_ms"], r["mean_ms"], r["max_ms"],
                                 _num(r["requests"]), human_bytes(r["bytes"]),
                                 ", ".join(f"{k} {_num(v)}" for k, v in r["requests_by_op"].items() if v),
                                 r.get("detail", "")] for r in rows]))
        for x in na:
            parts.append(f"<p><b>{escape(x['layout'])}</b>: not applicable: {escape(x['not_applicable'])}</p>")
        for x in errors:
            parts.append(f'<p class="bad"><b>{escape(x["layout"])}</b>: failed after {x["trials"]} trials: '
                         f"{escape(x['error'])}</p>")
        sections.append(details(f"{number}. {name}: how long does each phase take?", "".join(parts)))
    v = doc.get("versions") or {}
    sections.append(details("What ran?", table(["", ""], [
        ["started", doc.get("started_at")], ["ended", doc.get("ended_at")],
        ["stand-in", (doc.get("stand_in") or {}).get("services")],
        ["versions", ", ".join(f"{k} {x}" for k, x in v.items())]])))
    return frame(str(doc.get("suite")), first, sections)


def build(run_dir: str | Path, compare_text: str | None = None) -> tuple[dict[str, Any], str]:
    """Write ``suite.json``, ``suite.txt``, ``suite.html`` (and its figure) into the run directory, from its files."""
    from harness.products.suite.suite import write_summary

    d = Path(run_dir)
    doc = write_summary(d)
    out = text(doc)
    (d / "suite.txt").write_text(out)
    fig = figure(doc, d / FIGURE)
    (d / "suite.html").write_text(html(doc, fig is not None, compare_text))
    return doc, out
