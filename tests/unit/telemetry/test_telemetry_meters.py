"""The live meters in one process: the measurements against the rows, each exporter's names and labels, the
end-of-run linger, and the plan's --otel / --prometheus / [observe] otel (no Locust, no network but loopback)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families

from harness.config import scenario as scenarios
from harness.config.plan import RunPlan
from harness.config.telemetry import TelemetryPlan, check_free, otel_destination, parse_listen, telemetry_plan
from harness.core.errors import HarnessError
from harness.load.web.live import Live
from harness.record.schema import STEP_COLUMNS
from harness.telemetry.measure import MAX_LOCK_KEYS, OTHER, KeyNames, measure_events, measure_rows
from harness.telemetry.meters import Meters, Tap
from harness.telemetry.otel import OtelMeters
from harness.telemetry.prometheus import SERIES, MetricsServer, PrometheusMeters
from tests.support.plans import make_plan

RUN = {"run_id": "r-1", "scenario": "namespaced", "backend": "dynamodb"}


def _row(worker: str, ok: bool = True, kind: str = "", **cols: float) -> dict:
    row = {"worker": worker, "ok": ok, "error_kind": kind, "read_units": 1.5, "write_units": 2.0,
           "ts_start": 100.0, "ts_end": 100.2, "user": f"{worker}-u"}
    row.update({c: 0.0 for c in STEP_COLUMNS.values()})
    row.update(cols)
    return row


ROWS = [_row("worker-0", lock_wait_ms=5.0, pull_ms=20.0, pull_requests=3, commit_ms=7.0),
        _row("worker-1", lock_wait_ms=50.0, pull_ms=2.0, pull_requests=1),
        _row("worker-1", ok=False, kind="throttled", lock_wait_ms=1.0)]
EVENTS = [{"type": "grant", "key": "ns/a", "started_ms": 1000, "granted_ms": 1250},
          {"type": "grant", "key": "ns/b", "started_ms": 1000, "granted_ms": 1000},
          {"type": "lock_timeout", "key": "ns/a", "invoke_ms": 1, "end_ms": 9},
          {"type": "release", "key": "ns/a"}, {"type": "commit", "key": None}]


def test_rows_measured_as_defined():
    b = measure_rows(ROWS)
    assert b.iterations == {("worker-0", "ok", ""): 1, ("worker-1", "ok", ""): 1,
                            ("worker-1", "failed", "throttled"): 1}
    # a step is observed where it ran (above 0 ms), in seconds; steps that did not run are not observed
    assert sorted(b.steps) == sorted([("worker-0", "lock", 0.005), ("worker-0", "pull", 0.02),
                                      ("worker-0", "commit", 0.007), ("worker-1", "lock", 0.05),
                                      ("worker-1", "pull", 0.002), ("worker-1", "lock", 0.001)])
    assert b.requests == {("worker-0", "pull"): 3, ("worker-1", "pull"): 1}
    assert b.units == {("worker-0", "read"): 1.5, ("worker-0", "write"): 2.0, ("worker-1", "read"): 3.0,
                       ("worker-1", "write"): 4.0}


def test_lock_events_measured_and_keys_bounded():
    b = measure_events(EVENTS, KeyNames())
    assert b.grants == {"ns/a": 1, "ns/b": 1} and b.timeouts == {"ns/a": 1}
    assert sorted(b.waits) == [("ns/a", 0.25), ("ns/b", 0.0)]
    names = KeyNames()
    labels = [names(f"k{i}") for i in range(MAX_LOCK_KEYS + 5)] + [names("k0")]
    assert labels[:MAX_LOCK_KEYS] == [f"k{i}" for i in range(MAX_LOCK_KEYS)]
    assert labels[MAX_LOCK_KEYS:-1] == [OTHER] * 5 and labels[-1] == "k0"  # a kept key keeps its name


def _families(meters: PrometheusMeters) -> dict:
    from prometheus_client import generate_latest

    return {f.name: f for f in text_string_to_metric_families(generate_latest(meters.registry).decode())}


def test_prometheus_series_names_labels_and_values():
    bound = (RUN, "lock", "ns/a", 0.75)
    p = PrometheusMeters(lambda: bound)
    p.record(RUN, measure_rows(ROWS))
    p.record(RUN, measure_events(EVENTS, KeyNames()))
    fam = _families(p)
    # every family on the page is one the harness declares (so the dashboard's check is complete), no _created
    names = {f"{n}_total" if f.type == "counter" else n for n, f in fam.items()}
    assert names == set(SERIES)
    assert {f.type for n, f in fam.items()} == {"counter", "histogram", "gauge"}
    it = {(s.labels["process"], s.labels["outcome"], s.labels["error_kind"]): s.value
          for s in fam["harness_iterations"].samples}
    assert it == {("worker-0", "ok", ""): 1, ("worker-1", "ok", ""): 1, ("worker-1", "failed", "throttled"): 1}
    counts = {s.labels["step"]: s.value for s in fam["harness_step_duration_seconds"].samples
              if s.name.endswith("_count") and s.labels["process"] == "worker-1"}
    assert counts == {"lock": 2, "pull": 1}
    for s in fam["harness_iterations"].samples:
        assert {k: s.labels[k] for k in RUN} == RUN
    g = fam["harness_bound_utilization_ratio"].samples
    assert [(s.labels["kind"], s.labels["resource"], s.value) for s in g] == [("lock", "ns/a", 0.75)]
    # no bound (no test running): the gauge has no series, the page is still served
    p.__init__(lambda: None)  # a fresh registry whose bound source has nothing
    assert _families(p)["harness_bound_utilization_ratio"].samples == []


def test_otel_instruments_carry_the_run_attributes():
    reader = InMemoryMetricReader()
    o = OtelMeters(lambda: (RUN, "step", "commit", 0.5), MeterProvider(metric_readers=[reader]))
    o.record(RUN, measure_rows(ROWS))
    o.record(RUN, measure_events(EVENTS, KeyNames()))
    data = reader.get_metrics_data()
    points = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == "harness"
            for m in sm.metrics:
                points[m.name] = (m.unit, [p for p in m.data.data_points])
    assert set(points) == {"harness.iterations", "harness.step.duration", "harness.step.requests",
                           "harness.capacity.units", "harness.lock.grants", "harness.lock.wait",
                           "harness.lock.timeouts", "harness.bound.utilization"}
    unit, its = points["harness.iterations"]
    failed = [p for p in its if p.attributes["harness.outcome"] == "failed"]
    assert failed[0].attributes == {"harness.run_id": "r-1", "harness.scenario": "namespaced",
                                    "harness.backend": "dynamodb", "harness.process": "worker-1",
                                    "harness.outcome": "failed", "error.type": "throttled"}
    assert sum(p.value for p in its) == 3 and unit == "{iteration}"
    unit, hist = points["harness.step.duration"]
    assert unit == "s" and sum(p.count for p in hist) == 6
    assert list(hist[0].explicit_bounds)[:3] == [0.001, 0.0025, 0.005]  # seconds, not the SDK's ms-ish default
    _, gauge = points["harness.bound.utilization"]
    assert [(p.value, p.attributes["harness.bound.resource"]) for p in gauge] == [(0.5, "commit")]


def test_live_taps_see_every_row_and_event_once():
    seen = []

    class Recorder:
        def rows(self, rows):
            seen.append(("rows", len(rows)))

        def events(self, events):
            seen.append(("events", len(events)))

    live = Live()
    live.taps.append(Recorder())
    live.add(ROWS)
    live.add_events(EVENTS)
    assert seen == [("rows", 3), ("events", 5)]


def test_meters_tap_and_bound_from_the_running_test():
    class Test:
        plan = make_plan(scenario="namespaced")
        live = Live()
        started_at = 99.0

    test = Test()
    reader = InMemoryMetricReader()
    m = Meters(lambda: test, prometheus=None, otel=True, otel_provider=MeterProvider(metric_readers=[reader]),
               now=lambda: 101.0)
    m.watch(test)
    assert isinstance(test.live.taps[0], Tap)
    test.live.add([{**r, "ts_start": 99.0, "ts_end": 100.9} for r in ROWS])  # the users inside iterations
    labels, kind, name, utilization = m.bound()
    assert labels == {"run_id": test.plan.run_id, "scenario": "namespaced", "backend": "dynamodb"}
    assert kind == "step" and 0 <= utilization <= 1
    m2 = Meters(lambda: None, otel=True, otel_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
    assert m2.bound() is None


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def test_linger_waits_for_a_scrape_after_the_last_numbers_bounded():
    p = PrometheusMeters(lambda: None)
    server = MetricsServer(p, "127.0.0.1", 0)
    clock = FakeTime()
    assert server.linger(5.0, clock.sleep, clock.now) and clock.slept == []  # nobody scrapes: no wait
    server.scrapes, server.last_scrape, p.updated = 3, 10.0, 11.0  # the final rows came after the last scrape

    def scraped_at_2s(s: float) -> None:
        clock.sleep(s)
        if clock.t >= 2.0:
            server.last_scrape = 12.0

    assert server.linger(5.0, scraped_at_2s, clock.now) and 1.9 < clock.t < 2.2
    clock.t, p.updated = 0.0, 20.0  # never scraped again: gives up after the bound
    assert not server.linger(5.0, clock.sleep, clock.now) and 4.9 < clock.t < 5.2


def test_listen_addresses_and_where_otel_goes():
    assert parse_listen("9646") == ("127.0.0.1", 9646)
    assert parse_listen("0.0.0.0:9646") == ("0.0.0.0", 9646)
    assert parse_listen("[::1]:9646") == ("::1", 9646)
    for bad in ("x", "host:", "127.0.0.1:0", "70000"):
        with pytest.raises(HarnessError, match="--prometheus"):
            parse_listen(bad)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(HarnessError, match="cannot listen there"):
            check_free("127.0.0.1", s.getsockname()[1])
    assert otel_destination({}) == "http://localhost:4317 (the SDK default) over OTLP/grpc (exporters: otlp)"
    assert otel_destination({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL":
                             "http/protobuf"}) == "http://c:4318 over OTLP/http/protobuf (exporters: otlp)"
    assert otel_destination({"OTEL_METRICS_EXPORTER": "none"}).startswith("nowhere")
    with pytest.raises(HarnessError, match="--cloudwatch-wait"):
        telemetry_plan(otel=False, prometheus=None, cloudwatch_wait_s=-1, otel_variables={})


def test_plan_carries_telemetry_and_observe_otel(tmp_path):
    t = TelemetryPlan(otel=True, otel_to="x", prometheus_host="127.0.0.1", prometheus_port=9646)
    plan = make_plan(scenario="namespaced")
    from dataclasses import replace

    back = RunPlan.from_json(replace(plan, telemetry=t).to_json())
    assert back.telemetry == t and back.telemetry.prometheus == "http://127.0.0.1:9646/metrics"
    assert RunPlan.from_json(plan.to_json()).telemetry == TelemetryPlan()  # off unless asked
    sc = scenarios.parse({"observe": {"otel": True}})
    assert sc.observe.otel and not scenarios.parse({}).observe.otel
    with pytest.raises(HarnessError, match="observe.otel must be true or false"):
        scenarios.parse({"observe": {"otel": "yes"}})
    with pytest.raises(HarnessError, match="observe.every2 is not a known key"):
        scenarios.parse({"observe": {"every2": 1}})


def test_locust_command_turns_on_locusts_otel():
    from dataclasses import replace

    from harness.supervisor.run import locust_command

    plan = make_plan(scenario="namespaced")
    assert "--otel" not in locust_command(plan, "plan.json")
    assert "--otel" in locust_command(replace(plan, telemetry=TelemetryPlan(otel=True)), "plan.json")


def test_a_bad_prometheus_address_is_one_line_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "harness", "run", "namespaced", "--prometheus", "nope",
                        "--run-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--prometheus nope: give HOST:PORT" in p.stderr
    assert not (tmp_path / "r").exists()
