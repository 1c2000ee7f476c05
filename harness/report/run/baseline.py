"""A run against its baseline: the rate, the floor and each step's time, each credibly worse, better,
unchanged or not to be told; a regression when credibly worse by more than a tolerance.

``harness run ... --baseline RUN_DIR`` and ``harness report RUN_DIR --baseline BASE`` (exit 3 on a
regression). It reuses what the report already trusts:

- the rate: each run's steady rate (``harness/report/compare/compare.py``: the second half of the load after its
  warm-up) and the ratio of the two Poisson counts with its interval (``ratio_interval``), widened by each
  run's dispersion of its counts (the fleet verdict's: how much more its windows vary than Poisson's);
- the floor: the fleet verdict's floor level (``harness/report/run/verdict.py``), its count against the baseline's;
- a rate (the steady rate or the floor) that fell while the machine's cores were full and work not this run's
  took a quarter of them (``processes.csv``; ``harness/metrics/machine.others_full``) is ``cannot tell``, never a
  regression: a few seconds' stall of a short run on shared cores makes a floor of it, and the code did not;
- each step's time (and the whole iteration's): ``harness/report/compare/suite.verdict`` on per-segment medians. A
  run's iterations are not independent trials (one slow commit holds the lock for the next few, and a
  migrating bottleneck drifts), so each run's successful iterations are cut by their end into ``SEGMENTS``
  stretches of equal count and each stretch's median is one sample: the interval then carries the run's own
  drift. Two runs on shared cores also differ as the machine's load did, which moves every step alike: a
  step is worse only when its interval is clear of 1 both as measured and divided by how the other steps
  moved (``machine_factor``, their median ratio), so a busier machine is no regression and a slower commit is.

Verdicts (new / baseline, a ratio with its 95 % interval; a time is worse when higher, a rate when lower):
``worse`` when the whole interval is on the bad side of 1, ``better`` on the good side, ``unchanged`` when the
interval lies inside the tolerance band (``1 / (1 + t)`` .. ``1 + t``), else ``cannot tell``. A
``regression`` is worse by more than the tolerance: the whole interval beyond ``1 + t`` (a rate: below
``1 / (1 + t)``), as ``harness suite --baseline`` has it.

A baseline of another scenario, backend, fleet size or latency profile answers another question: refused
(``refusal``), one line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.core.errors import HarnessError
from harness.metrics.machine import others_full
from harness.record import runinfo
from harness.record.reader import read_rows, shard_paths
from harness.report.compare.compare import ratio_interval, steady
from harness.report.compare.suite import verdict as suite_verdict
from harness.report.load import STEP_COLUMNS, read_processes
from harness.report.run.causes import STEP_LABELS
from harness.report.run.verdict import fleet_verdict
from harness.report.series import Span, pick_window, run_span, seconds_since
from harness.report.show import g

TOLERANCE = 0.10
SEGMENTS = 10  # per-segment medians a run contributes to a step's comparison
PER_SEGMENT = 3  # ... each of at least this many successful iterations (fewer segments on a short run)
MIN_MS = 0.5  # a step whose median is below this in both runs is not compared (nothing to tell)
COLUMNS = ["ts_start", "ts_end", "user", "ok", "total_ms", *STEP_COLUMNS]
VERDICTS = ("worse", "better", "unchanged", "cannot tell")


def identity(info: dict) -> dict[str, Any]:
    """What a baseline must share with the run: scenario, backend, fleet size, latency profile."""
    fid = info.get("fidelity") or {}
    lat = fid.get("latency") or (info.get("options") or {}).get("latency") or "local"
    return {"scenario": info.get("scenario_name"), "backend": info.get("backend"),
            "fleet size": (info.get("fleet") or {}).get("workers"), "latency profile": lat}


def refusal(base: dict[str, Any], new: dict[str, Any], base_dir: str | Path) -> str | None:
    """One line naming what differs (two identities), or None when the baseline answers the same question."""
    for key in ("scenario", "backend", "fleet size", "latency profile"):
        if base.get(key) != new.get(key):
            return (f"--baseline {base_dir}: its {key} is {base.get(key)!r}, this run's {new.get(key)!r}: a baseline "
                    f"is a run of the same scenario, backend, fleet size and latency profile")
    return None


def read_baseline(path: str | Path) -> tuple[dict, pd.DataFrame]:
    """The baseline's run.json and rows, or a one-line error (not a run, a session, no rows)."""
    p = Path(path)
    if runinfo.is_session(p):
        raise HarnessError(f"--baseline {p}: a web session holds several tests: name one (SESSION/tests/NNN)")
    if not (p / runinfo.RUN_JSON).is_file():
        raise HarnessError(f"--baseline {p}: not a run directory (no run.json): give a run `harness run` recorded")
    info = runinfo.read(p)
    if not shard_paths(p):
        raise HarnessError(f"--baseline {p}: the run recorded no iterations to compare with")
    return info, read_rows(p, COLUMNS)


def _rate_verdict(lo: float, hi: float, t: float) -> tuple[str, bool]:
    """A rate (higher is better): the verdict on new / baseline and whether it is a regression."""
    if hi < 1:
        return "worse", hi < 1 / (1 + t)
    if lo > 1:
        return "better", False
    return ("unchanged" if lo >= 1 / (1 + t) and hi <= 1 + t else "cannot tell"), False


def _rate_item(name: str, what: str, k_new: int, s_new: float, k_base: int, s_base: float, t: float,
               phi: tuple[float, float] = (1.0, 1.0)) -> dict[str, Any]:
    """``phi``: each run's dispersion of its counts (the fleet verdict's; 1 = Poisson), which widens the interval
    as a run's own drift from window to window says it should."""
    new, base = (k_new / s_new if s_new > 0 else 0.0), (k_base / s_base if s_base > 0 else 0.0)
    r, iv = ratio_interval(k_new, s_new, k_base, s_base)
    if r is not None and max(phi) > 1:  # the same log-ratio interval, each count's variance times its dispersion
        half = math.log(iv[1] / r) * math.sqrt((max(phi[0], 1) / k_new + max(phi[1], 1) / k_base)
                                              / (1 / k_new + 1 / k_base))
        iv = [r * math.exp(-half), r * math.exp(half)]
    item = {"name": name, "what": what, "unit": "it/s", "base": base, "new": new, "ratio": r, "interval": iv}
    if r is None:
        item.update(verdict="cannot tell", regression=False,
                    line=f"{name}: {g(new)} against {g(base)} it/s: one run had no successful iteration there")
        return item
    v, reg = _rate_verdict(iv[0], iv[1], t)
    item.update(verdict=v, regression=reg, line=_line(name, new, base, "it/s", r, iv, v, reg, t))
    return item


def _line(name: str, new: float, base: float, unit: str, r: float, iv: list[float], v: str, reg: bool,
          t: float) -> str:
    tail = f", past the {t * 100:g} % tolerance: a regression" if reg else ""
    return f"{name}: {g(new)} against {g(base)} {unit}, x{r:.3g} [{iv[0]:.3g}-{iv[1]:.3g}]: {v}{tail}"


def segment_medians(rows: pd.DataFrame, column: str, segments: int = SEGMENTS) -> list[float]:
    """The successful iterations by their end, cut into ``segments`` stretches of equal count (fewer when each
    would hold under ``PER_SEGMENT``): each stretch's median of ``column``."""
    ok = rows.loc[rows["ok"].to_numpy(dtype=bool), ["ts_end", column]].sort_values("ts_end")
    v = pd.to_numeric(ok[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    k = min(segments, len(v) // PER_SEGMENT)
    return [float(np.median(part)) for part in np.array_split(v, k)] if k >= 1 else []


def _step_verdict(column: str, base_rows: pd.DataFrame, new_rows: pd.DataFrame, t: float) -> dict[str, Any] | None:
    """``report/compare/suite.verdict`` on each run's per-segment medians of the step (None: nothing to compare)."""
    old, new = segment_medians(base_rows, column), segment_medians(new_rows, column)
    if not old or not new:
        return None
    v = suite_verdict(old, new, threshold=t, min_ms=1.0)
    if max(v["old_median_ms"], v["new_median_ms"]) < MIN_MS:
        return None
    v.update(column=column, segments=(len(old), len(new)))
    return v


def machine_factor(verdicts: list[dict[str, Any]]) -> float:
    """How much every step moved alike: the median of the steps' ratios (1 with fewer than three steps).

    Two runs of the same code on shared cores differ as the machine's load did, and that moves every step;
    a slower build moves the step it slowed (and what waits on it). A step is judged against the others."""
    ratios = sorted(v["ratio"] for v in verdicts if v["column"] != "total_ms")
    return float(np.median(ratios)) if len(ratios) >= 3 else 1.0


def _step_item(v: dict[str, Any], m: float, t: float) -> dict[str, Any]:
    """One step's item: worse or better only when its interval is clear of 1 both as measured and beside the
    other steps (divided by the machine factor ``m``); a regression when both lie past the tolerance."""
    column = v["column"]
    name = "iteration" if column == "total_ms" else STEP_LABELS.get(column, column)
    iv, base_ms = v["interval"], v["old_median_ms"]
    item = {"name": name, "column": column, "what": f"median ms of {v['segments'][1]} segments (baseline "
            f"{v['segments'][0]})", "unit": "ms", "base": base_ms, "new": v["new_median_ms"], "ratio": v["ratio"],
            "interval": iv, "machine": m, "regression": False}
    if iv is None:
        item.update(verdict="cannot tell", line=f"{name}: {g(item['new'])} against {g(base_ms)} ms: too few segments "
                    f"to tell ({v['segments'][1]} and {v['segments'][0]}; 4 a side at least)")
        return item
    adj = [iv[0] / m, iv[1] / m]
    moved = abs(v["new_median_ms"] - base_ms) >= 1.0
    if min(iv[0], adj[0]) > 1 and moved:
        word = "worse"
    elif max(iv[1], adj[1]) < 1 and moved:
        word = "better"
    elif (iv[0] >= 1 / (1 + t) and iv[1] <= 1 + t) or max(abs(iv[0] - 1), abs(iv[1] - 1)) * base_ms < 1.0:
        word = "unchanged"  # inside the tolerance, or no change as large as a millisecond
    else:
        word = "cannot tell"
    reg = word == "worse" and min(iv[0], adj[0]) > 1 + t
    item.update(verdict=word, regression=reg, adjusted_interval=adj)
    item["line"] = _line(name, item["new"], base_ms, "ms", v["ratio"], iv, word, reg, t) + (
        f" (x{v['ratio'] / m:.3g} [{adj[0]:.3g}-{adj[1]:.3g}] beside the other steps, which moved x{m:.3g})"
        if abs(m - 1) >= 0.05 else "")
    return item


def compare(base: tuple[dict, pd.DataFrame], new: tuple[dict, pd.DataFrame], threshold: float = TOLERANCE,
            base_dir: str = "", run_dir: str = "", processes: pd.DataFrame | None = None) -> dict[str, Any]:
    """The run against its baseline: each item's ratio, interval and verdict; the regressions; a sentence.
    ``processes``: the run's ``processes.csv`` (``read_processes``), to tell a fall the machine made."""
    (b_info, b_rows), (n_info, n_rows) = base, new
    t = threshold
    items = []
    bs, ns = steady(b_info, b_rows), steady(n_info, n_rows)
    (bf, b_phi), (nf, n_phi) = _floor(b_info, b_rows), _floor(n_info, n_rows)
    items.append(_rate_item("rate", "steady rate (second half after the warm-up)", ns["successes"],
                            ns["to_s"] - ns["from_s"], bs["successes"], bs["to_s"] - bs["from_s"], t, (n_phi, b_phi)))
    items.append(_rate_item("floor", "the fleet verdict's floor level", nf["successes"], nf["t1"] - nf["t0"],
                            bf["successes"], bf["t1"] - bf["t0"], t, (n_phi, b_phi)))
    span = run_span(n_info, n_rows)
    for item, (a, b) in zip(items, ((ns["from_s"], ns["to_s"]), (nf["t0"], nf["t1"])), strict=True):
        _excuse(item, _machine_over(processes, span, a, b))
    verdicts = [v for c in [*STEP_COLUMNS, "total_ms"] if (v := _step_verdict(c, b_rows, n_rows, t)) is not None]
    m = machine_factor(verdicts)
    items += [_step_item(v, m, t) for v in verdicts]
    regressions = [x["name"] for x in items if x["regression"]]
    counts = {v: sum(1 for x in items if x["verdict"] == v) for v in VERDICTS}
    head = (f"{len(regressions)} regression{'s' if len(regressions) != 1 else ''} past the {t * 100:g} % tolerance"
            + (f" ({', '.join(regressions)})" if regressions else ""))
    sentence = (f"Against the baseline {base_dir or 'run'}: {head}; {counts['worse']} worse, {counts['better']} "
                f"better, {counts['unchanged']} unchanged, {counts['cannot tell']} cannot tell.")
    return {"baseline": str(base_dir), "run": str(run_dir), "threshold": t, "items": items, "machine": m,
            "regressions": regressions, "counts": counts, "sentence": sentence}


def _machine_over(processes: pd.DataFrame | None, span: Span, a: float, b: float) -> dict[str, float] | None:
    """``others_full`` over ``[a, b]`` seconds of the run's span (None without ``processes.csv``)."""
    if processes is None or processes.empty:
        return None
    t = seconds_since(processes["ts"], span.t0)
    inside = (t >= a) & (t <= b)
    p = processes[inside]
    return others_full(t[inside], p["role"].to_numpy(), p["cpu_percent"].to_numpy(),
                       int(p["cores"].max()) if len(p) else 1)


def _excuse(item: dict[str, Any], busy: dict[str, float] | None) -> None:
    """A rate item's fall made ``cannot tell`` when the machine was full with others' work over its stretch."""
    if busy is None or item["verdict"] != "worse":
        return
    item.update(verdict="cannot tell", regression=False, machine_busy=busy)
    item["line"] = (_line(item["name"], item["new"], item["base"], "it/s", item["ratio"], item["interval"],
                          "cannot tell", False, 0.0) + f" (the machine's cores were {busy['busy']:.0%} busy then, "
                    f"{busy['other']:.0%} of them with work not this run's: the machine's fall, not the code's)")


def _floor(info: dict, rows: pd.DataFrame) -> tuple[dict[str, Any], float]:
    """The fleet verdict's floor level and the dispersion of the run's counts."""
    span = run_span(info, rows)
    fleet = fleet_verdict(rows, span, pick_window(span.seconds, int(rows["ok"].sum())))
    return fleet["levels"][fleet["floor_index"]], float(fleet.get("dispersion") or 1.0)


def compare_dirs(base_dir: str | Path, run_dir: str | Path, threshold: float = TOLERANCE) -> dict[str, Any]:
    """``--baseline``: both runs read (the rows this needs only), refused when they answer other questions."""
    base = read_baseline(base_dir)
    new_info = runinfo.read(run_dir)
    why = refusal(identity(base[0]), identity(new_info), base_dir)
    if why:
        raise HarnessError(why)
    return compare(base, (new_info, read_rows(run_dir, COLUMNS)), threshold, str(base_dir), str(run_dir),
                   read_processes(Path(run_dir), new_info))


def format_lines(cmp: dict[str, Any]) -> list[str]:
    """What ``harness run`` / ``harness report`` print: the sentence, then one line per item."""
    return [cmp["sentence"], *(("REGRESSION " if x["regression"] else "  ") + x["line"] for x in cmp["items"])]
