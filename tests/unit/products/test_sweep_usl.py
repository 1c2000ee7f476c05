"""The Universal Scalability Law fit (products/sweep/usl.py) on generated sweeps whose σ, κ and noise are known."""

from __future__ import annotations

import numpy as np
import pytest

from harness.products.sweep import usl

WORKERS = (1, 2, 4, 8, 16, 32)
SEGMENTS = 8
NOISE = 0.05
SEEDS = 20
BOOT = 80


def _sweep(lam: float, sigma: float, kappa: float, seed: int, workers=WORKERS) -> list[usl.Size]:
    rng = np.random.default_rng(seed)
    true = usl.usl(np.array(workers, dtype=float), lam, sigma, kappa)
    return [usl.Size(n, tuple(x * (1 + NOISE * rng.standard_normal(SEGMENTS))))
            for n, x in zip(workers, true, strict=True)]


def _inside(iv, v) -> bool:
    lo, hi = iv
    return (lo is None or lo <= v) and (hi is None or v <= hi)


@pytest.mark.parametrize("lam,sigma,kappa", [(10.0, 0.3, 0.01), (5.0, 0.05, 0.002), (8.0, 0.9, 0.0)])
def test_each_parameter_is_within_its_95_interval_in_17_of_20_seeds(lam, sigma, kappa):
    hits = {"sigma": 0, "kappa": 0, "lambda": 0}
    for seed in range(SEEDS):
        f = usl.fit(_sweep(lam, sigma, kappa, seed), bootstrap=BOOT, seed=seed)
        hits["sigma"] += _inside(f["intervals"]["sigma"], sigma)
        hits["kappa"] += _inside(f["intervals"]["kappa"], kappa)
        hits["lambda"] += _inside(f["intervals"]["lambda"], lam)
    assert all(h >= 17 for h in hits.values()), hits


def test_the_peak_and_its_rate_follow_sigma_and_kappa():
    f = usl.fit(_sweep(10.0, 0.3, 0.01, 1), bootstrap=BOOT)
    n_star = np.sqrt(0.7 / 0.01)
    assert f["peak_workers"] == pytest.approx(n_star, rel=0.25)
    assert _inside(f["intervals"]["peak_workers"], n_star)
    assert f["peak_rate"] == pytest.approx(float(usl.usl(n_star, 10.0, 0.3, 0.01)), rel=0.1)
    assert not f["kappa_zero"]
    text = " ".join(usl.words(f))
    assert "more workers past N* lower the rate" in text and "σ 0.3" in text


def test_a_serial_fleet_without_coherency_cost_gets_amdahls_ceiling():
    f = usl.fit(_sweep(8.0, 0.9, 0.0, 3), bootstrap=BOOT)
    assert f["kappa_zero"] and f["sigma"] == pytest.approx(0.9, abs=0.1)
    assert f["amdahl_ceiling"] == pytest.approx(8.0 / 0.9, rel=0.1)
    text = " ".join(usl.words(f))
    assert "serializes 8" in text or "serializes 9" in text
    assert "Amdahl's ceiling λ/σ = " in text and ("indistinguishable from 0" in text or "cannot tell from 0" in text)


def test_shared_lock_sigma_is_credibly_larger_than_namespaced():
    lock = usl.fit(_sweep(10.0, 0.9, 0.0, 5), bootstrap=BOOT)
    ns = usl.fit(_sweep(10.0, 0.05, 0.001, 5), bootstrap=BOOT)
    assert lock["intervals"]["sigma"][0] > ns["intervals"]["sigma"][1]


def test_two_sizes_fit_sigma_only_and_one_size_fits_nothing():
    two = usl.fit(_sweep(10.0, 0.5, 0.0, 2, workers=(1, 2)), bootstrap=BOOT)
    assert two["kappa"] == 0 and two["kappa_fitted"] is False and two["sigma"] == pytest.approx(0.5, abs=0.15)
    assert "κ is taken as 0" in two["note"]
    one = usl.fit(_sweep(10.0, 0.5, 0.0, 2, workers=(4,)))
    assert one["sigma"] is None and "at least two" in usl.words(one)[0]


# ---- the command's inputs and a run's entry in sweep.json ------------------------------------------------------


def test_workers_lists_are_sorted_sizes_or_one_line_errors():
    from harness.core.errors import HarnessError
    from harness.products.sweep.command import parse_workers

    assert parse_workers("8, 1,2,4") == (1, 2, 4, 8)
    for bad, says in [("", "separated by commas"), ("1,-2", "'-2' is not a fleet size"), ("1.5", "'1.5'"),
                      ("4,4", "given twice"), ("1,20000", "at most 10,000"), (",".join(map(str, range(1, 14))),
                                                                           "at most 12 sizes")]:
        with pytest.raises(HarnessError, match=says) as e:
            parse_workers(bad)
        assert "\n" not in str(e.value)


def test_processes_auto_adds_a_locust_process_per_50_workers_up_to_the_cores():
    from harness.core.errors import HarnessError
    from harness.products.sweep.command import processes_for

    assert [processes_for("auto", n, cores=4) for n in (1, 50, 51, 100, 150, 1000)] == [0, 0, 2, 2, 3, 4]
    assert processes_for("3", 1) == 3
    with pytest.raises(HarnessError, match="give auto or a number"):
        processes_for("many", 4)


def test_a_runs_entry_is_its_rate_after_the_warm_up_with_its_segments():
    from harness.products.sweep.numbers import fit_sizes, size_record

    levels = [{"t0": 0.0, "t1": 5.0, "successes": 10, "rate": 2.0}, {"t0": 5.0, "t1": 10.0, "successes": 50,
                                                                      "rate": 10.0},
              {"t0": 10.0, "t1": 15.0, "successes": 40, "rate": 8.0}]
    f = {"fleet": {"warmup_s": 5.0, "levels": levels, "dispersion": 1.0}, "failures": 0, "failure_ratio": 0.0,
         "percentiles": [{"name": "iteration (succeeded)", "p50": 10.0, "p95": 20.0, "p99": 30.0}],
         "bottleneck": {"kind": "lock", "name": "k", "utilization": 0.99, "interval": None, "sentence": "s"}}
    r = size_record(4, 1, "w004", f)
    assert r["rate"] == pytest.approx(9.0) and r["segments"] == [10.0, 8.0] and r["seconds"] == 10.0
    assert r["interval"][0] < 9.0 < r["interval"][1] and r["latency_ms"] == {"p50": 10.0, "p95": 20.0, "p99": 30.0}
    two = size_record(4, 2, "w004-t2", f)
    assert fit_sizes([r, two]) == [usl.Size(4, (10.0, 8.0, 10.0, 8.0))]
