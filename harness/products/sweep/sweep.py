"""A sweep directory: ``sweep.json``, one run directory per fleet size (and trial), and the page built from them.

``harness sweep`` records each run here as it finishes (``add_run``); ``harness report --sweep SWEEP_DIR`` rebuilds the
page from the directory alone (``build``): each run's own report, the sizes' rates, the Universal Scalability
Law fit (``harness/products/sweep/usl.py``), the figures and ``index.html``.

Layout (run directories relative to the sweep directory)::

    SWEEP_DIR/sweep.json, index.html, figures/*.png
    SWEEP_DIR/w001/, SWEEP_DIR/w002/, ...     (w004-t2/ for a second trial) each a run directory with its report
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.products.sweep import SWEEP_JSON, numbers, usl
from harness.products.sweep import figures as sweep_figures
from harness.products.sweep import page as sweep_page
from harness.report.run.build import run_summary
from harness.report.show import figures_dir, read_record, write_record

SCHEMA = 1


def is_sweep(path: str | Path) -> bool:
    return (Path(path) / SWEEP_JSON).is_file()


def run_name(workers: int, trial: int) -> str:
    return f"w{workers:03d}" + (f"-t{trial}" if trial > 1 else "")


def read(sweep_dir: str | Path) -> dict[str, Any]:
    return read_record(Path(sweep_dir) / SWEEP_JSON, SCHEMA, "sweep")


def write(sweep_dir: str | Path, data: dict[str, Any]) -> Path:
    return write_record(Path(sweep_dir) / SWEEP_JSON, data)


def start(sweep_dir: str | Path, meta: dict[str, Any]) -> None:
    write(sweep_dir, {"schema": SCHEMA, "sweep": meta, "runs": [], "sizes": [], "fit": {}})


def add_run(sweep_dir: str | Path, workers: int, trial: int, processes: int) -> None:
    data = read(sweep_dir)
    data["runs"].append({"workers": workers, "trial": trial, "run_dir": run_name(workers, trial),
                         "processes": processes})
    write(sweep_dir, data)


def finish(sweep_dir: str | Path, **fields: Any) -> None:
    data = read(sweep_dir)
    data["sweep"].update(fields)
    write(sweep_dir, data)


def build(sweep_dir: str | Path, out: str | Path | None = None, *, rebuild: bool = True,
          bootstrap: int = usl.BOOTSTRAP) -> Path:
    """Read every recorded run's findings, fit the sizes, write ``sweep.json``, the figures and ``index.html``."""
    sweep_dir = Path(sweep_dir)
    data = read(sweep_dir)
    out_dir = Path(out) if out else sweep_dir
    fig_dir = figures_dir(out_dir)
    sizes, links = [], {}
    for r in data["runs"]:
        s = run_summary(sweep_dir / r["run_dir"], rebuild)
        if not s:
            continue
        sizes.append(numbers.size_record(r["workers"], r["trial"], r["run_dir"], s["runs"][0]["findings"],
                                         r.get("processes", 0)))
        links[r["run_dir"]] = os.path.relpath(sweep_dir / r["run_dir"] / "report" / "index.html", out_dir)
    sizes.sort(key=lambda s: (s["workers"], s["trial"]))
    fit = usl.fit(numbers.fit_sizes(sizes), bootstrap=bootstrap)
    fit["words"] = usl.words(fit)
    data["sizes"], data["fit"] = sizes, fit
    figs: dict[str, str] = {}
    if sizes:
        meta = data["sweep"]
        name = f"{meta.get('scenario', '?')} on {meta.get('backend') or '?'}"
        sweep_figures.throughput(sizes, fit, f"{name}: throughput against fleet size", fig_dir / "throughput.png")
        sweep_figures.latency(sizes, f"{name}: latency against fleet size", fig_dir / "latency.png")
        sweep_figures.bound(sizes, f"{name}: the bound at each fleet size", fig_dir / "bound.png")
        figs = {n: f"figures/{n}" for n in ("throughput.png", "latency.png", "bound.png")}
    (out_dir / "index.html").write_text(sweep_page.page(data, figs, links))
    write(out_dir, data)
    return out_dir
