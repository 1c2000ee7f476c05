"""Live metrics end to end: one real run, scraped by Debian's Prometheus and exported over OTLP at once.

``harness run namespaced --processes 2 --prometheus PORT --otel`` for 20 s: a real Prometheus server
(``/usr/bin/prometheus``, on loopback, scraping every second) reads the master's ``/metrics``, and the
run's OpenTelemetry metrics go to a loopback OTLP/HTTP receiver (tests/support/otlp_sink.py). Both are then compared
with the run's own rows (its Parquet files): the iteration count, each step histogram's count, the run's
labels and attributes. One run serves both tests (a module fixture): ~35 s in all.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from harness.record.schema import STEP_COLUMNS
from tests.e2e.conftest import clean_env, harness, rows
from tests.support.otlp_sink import serve

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("live_metrics")]

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
RUN_S = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
        return r.read()


class Prometheus:
    """Debian's Prometheus server on loopback, scraping one target every second."""

    def __init__(self, work: Path, target_port: int) -> None:
        self.port = _free_port()
        work.mkdir(parents=True, exist_ok=True)
        (work / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: harness\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{target_port}']\n")
        self.log = open(work / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={work / 'prometheus.yml'}",
                                      f"--storage.tsdb.path={work / 'data'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                _get(f"http://127.0.0.1:{self.port}/-/ready", 1.0)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = (work / "prometheus.log").read_text()
                    raise RuntimeError(f"prometheus did not become ready: {log}") from None
                time.sleep(0.2)

    def query(self, promql: str) -> list[dict]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        body = json.loads(_get(url))
        assert body["status"] == "success", body
        return body["data"]["result"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def scraped_run(tmp_path_factory):
    """(run directory, its rows, the Prometheus server (still up), the OTLP receiver's sink)."""
    work = tmp_path_factory.mktemp("live")
    metrics_port = _free_port()
    prom = Prometheus(work / "prometheus", metrics_port)
    otlp, sink = serve()
    try:
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{otlp.server_address[1]}",
                        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", OTEL_METRIC_EXPORT_INTERVAL="2000")
        run_dir = work / "run"
        p = harness("run", "namespaced", "--processes", "2", "--users", "4", "--duration", f"{RUN_S}s",
                    "--run-dir", str(run_dir), "--no-report", "--prometheus", str(metrics_port), "--otel", env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"Prometheus metrics at http://127.0.0.1:{metrics_port}/metrics" in p.stdout
        assert f"metrics to http://127.0.0.1:{otlp.server_address[1]} over OTLP/http/protobuf" in p.stdout
        yield run_dir, rows(run_dir), prom, sink
    finally:
        otlp.shutdown()
        prom.stop()


def _value(result: list[dict]) -> dict[str, float]:
    return {",".join(f"{k}={v}" for k, v in sorted(r["metric"].items())): float(r["value"][1]) for r in result}


def _settled(prom: Prometheus, promql: str, want: dict[str, float]) -> dict[str, float]:
    """The query's answer once it equals ``want`` (the last scrape is appended just after the run ends)."""
    deadline = time.monotonic() + 5
    while True:
        got = _value(prom.query(promql))
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.25)


def test_prometheus_scraped_the_runs_rows_and_step_histograms(scraped_run):
    run_dir, d, prom, _ = scraped_run
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert set(d["worker"]) == {"worker-0", "worker-1"} and len(d) > 20
    sel = f'run_id="{run_id}",scenario="namespaced",backend="dynamodb"'
    # every row counted once, by the process that ran it (the last scrape read the final rows)
    per_process = d.groupby("worker").size()
    want = {f"process={w}": float(n) for w, n in per_process.items()}
    assert _settled(prom, f"sum by (process) (last_over_time(harness_iterations_total{{{sel}}}[5m]))",
                    want) == want
    # each step's histogram counts the rows in which that step ran
    want = {f"step={step}": float((d[col] > 0).sum()) for step, col in STEP_COLUMNS.items() if (d[col] > 0).any()}
    assert _settled(prom, f"sum by (step) (last_over_time(harness_step_duration_seconds_count{{{sel}}}[5m]))",
                    want) == want
    # and its sum is the rows' seconds (float sums in another order: to a microsecond a row)
    got = _value(prom.query(f'sum(last_over_time(harness_step_duration_seconds_sum{{{sel},step="pull"}}[5m]))'))
    assert abs(next(iter(got.values())) - d["pull_ms"].sum() / 1000) < 1e-6 * len(d)
    # the lock grants: one per successful iteration's namespace lock, on the four workers' keys
    grants = _value(prom.query(f"sum by (lock_key) (last_over_time(harness_lock_grants_total{{{sel}}}[5m]))"))
    assert len(grants) == 4 and sum(grants.values()) >= d["ok"].sum()
    # the run was live: Prometheus saw the count grow over the 20 s, scrape after scrape
    samples = prom.query(f"count_over_time(harness_iterations_total{{{sel},process=\"worker-0\"}}[5m])")
    assert float(samples[0]["value"][1]) >= RUN_S / 2
    assert prom.query(f"last_over_time(harness_bound_utilization_ratio{{{sel}}}[5m])")


def test_otlp_export_carries_the_harness_meters_with_their_attributes(scraped_run):
    run_dir, d, _, sink = scraped_run
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    run = {"harness.run_id": run_id, "harness.scenario": "namespaced", "harness.backend": "dynamodb"}
    iterations = sink.last("harness.iterations")
    assert iterations, f"no harness.iterations among {sorted({p.metric for p in sink.points()})}"
    for p in iterations.values():
        assert {k: p.attributes[k] for k in run} == run and p.unit == "{iteration}"
    by_process = {p.attributes["harness.process"]: p.value for p in iterations.values()
                  if p.attributes["harness.outcome"] == "ok"}
    # cumulative sums: the last export (the master flushes at its end) holds every row
    assert by_process == {w: float(n) for w, n in d[d["ok"]].groupby("worker").size().items()}
    steps = sink.last("harness.step.duration")
    counts: dict[str, int] = {}
    for p in steps.values():
        assert p.kind == "histogram" and p.unit == "s"
        counts[p.attributes["harness.step"]] = counts.get(p.attributes["harness.step"], 0) + p.count
    assert counts == {step: int((d[col] > 0).sum()) for step, col in STEP_COLUMNS.items() if (d[col] > 0).any()}
    keys = {p.attributes["harness.lock.key"] for p in sink.last("harness.lock.grants").values()}
    assert len(keys) == 4
    assert sink.last("harness.capacity.units") and sink.last("harness.step.requests")
    bound = list(sink.last("harness.bound.utilization").values())
    assert bound and 0 <= bound[-1].value <= 1 and bound[-1].attributes["harness.bound.kind"]
    # Locust's own instrumentation is on too (its request histogram), from the worker processes
    assert sink.last("locust.client.duration")
    assert {p.resource.get("service.name") for p in sink.points()} == {"locust"}
