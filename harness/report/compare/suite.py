"""Two suite runs compared phase by phase: which phase is credibly faster or slower, and which is a regression.

swamp's compare calls a phase faster or slower when its mean moved by 10 %,
whatever the trials' spread. Here each phase gets a 95 % interval for the
ratio new / old from both runs' samples: the Hodges-Lehmann interval of the
shift in log milliseconds (every new/old pair's log ratio, ordered; the ends
taken at the Mann-Whitney critical value), so it assumes nothing about how
the timings are distributed. A phase is ``slower`` when the whole interval
lies above 1 (``faster``: below) and its median moved by at least
``min_ms``; a ``regression`` when the interval lies above ``1 + threshold``.
The exact Mann-Whitney levels make the interval conservative: with 5 and 5
trials it covers 96.8 % (so two runs of the same code flag a phase 3.2 % of
the time: ``tests/unit/report/test_suite_compare.py`` counts it over many seeds). Below
4 trials a side no interval reaches 95 % and the phase is ``too few trials``
(never flagged).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

LEVEL = 0.95
FLOOR_MS = 1e-3  # a phase at 0 ms is taken as 1 us (logarithms); min_ms keeps such phases from being flagged
EXACT_MAX = 40  # trials a side up to which the Mann-Whitney null distribution is counted exactly


@cache
def _counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) orderings give each Mann-Whitney U (0 .. n*m)."""
    if n == 0 or m == 0:
        return (1,)
    a, b = _counts(n - 1, m), _counts(n, m - 1)  # the largest value is an x (above all m y's) or a y
    out = [0] * (n * m + 1)
    for u, c in enumerate(b):
        out[u] += c
    for u, c in enumerate(a):
        out[u + m] += c
    return tuple(out)


def _tail(n: int, m: int, u: int) -> float:
    """P(U <= u) for U under the null (no difference), exact or by the normal approximation."""
    if max(n, m) <= EXACT_MAX:
        c = _counts(n, m)
        return sum(c[: u + 1]) / sum(c)
    mu, sd = n * m / 2, math.sqrt(n * m * (n + m + 1) / 12)
    return 0.5 * math.erfc(-((u + 0.5 - mu) / sd) / math.sqrt(2))


def rank_of_ends(n: int, m: int, level: float = LEVEL) -> int | None:
    """k: the interval runs from the k-th smallest to the k-th largest pairwise difference (None: too few)."""
    alpha = 1 - level
    k = None
    for cand in range(1, n * m // 2 + 1):
        if 2 * _tail(n, m, cand - 1) <= alpha:
            k = cand
        else:
            break
    return k


def ratio_interval(old: list[float], new: list[float], level: float = LEVEL
                   ) -> tuple[float, float | None, float | None]:
    """(ratio estimate, low, high): new / old as the Hodges-Lehmann shift of log ms; ends None when too few."""
    lo_ms = [math.log(max(x, FLOOR_MS)) for x in old]
    ln_ms = [math.log(max(y, FLOOR_MS)) for y in new]
    diffs = sorted(y - x for x in lo_ms for y in ln_ms)
    mid = len(diffs) // 2
    est = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2
    k = rank_of_ends(len(old), len(new), level)
    if k is None:
        return math.exp(est), None, None
    return math.exp(est), math.exp(diffs[k - 1]), math.exp(diffs[-k])


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def verdict(old: list[float], new: list[float], *, threshold: float = 0.10, min_ms: float = 1.0,
            level: float = LEVEL) -> dict[str, Any]:
    """One phase compared: the ratio and its interval, ``slower`` / ``faster`` / ``same`` / ``too few trials``."""
    est, lo, hi = ratio_interval(old, new, level)
    m_old, m_new = _median(old), _median(new)
    moved = abs(m_new - m_old) >= min_ms
    if lo is None or hi is None:
        v = "too few trials"
    elif lo > 1 and moved:
        v = "slower"
    elif hi < 1 and moved:
        v = "faster"
    else:
        v = "same"
    return {"old_median_ms": round(m_old, 3), "new_median_ms": round(m_new, 3), "ratio": round(est, 4),
            "interval": None if lo is None else [round(lo, 4), round(hi or 0.0, 4)], "verdict": v,
            "regression": v == "slower" and lo is not None and lo > 1 + threshold,
            "delta_pct": round((m_new - m_old) / m_old * 100, 1) if m_old else 0.0,
            "old_trials": len(old), "new_trials": len(new)}


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return (r["scenario"], r["layout"], r["phase"])


def compare(old: dict[str, Any], new: dict[str, Any], *, threshold: float = 0.10, min_ms: float = 1.0,
            level: float = LEVEL) -> dict[str, Any]:
    """Every (scenario, layout, phase) both suite.json documents hold, compared; the summary and regressions."""
    before = {_key(r): r for r in old["results"]}
    rows = []
    for r in new["results"]:
        b = before.get(_key(r))
        if b is None or not b["samples_ms"] or not r["samples_ms"]:
            continue
        v = verdict([float(x) for x in b["samples_ms"]], [float(x) for x in r["samples_ms"]], threshold=threshold,
                    min_ms=min_ms, level=level)
        rows.append({"number": r.get("number"), "scenario": r["scenario"], "layout": r["layout"],
                     "phase": r["phase"], **v, "old_requests": b.get("requests"), "new_requests": r.get("requests")})
    count = {k: sum(1 for x in rows if x["verdict"] == k) for k in ("slower", "faster", "same", "too few trials")}
    totals = [x["ratio"] for x in rows if x["phase"] == "total"]
    only_old = sorted({_key(r)[:2] for r in old["results"]} - {_key(r)[:2] for r in new["results"]})
    return {"threshold": threshold, "min_ms": min_ms, "level": level, "backend": new.get("backend"),
            "baseline_backend": old.get("backend"), "comparisons": rows,
            "summary": {"compared": len(rows), **count,
                        "regressions": sum(1 for x in rows if x["regression"]),
                        "median_total_ratio": round(_median(totals), 4) if totals else None},
            "regressions": [x for x in rows if x["regression"]],
            "not_in_this_run": [{"scenario": s, "layout": lay} for s, lay in only_old]}


def _ratio(x: dict[str, Any]) -> str:
    iv = x["interval"]
    return f"x{x['ratio']:.3f}" + (f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else " [no interval]")


def format_compare(cmp: dict[str, Any], baseline: str, *, only_flagged: bool = False) -> str:
    """The comparison as text: every phase (or only the flagged ones), then the summary and the regressions."""
    s = cmp["summary"]
    lines = [f"compared with {baseline}: {s['compared']} phases; 95 % intervals of new / old; flagged when the "
             f"interval excludes 1 and the median moved >= {cmp['min_ms']:g} ms; a regression when it lies above "
             f"{1 + cmp['threshold']:.2f}"]
    shown = [x for x in cmp["comparisons"] if not only_flagged or x["verdict"] in ("slower", "faster")]
    if shown:
        w = max(len(f"{x['number']:>2} {x['scenario']} [{x['layout']}] {x['phase']}") for x in shown)
        lines.append(f"  {'scenario [layout] phase':{w}s}  {'old ms':>9s}  {'new ms':>9s}  "
                     f"{'ratio [95 % interval]':24s}  verdict")
        for x in shown:
            name = f"{x['number']:>2} {x['scenario']} [{x['layout']}] {x['phase']}"
            req = "" if x["old_requests"] == x["new_requests"] else (
                f"  (requests {x['old_requests']:g} -> {x['new_requests']:g})")
            mark = "  REGRESSION" if x["regression"] else ""
            lines.append(f"  {name:{w}s}  {x['old_median_ms']:9.2f}  {x['new_median_ms']:9.2f}  {_ratio(x):24s}"
                         f"  {x['verdict']}{mark}{req}")
    lines.append(f"summary: {s['slower']} slower ({s['regressions']} past the {cmp['threshold'] * 100:g} % threshold), "
                 f"{s['faster']} faster, {s['same']} same, {s['too few trials']} with too few trials to tell")
    typical = s.get("median_total_ratio")
    if typical is not None and not 0.9 <= typical <= 1.1:
        lines.append(f"every scenario's total moved by x{typical:.2f} in the median: when all phases move alike, "
                     "the machine (its load) differed between the runs, not only the code")
    if cmp["not_in_this_run"]:
        lines.append("in the baseline only: " + ", ".join(f"{x['scenario']} [{x['layout']}]"
                                                          for x in cmp["not_in_this_run"]))
    return "\n".join(lines)
