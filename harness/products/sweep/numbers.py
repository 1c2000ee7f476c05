"""A sweep's numbers: each run's rate, interval, latency and bound from its findings; the sizes the fit takes.

Pure functions of findings already computed (each run's ``summary.json``): no files, no plotting.
"""

from __future__ import annotations

from typing import Any

from harness.products.sweep import usl
from harness.report.stats import rate_interval

LATENCY = ("p50", "p95", "p99")
ITERATION = "iteration (succeeded)"


def warm_levels(f: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's segments after its warm-up (all of them when the warm-up covers every one)."""
    fl = f["fleet"]
    warm = float(fl.get("warmup_s") or 0.0)
    levels = [lv for lv in fl["levels"] if lv["t0"] >= warm - 1e-6]
    return levels or list(fl["levels"])


def size_record(workers: int, trial: int, run_dir: str, f: dict[str, Any], processes: int = 0) -> dict[str, Any]:
    """``sweep.json``'s entry for one run: its rate after the warm-up with a 95 % interval, each segment's rate
    (what the fit's bootstrap resamples), the iteration's latency percentiles and what bound it."""
    levels = warm_levels(f)
    seconds = sum(lv["t1"] - lv["t0"] for lv in levels)
    ok = sum(lv["successes"] for lv in levels)
    rate = ok / seconds if seconds > 0 else 0.0
    lo, hi = rate_interval(ok, seconds, float(f["fleet"].get("dispersion") or 1.0)) if seconds > 0 else (0.0, 0.0)
    it = next((p for p in f.get("percentiles") or [] if p["name"] == ITERATION), None)
    b = f.get("bottleneck") or {}
    return {"workers": workers, "trial": trial, "run_dir": run_dir, "processes": processes, "rate": rate,
            "interval": [lo, hi], "segments": [lv["rate"] for lv in levels], "seconds": seconds,
            "successes": ok, "failures": f.get("failures", 0), "failure_ratio": f.get("failure_ratio"),
            "latency_ms": {k: it[k] for k in LATENCY} if it else None,
            "bottleneck": {"kind": b.get("kind"), "name": b.get("name"), "utilization": b.get("utilization"),
                           "interval": b.get("interval"), "sentence": b.get("sentence")}}


def fit_sizes(records: list[dict[str, Any]]) -> list[usl.Size]:
    """Each fleet size's segments, pooled over its trials."""
    by: dict[int, list[float]] = {}
    for r in records:
        by.setdefault(int(r["workers"]), []).extend(float(x) for x in r["segments"])
    return [usl.Size(n, tuple(v)) for n, v in sorted(by.items())]


SHORT_NAME = 28


def bound_label(b: dict[str, Any], short: bool = False) -> str:
    """``lock dynamodb://... (100 %)``; ``short``: a long name (a lock's table URL) cut for a table's cell."""
    if not b or not b.get("kind"):
        return "nothing (think time)"
    name = str(b.get("name") or "")
    if short and len(name) > SHORT_NAME:
        name = name[:SHORT_NAME - 1] + "…"
    name = f" {name}" if name else ""
    u = b.get("utilization")
    return f"{b['kind']}{name}" + (f" ({u * 100:.0f} %)" if u is not None else "")


def headline(fit: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The first screen's sentence: the best measured size and where the fitted fleet peaks."""
    if not records:
        return "No run of the sweep recorded an iteration."
    best = max(records, key=lambda r: r["rate"])
    n = best["workers"]
    s = f"The best measured size was {n} worker{'' if n == 1 else 's'} at {best['rate']:.3g} iterations/s"
    if fit.get("sigma") is None:
        return s + "."
    return s + ". " + " ".join(usl.words(fit)[:3])
