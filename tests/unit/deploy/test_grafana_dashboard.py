"""deploy/grafana/harness-dashboard.json asks only for what /metrics serves: every series and label its
queries, legends and variables name is on the page the harness's registry renders (a renamed series or label
fails here, not on an operator's empty panel)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness.telemetry.measure import KeyNames, measure_events, measure_rows
from harness.telemetry.prometheus import SERIES, PrometheusMeters
from tests.unit.telemetry.test_telemetry_meters import EVENTS, ROWS, RUN

DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "harness-dashboard.json"
FUNCTIONS = {"sum", "rate", "histogram_quantile", "max", "by", "label_values", "irate", "increase", "avg"}


def exported() -> dict[str, set[str]]:
    """Every sample name /metrics serves (histograms' _bucket, _sum, _count) and its labels."""
    p = PrometheusMeters(lambda: (RUN, "lock", "ns/a", 0.5))
    p.record(RUN, measure_rows(ROWS))
    p.record(RUN, measure_events(EVENTS, KeyNames()))
    out: dict[str, set[str]] = {}
    for fam in text_string_to_metric_families(generate_latest(p.registry).decode()):
        for s in fam.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def queries(d: dict) -> list[tuple[str, str]]:
    """(expression, legend) of every panel target and variable query."""
    out = [(t["expr"], t.get("legendFormat", "")) for p in d["panels"] for t in p.get("targets", [])]
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            out.append((v["query"]["query"] if isinstance(v["query"], dict) else v["query"], ""))
    return out


def test_every_query_names_a_series_and_labels_the_harness_exports():
    series = exported()
    assert {n.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count") for n in series} == \
        {n for n in SERIES}  # the page has every declared series, nothing else
    d = json.loads(DASHBOARD.read_text())
    found = queries(d)
    assert len(found) >= 10
    used = set()
    for expr, legend in found:
        names = set(re.findall(r"\bharness_\w+", expr))
        assert names, f"{expr!r} names no harness series"
        for name in names:
            assert name in series, f"{expr!r}: {name} is not on /metrics (it has {sorted(series)})"
        used |= names
        # any other selector would be a series the harness does not export
        selectors = set(re.findall(r"\b([a-zA-Z_:][\w:]*)\s*[{\[]", expr)) - FUNCTIONS
        assert selectors <= names, f"{expr!r} selects {selectors - names}"
        labels = set().union(*(series[n] for n in names))
        matchers = re.findall(r"(\w+)\s*(?:=~|!~|!=|=)\s*\"", expr)
        grouped = [x.strip() for g in re.findall(r"\bby\s*\(([^)]*)\)", expr) for x in g.split(",")]
        legends = re.findall(r"\{\{\s*(\w+)\s*\}\}", legend)
        variable = re.findall(r"label_values\(\s*\w+\s*,\s*(\w+)\s*\)", expr)
        for label in [*matchers, *grouped, *legends, *variable]:
            assert label in labels, f"{expr!r}: label {label!r} is not on {sorted(names)} ({sorted(labels)})"
    # the dashboard shows each thing the issue names: rate, step times, lock waits, the bound
    for must in ("harness_iterations_total", "harness_step_duration_seconds_bucket", "harness_lock_wait_seconds_bucket",
                 "harness_bound_utilization_ratio"):
        assert must in used


def test_dashboard_is_importable_json():
    d = json.loads(DASHBOARD.read_text())
    assert d["uid"] and d["title"] and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        assert p["datasource"]["type"] == "prometheus" and p["targets"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        assert {"x", "y", "w", "h"} <= set(p["gridPos"])
