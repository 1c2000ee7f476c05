"""The sweep's page (``index.html``) in the shared frame: throughput against fleet size with the fit first,
then the fit's numbers, latency against size, what bound each size, and each run's own report."""

from __future__ import annotations

from html import escape
from typing import Any

from harness.products.sweep import usl
from harness.products.sweep.numbers import LATENCY, bound_label, headline
from harness.report.show import details, figure, frame, iv, table, verdict_box

CSS = "th{white-space:nowrap}"


def _fit_rows(fit: dict[str, Any]) -> list[list[Any]]:
    ivs = fit.get("intervals") or {}
    names = [("σ (contention)", "sigma"), ("κ (coherency)", "kappa"), ("λ (one worker, it/s)", "lambda"),
             ("peak N* (workers)", "peak_workers"), ("X(N*) (it/s)", "peak_rate"),
             ("Amdahl ceiling λ/σ (it/s)", "amdahl_ceiling")]
    out = []
    for label, key in names:
        v = ivs.get(key)
        shown = "" if not v or fit.get(key) is None else \
            f"{'n/a' if v[0] is None else f'{v[0]:.3g}'} - {'unbounded' if v[1] is None else f'{v[1]:.3g}'}"
        out.append([label, fit.get(key), shown])
    return out


def _workers(n: int) -> str:
    return f"{n} worker{'' if n == 1 else 's'}"


def page(data: dict[str, Any], figs: dict[str, str], links: dict[str, str]) -> str:
    sizes, fit = data["sizes"], data["fit"]
    meta = data.get("sweep", {})
    title = f"Sweep: {meta.get('scenario', '?')} on {meta.get('backend') or 'its backend'}, " \
            f"{', '.join(str(w) for w in meta.get('workers', []))} workers"
    lead_fig = figs.get("throughput.png")
    first = [verdict_box([("Verdict", headline(fit, sizes)),
                          ("Cost", f"{len(sizes)} runs, {meta.get('elapsed_s', 0):.0f} s in all"
                           if meta.get("elapsed_s") else None)])]
    if lead_fig:
        first.append(figure(lead_fig, "successful iterations per second at each fleet size (95 % interval) and "
                                      "the Universal Scalability Law fitted to them", lead=True))
    fit_body = "".join(f"<p>{escape(s)}</p>" for s in usl.words(fit))
    if fit.get("sigma") is not None:
        fit_body += table(["parameter", "estimate", "95 % interval"], _fit_rows(fit))
    rows = []
    for s in sizes:
        lat = s.get("latency_ms") or {}
        link = links.get(s["run_dir"])
        cell = f'<a href="{escape(link)}">{escape(s["run_dir"])}</a>' if link else escape(s["run_dir"])
        rows.append([s["workers"], s.get("trial", 1), s["rate"], iv(s["interval"]),
                     *[lat.get(q) for q in LATENCY], escape(bound_label(s["bottleneck"], short=True)), cell])
    size_table = table(["workers", "trial", "it/s", "95 % interval", *[f"{q} ms" for q in LATENCY], "bound", "run"],
                       rows, raw_cols=(7, 8))
    lat = figure(figs["latency.png"], "latency percentiles of a successful iteration at each fleet size") \
        if "latency.png" in figs else ""
    bnd = figure(figs["bound.png"], "what bound each run (its report's findings.bottleneck) and how busy it was") \
        if "bound.png" in figs else ""
    sentences = "".join(f"<li><b>{_workers(s['workers'])}</b>: {escape(s['bottleneck'].get('sentence') or '')}</li>"
                        for s in sizes)
    sections = [
        details("What do σ, κ and the peak say?", fit_body, open_=True),
        details("How did each fleet size do?", size_table, open_=True),
        details("How did latency change with the fleet?", lat),
        details("What bound each fleet size?", bnd + f"<ul>{sentences}</ul>"),
    ]
    return frame(title, first, sections, CSS)
