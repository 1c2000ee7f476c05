"""The run's numbers defined once (``harness.metrics.numbers``): each definition on hand-made inputs, and every
reader (the report, the live tab, the exporters, the gates) reaching it rather than a copy of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.metrics import numbers
from harness.record.schema import STEP_COLUMNS

ROOT = Path(__file__).resolve().parents[3]


def test_an_outcome_is_ok_or_failed_with_its_kind():
    assert numbers.outcome({"ok": True, "error_kind": "throttled"}) == (True, "")
    assert numbers.outcome({"ok": False, "error_kind": "throttled"}) == (False, "throttled")
    assert numbers.outcome({"ok": False, "error_kind": ""}) == (False, "other")
    assert numbers.outcome({"ok": 0}) == (False, "other")


def test_a_rate_is_per_second_and_zero_over_no_time():
    assert numbers.per_second(30, 10.0) == 3.0
    assert numbers.per_second(30, 0.0) == 0.0
    # the last window of a 25 s span holds 5 s of it; a window past the end counts a sliver, never 0
    assert list(numbers.exposure(np.array([0.0, 10.0, 20.0, 30.0]), 10.0, 25.0)) == [10.0, 10.0, 5.0, 1e-9]


def test_the_failure_ratio_is_failed_over_all_and_none_without_iterations():
    assert numbers.failure_ratio(1, 4) == 0.25
    assert numbers.failure_ratio(0, 0) is None


def test_a_share_is_a_mean_over_the_sum_of_means():
    assert numbers.shares({"a": 30.0, "b": 10.0}) == {"a": 0.75, "b": 0.25}
    assert numbers.shares({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}
    assert numbers.shares({"a": 0.0}, empty=None) == {"a": None}
    assert "release_ms" not in numbers.STACKED_STEPS and len(numbers.STACKED_STEPS) == len(STEP_COLUMNS) - 1


def test_quantiles_interpolate_linearly_as_pandas_does():
    v = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert numbers.quantiles(v, (0.5, 0.95)) == list(pd.Series(v).quantile([0.5, 0.95]))
    assert numbers.quantiles([], (0.5, 0.95)) == [None, None]
    assert numbers.percentiles(np.array(v), (50, 100)) == [3.0, 10.0]


def test_the_poisson_band_holds_its_count():
    lo, hi = numbers.poisson_band(np.array([0.0, 1.0, 100.0]))
    assert lo[0] == 0.0 and hi[0] == pytest.approx(3.69, abs=0.03)  # the exact 3.689
    assert (lo[1:] < [1.0, 100.0]).all() and (hi > [0.0, 1.0, 100.0]).all()


def _imports_numbers(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "harness.metrics" and \
                any(a.name == "numbers" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "harness.metrics.numbers":
            return True
    return False


@pytest.mark.parametrize("reader", ["harness/load/web/live.py", "harness/report/series.py",
                                    "harness/report/run/compute.py", "harness/telemetry/measure.py",
                                    "harness/gates/judge.py"])
def test_every_reader_computes_with_the_one_definition(reader):
    assert _imports_numbers(ROOT / reader)


def test_the_definitions_bring_no_pandas_or_scipy_to_the_live_path():
    """The Locust master imports the live tab, the exporters' measure and these definitions: none of them imports
    pandas or scipy itself (the live tab's lock timelines, ``harness.metrics.lockuse``, still bring pandas)."""
    for path in ("harness/metrics/numbers.py", "harness/load/web/live.py", "harness/telemetry/measure.py"):
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not names & {"pandas", "scipy"}, path
