"""The report's verdicts before and after its statistics moved to scipy: the held synthetic runs, seed by seed.

"Before" is the numpy code the report ran until issue 59 (Byar's Poisson interval and the Cornish-Fisher
t quantile, which ``harness.core.intervals`` keeps for the live path, and the rank correlation by numpy ranks,
kept here), patched into ``harness.report.stats``; "after" is scipy's (``harness.report.stats`` as it is). Each case is
the verdict test's (tests/unit/report/test_reports_verdict.py) plus a run whose commit grows with its index entries (the
cause per step: Welch, Spearman); every seed's verdict (shape, degraded, the floor's segment, the step that
grew, the count that explains it) is compared, and the largest change of an interval's end is printed. Then
the sweep's USL fit: the grid search it had (kept here) against scipy's least squares, on generated sweeps.

Usage: python bench/stats_before_after.py [--seeds 40]
       python bench/stats_before_after.py --quick   # 3 seeds a case (CI)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.core import intervals as numpy_intervals  # noqa: E402
from harness.products.sweep import usl  # noqa: E402
from harness.report import stats  # noqa: E402
from harness.report.run.findings import findings  # noqa: E402
from tests.support.synthetic import make_rows, run_info  # noqa: E402


def _flat(r: float):
    return lambda t: np.full_like(t, r)


CASES: dict[str, dict[str, Any]] = {
    "flat 4 x 1.25 it/s, 120 s": dict(workers=4, duration_s=120.0, rate=_flat(1.25)),
    "flat 10 x 0.02 it/s, 1 h": dict(workers=10, duration_s=3600.0, rate=_flat(0.02)),
    "flat 4 x 0.2 it/s, 40 s": dict(workers=4, duration_s=40.0, rate=_flat(0.2)),
    "fall to a floor": dict(workers=6, duration_s=300.0, rate=lambda t: np.where(t < 60, 2 - 1.7 * t / 60, 0.3)),
    "still falling": dict(workers=20, duration_s=3600.0, rate=lambda t: 0.10 * (1 - 0.9 * t / 3600)),
    "V (recovering)": dict(workers=6, duration_s=300.0, rate=lambda t: np.interp(t, [0, 150, 300], [2.0, 0.5, 1.7])),
    "rising": dict(workers=8, duration_s=120.0, rate=lambda t: 0.5 + 1.0 * t / 120),
    "stalled": dict(workers=4, duration_s=120.0, rate=lambda t: np.where(t < 108, 1.25, 0.0)),
    "commit grows with index entries": dict(
        workers=4, duration_s=300.0, rate=lambda t: 1.0 / (1 + t / 150),
        steps={"commit_ms": lambda t: 50 + 2 * t, "pull_ms": _flat(40.0)},
        counts={"index_entries_written": lambda t: 10 + 4 * t}),
}


def _numpy_spearman(x: np.ndarray, y: np.ndarray) -> float:
    """The report's rank correlation before scipy (ties averaged by numpy ranks), kept for the comparison."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        return 0.0

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        sv = v[order]
        edges = np.flatnonzero(np.diff(sv)) + 1
        starts, ends = np.concatenate([[0], edges]), np.concatenate([edges, [len(v)]])
        out = np.empty(len(v))
        out[order] = np.repeat((starts + ends - 1) / 2.0, ends - starts)
        return out

    rx, ry = ranks(x), ranks(y)
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return 0.0
    return float(((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy))


def _grid_fit_points(n: np.ndarray, x: np.ndarray, w: np.ndarray, fit_kappa: bool = True) -> tuple[float, float, float]:
    """The USL fit before scipy (a grid search zoomed in four times), kept for the comparison: (λ, σ, κ)
    minimising the weighted squares, σ in [0, SIGMA_MAX], κ in {0} ∪ [KAPPA_MIN, KAPPA_MAX]."""
    lo_s, hi_s = 0.0, usl.SIGMA_MAX
    lo_k, hi_k = math.log10(usl.KAPPA_MIN), math.log10(usl.KAPPA_MAX)
    best: tuple[float, float, float, float] | None = None
    for _ in range(4):  # ZOOMS
        s_axis = np.linspace(lo_s, hi_s, usl.GRID)
        k_axis = np.concatenate([[0.0], 10 ** np.linspace(lo_k, hi_k, usl.GRID)]) if fit_kappa else np.array([0.0])
        sig, kap = np.meshgrid(s_axis, k_axis, indexing="ij")
        lam, sse = usl._profile(n, x, w, sig, kap)
        i = np.unravel_index(int(np.nanargmin(sse)), sse.shape)
        cand = (float(sse[i]), float(lam[i]), float(sig[i]), float(kap[i]))
        if best is None or cand[0] <= best[0]:
            best = cand
        ds, dk = (hi_s - lo_s) / (usl.GRID - 1) * 2, (hi_k - lo_k) / (usl.GRID - 1) * 2
        lo_s, hi_s = max(0.0, best[2] - ds), min(usl.SIGMA_MAX, best[2] + ds)
        if best[3] > 0:
            c = math.log10(best[3])
            lo_k, hi_k = max(math.log10(usl.KAPPA_MIN), c - dk), min(math.log10(usl.KAPPA_MAX), c + dk)
    assert best is not None
    return best[1], best[2], best[3]


USL_CASES = [(10.0, 0.3, 0.01), (5.0, 0.05, 0.002), (8.0, 0.9, 0.0)]
USL_WORKERS = (1, 2, 4, 8, 16, 32)


def usl_before_after(seeds: int) -> int:
    """The sweep's USL fit, grid against scipy, on generated sweeps (8 segments a size, 5 % noise)."""
    changed = 0
    for lam, sigma, kappa in USL_CASES:
        diffs, flips = [], 0
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            true = usl.usl(np.array(USL_WORKERS, dtype=float), lam, sigma, kappa)
            sizes = [usl.Size(n, tuple(x * (1 + 0.05 * rng.standard_normal(8))))
                     for n, x in zip(USL_WORKERS, true, strict=True)]
            real = usl.fit_points
            usl.fit_points = _grid_fit_points
            try:
                a = usl.fit(sizes, bootstrap=40, seed=seed)
            finally:
                usl.fit_points = real
            b = usl.fit(sizes, bootstrap=40, seed=seed)
            diffs.append(max(abs(a[k] - b[k]) / max(abs(a[k]), 1e-3) for k in ("sigma", "lambda")))
            flips += a["kappa_zero"] != b["kappa_zero"]
        changed += flips
        print(f"USL λ {lam:g} σ {sigma:g} κ {kappa:g} ({seeds} sweeps): σ and λ, grid against scipy, differ by "
              f"{np.median(diffs) * 100:.2f} % (median), {max(diffs) * 100:.2f} % (largest); "
              f"'κ indistinguishable from 0' changed in {flips}")
    return changed


@contextmanager
def before():
    """``harness.report.stats`` (and the modules that imported its functions) with the numpy statistics."""
    import harness.report.run.verdict as verdict
    import harness.report.series as series

    patches = [(stats, "poisson_interval", numpy_intervals.poisson_interval),
               (stats, "rate_interval", numpy_intervals.rate_interval),
               (stats, "t_quantile", numpy_intervals.t_quantile), (stats, "spearman", _numpy_spearman),
               (verdict, "rate_interval", numpy_intervals.rate_interval),
               (series, "poisson_interval", numpy_intervals.poisson_interval)]
    import harness.report.run.findings as fnd

    patches.append((fnd, "rate_interval", numpy_intervals.rate_interval))
    saved = [(m, n, getattr(m, n)) for m, n, _ in patches]
    for m, n, v in patches:
        setattr(m, n, v)
    try:
        yield
    finally:
        for m, n, v in saved:
            setattr(m, n, v)


def verdicts(case: dict[str, Any], seeds: int) -> list[dict[str, Any]]:
    out = []
    for seed in range(seeds):
        rows = make_rows(seed=seed, **case)
        f = findings(rows, run_info(workers=case["workers"], duration_s=case["duration_s"]))
        fl = f["fleet"]
        out.append({"shape": fl["shape"], "degraded": fl["degraded"], "floor": fl["floor_index"],
                    "grew": f["grew_most"], "explained_by": f["explained_by"],
                    "intervals": [*fl["start_interval"], *fl["floor_interval"], *fl["end_interval"]]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="3 seeds a case, 2 sweeps a USL case")
    args = ap.parse_args()
    seeds = 3 if args.quick else args.seeds
    changed_total = 0
    for name, case in CASES.items():
        with before():
            t0 = time.perf_counter()
            old = verdicts(case, seeds)
            t_old = time.perf_counter() - t0
        t0 = time.perf_counter()
        new = verdicts(case, seeds)
        t_new = time.perf_counter() - t0
        keys = ("shape", "degraded", "floor", "grew", "explained_by")
        changed = sum(any(a[k] != b[k] for k in keys) for a, b in zip(old, new, strict=True))
        rel = max(abs(x - y) / max(abs(x), 1e-12) for a, b in zip(old, new, strict=True)
                  for x, y in zip(a["intervals"], b["intervals"], strict=True))
        changed_total += changed
        shapes_old, shapes_new = Counter(v["shape"] for v in old), Counter(v["shape"] for v in new)
        print(f"{name} ({seeds} seeds): before {dict(shapes_old)}, degraded {sum(v['degraded'] for v in old)}; "
              f"after {dict(shapes_new)}, degraded {sum(v['degraded'] for v in new)}; "
              f"verdicts changed: {changed}; largest interval change {rel * 100:.2f} %; "
              f"findings {t_old / seeds * 1000:.0f} ms before, {t_new / seeds * 1000:.0f} ms after (a seed)")
    changed_total += usl_before_after(2 if args.quick else 10)
    print(f"seeds whose verdict changed, every case: {changed_total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
