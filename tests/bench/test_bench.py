"""Every benchmark runs in its quick mode and prints its figures (the full mode stays for measuring).

These check that a benchmark still runs and that its figures are numbers in
the range they can take, not that a target is met: the targets are measured by
the full runs, on a quiet machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NUM = r"([0-9][0-9,]*\.?[0-9]*)"

pytestmark = pytest.mark.bench


def _quick(script: str, *args: str, timeout: float = 240, tmp: Path | None = None) -> str:
    """Run a bench's quick mode in its own process group: a timeout ends the bench and what it started
    (``tmp``: its TMPDIR, to see what it leaves there)."""
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp else None
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / script), "--quick", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{script} --quick did not finish in {timeout:g} s:\n{out}\n{err}") from None
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    return p.stdout


def _num(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in:\n{text}"
    return float(m.group(1).replace(",", ""))


def test_harness_overhead_quick():
    out = _quick("harness_overhead.py")
    boto = _num(r"datastore steps through boto3 :\s+" + NUM + " ms", out)
    store = _num(r"the instant store's own " + NUM + " ms left out", out)
    harness = _num(r"harness \(row\+events\+parquet\)\s+:\s+" + NUM + " ms", out)
    ratio = _num(r"harness / boto3\s+:\s+" + NUM + "%", out)
    assert boto > 1.0 and harness > 0 and 0 < store < boto  # a pruning iteration is a dozen or more calls
    assert ratio == pytest.approx(100 * harness / boto, rel=0.05, abs=0.02)
    rate = _num(r"instant backend \(median of 1 x 5 s\): " + NUM + " iterations/s", out)
    cpu = _num(r"iterations/s at " + NUM + " CPU-s/s", out)
    assert rate > 0 and 0 < cpu < 2.5  # one Locust process: at most about one core
    # side by side: all in, boto3's (the same figure as above), the rest and the ratio, consistent
    all_in = _num(r"all in \(one Locust process\)\s+:\s+" + NUM + " ms", out)
    assert _num(r"boto3 \(datastore steps\)\s+:\s+" + NUM + " ms", out) == boto
    assert _num(r"while its users ran: " + NUM + " iterations", out) > 0
    rest = _num(r"the rest \(harness, Locust...\) :\s+(-?[0-9.]+) ms", out)
    assert rest == pytest.approx(all_in - boto, abs=0.002)
    assert _num(r"all in / boto3 = " + NUM, out) == pytest.approx(all_in / boto, abs=0.002)
    assert all_in > 1.0
    # the live metrics on beside off: off is the figure above; each mode's ratio is its own over off's
    assert _num(r"  off\s+:\s+" + NUM + " ms", out) == all_in
    for mode in ("otel", "prometheus"):
        ms = _num(rf"  {mode}\s+:\s+" + NUM + " ms", out)
        assert ms > 1.0 and _num(rf"  {mode}\s+:\s+[0-9.]+ ms\s+" + NUM + " x off", out) == pytest.approx(
            ms / all_in, abs=0.002)
    # and they were on: the OTLP sink received exports, /metrics answered scrapes
    assert _num(r"the OTLP sink took " + NUM + " exports", out) > 0
    assert _num(r"/metrics was scraped " + NUM + " times", out) > 0
    # the meters' own CPU per row, in process: its parts add up, and it is set beside boto3's per iteration
    parts = [_num(rf"{name} " + NUM + " ms", out) for name in ("measure", "Prometheus", "OpenTelemetry")]
    total = _num(r"OpenTelemetry [0-9.]+ ms\s+=\s+" + NUM + " ms", out)
    assert all(p > 0 for p in parts) and total == pytest.approx(sum(parts), abs=0.0002)
    assert _num(r"ms\s+" + NUM + "% of boto3's", out) == pytest.approx(100 * total / boto, rel=0.02, abs=0.01)


def test_report_same_quick_finds_a_report_identical_to_itself_and_names_a_difference():
    out = _quick("report_same.py")
    assert "summary.json identical (20,000 rows requested)" in out
    sys.path.insert(0, str(ROOT))
    from bench.report_same import differences

    a = {"runs": [{"findings": {"rate": 1.0, "levels": [1, 2]}}]}
    b = {"runs": [{"findings": {"rate": 1.0, "levels": [1, 3]}}]}
    assert differences(a, a) == []
    assert differences(a, b) == [".runs[0].findings.levels[1]: 2 != 3"]


def test_fidelity_overhead_quick():
    out = _quick("fidelity_overhead.py")
    for op in ("PutItem", "GetItem", "Query", r"BatchWriteItem\(25\)"):
        m = re.search(rf"^{op}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}%", out, re.M)
        assert m, f"no figures for {op}:\n{out}"
        call, boto, accounting, throttling, share = (float(x.replace(",", "")) for x in m.groups())
        assert call == pytest.approx(boto + accounting + throttling, abs=2)  # the columns add up
        assert boto > 0 and accounting > 0 and throttling > 0
        assert share == pytest.approx(100 * (accounting + throttling) / boto, abs=0.2)


def test_pacing_vs_adaptive_quick():
    out = _quick("pacing_vs_adaptive.py")
    assert "ceiling 42 WCU/s" in out
    for writer in ("harness job engine", "botocore adaptive retries"):
        m = re.search(rf"^{writer}\s+{NUM}%\s+{NUM}%\s+{NUM}%\s+{NUM}$", out, re.M)
        assert m, f"no figures for {writer}:\n{out}"
        used, second_half, throttled, foreground = (float(x) for x in m.groups())
        assert 0 < used < 200 and 0 <= second_half < 200 and 0 <= throttled <= 100 and foreground >= 0


def test_commit_cost_quick():
    """The JSON lines hold the bounds: a fenced DynamoDB commit costs at most 2 ceil(N/25) + 3 requests under
    the lock (its versions, the registry, the seal: what they superseded and its content are deleted after the
    release since issue 43, ``after``), a fenced S3 one at most shards touched + 3, with at most twice the
    unfenced write units."""
    import json

    rows = [json.loads(line) for line in _quick("commit_cost.py", "--json").splitlines() if line.startswith("{")]
    keys = {(r["backend"], r["layout"], r["fencing"], r["entries"], r["models"]) for r in rows}
    assert keys == {(b, lay, f, n, m) for b, lay in (("dynamodb", "per-model"), ("dynamodb", "legacy"),
                                                     ("s3", "sharded"), ("s3", "monolith"))
                    for f in (True, False) for n in (5, 50) for m in (1, 6)}
    by = {(r["backend"], r["layout"], r["fencing"], r["entries"], r["models"]): r for r in rows}
    for r in rows:
        if r["fencing"]:
            assert r["requests"] <= r["bound"], r
            assert r["after"] > 0, r  # what the commits superseded is collected, after the release
            if r["backend"] == "dynamodb":
                unfenced = by[(r["backend"], r["layout"], False, r["entries"], r["models"])]
                assert r["wu_per_entry"] <= 2 * unfenced["wu_per_entry"], (r, unfenced)
    assert by[("s3", "monolith", True, 5, 1)]["requests"] == by[("s3", "monolith", True, 50, 6)]["requests"]
    assert by[("s3", "sharded", True, 50, 6)]["shards"] == 6


def test_store_growth_quick_keeps_a_pruned_store_small():
    """Without the cleanup of superseded versions, tombstones, export chunks and content, a 15 s pruning run
    leaves hundreds of items behind (every iteration writes ~10); pruned, the store holds only the live ones."""
    out = _quick("store_growth.py")
    samples = {b: [int(n) for n in re.findall(rf"^  {b}\s+\d+ s\s+(\d+) (?:items|objects)", out, re.M)]
               for b in ("dynamodb", "s3")}
    for backend, counts in samples.items():
        assert len(counts) >= 3 and max(counts) > 0, out
        assert max(counts) < 150, (backend, counts)



def test_standins_s3_rows_quick():
    """bench/standins.py's S3 rows: both candidates, every request with a ratio, and the 16-thread mix's server CPU."""
    from bench.standins_s3 import REQUESTS

    proc = subprocess.run([sys.executable, "bench/standins.py", "--quick", "--services", "s3", "--sizes", "0,150",
                           "--samples", "4", "--seconds", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, start_new_session=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    out = proc.stdout
    for name in ("moto", "seaweedfs"):
        block = out.split(f"\n{name} ", 1)[1].split("\n\n", 1)[0]
        for req in REQUESTS:  # client p50 and server CPU, each over the two sizes with their ratio
            for label in ("p50 ms", "server CPU ms"):
                # (no ratio when the smallest size's server CPU is 0: under one tick of the process clock)
                m = re.search(rf"{label}\s+{re.escape(req)}\s+{NUM} /\s+{NUM}\s+ratio\s+(?:{NUM}|n/a)", block)
                assert m, (name, req, label, block)
                first, last = float(m.group(1)), float(m.group(2))
                ratio = float(m.group(3)) if m.group(3) else None
                assert (ratio is None) == (first == 0)
                # the figures are printed to 0.01: the ratio (from unrounded figures) can differ by that much
                slack = 0.01 + 0.005 * (1 + last / first) / first if first else 0
                assert first >= 0 and last >= 0 and (first == 0 or ratio == pytest.approx(last / first, abs=slack))
    server = {n: (_num(rf"\n  {n}\s+{NUM} requests/s", out), _num(rf"\n  {n}\s+\d+ requests/s   server CPU {NUM}", out))
              for n in ("moto", "seaweedfs")}
    assert all(rate > 0 and cpu > 0 for rate, cpu in server.values()), server
    share = _num(r"server CPU per request, seaweedfs / moto = " + NUM, out)
    assert share == pytest.approx(server["seaweedfs"][1] / server["moto"][1], abs=0.01)


def test_command_cost_quick_prints_the_drivers_cost_beside_the_commands(tmp_path):
    out = _quick("command_cost.py", "--json", timeout=300, tmp=tmp_path)
    assert not list(tmp_path.glob("command-cost-*"))  # its runs' rows go once read
    fig = json.loads(out.strip().splitlines()[-1])
    assert fig["ok"] == fig["iterations"] == 2 and fig["spans"] > 10
    assert 0 < fig["driver_cpu_ms"] < fig["command_cpu_ms"] and 0 < fig["driver_share_of_cpu"] < 1
    assert 0 < fig["steps_ms"] < fig["command_wall_ms"] and fig["receiver_cpu_per_span_ms"] > 0
    assert "the driver is" in out and "outside every step" in out
def test_runs_history_quick_lists_every_run_and_times_the_command():
    out = _quick("runs_history.py")
    assert re.search(r"runs directories: 30 .* entries listed: 32\b", out), out  # 30 runs, the session's test, a story
    listed = float(re.search(rf"listing in-process: median {NUM} s", out).group(1))
    command = float(re.search(rf"harness runs \(a new process\): median {NUM} s", out).group(1))
    assert 0 < listed < command < 60, out


def test_forecast_quick_prints_each_forecast_beside_what_was_measured():
    out = _quick("forecast.py")
    cases = re.findall(r"forecast (work|flat)\s+" + NUM + r" it/s \[" + NUM + "-" + NUM + r"\] at " + NUM
                       + r" s; measured " + NUM + " it/s; error ([-+][0-9.]+) %", out)
    assert len(cases) == 8, out
    for _basis, point, lo, hi, at, measured, err in cases:
        point, lo, hi, measured = (float(v.replace(",", "")) for v in (point, lo, hi, measured))
        assert lo <= point <= hi and 540 <= float(at) <= 560  # the middle of the 10-minute run's end level
        assert float(err) == pytest.approx((measured - point) / point * 100, abs=1.5)  # printed to 3 digits
    assert [c[0] for c in cases][-2:] == ["flat", "flat"]  # the pruned counts forecast flat
    assert "stays bounded" in out
    assert "the count's growth: knee" in out and "the run's last third" in out  # the count that saturates
    assert "bound from about iteration" in out and "of the table's writes" in out  # a partition's capacity
    assert _num(r"forecasts that missed both ways: " + NUM, out) <= 1


def test_stats_before_after_quick_compares_every_held_verdict_and_the_usl_fit():
    out = _quick("stats_before_after.py")
    cases = re.findall(r"verdicts changed: " + NUM + r"; largest interval change " + NUM + " %", out)
    assert len(cases) == 9, out
    assert all(float(c) == 0 and float(d) < 5 for c, d in cases)  # Byar -> exact moves an interval's end < 5 %
    assert len(re.findall(r"USL λ .* grid against scipy, differ by " + NUM + " % \\(median\\)", out)) == 3
    assert _num(r"seeds whose verdict changed, every case: " + NUM, out) == 0


def test_explore_replayers_quick():
    out = _quick("explore_replayers.py")
    fresh = _num(r"fresh: " + NUM + " schedules", out)
    forked = _num(r"forked: " + NUM + " schedules", out)
    assert fresh == forked >= 10
    fc, kc = _num(r"fresh [0-9.]+ s wall / " + NUM + " s CPU", out), _num(r"forked [0-9.]+ s / " + NUM + " s", out)
    assert _num(r"CPU x" + NUM, out) == pytest.approx(kc / fc, abs=0.05)  # (both printed to 0.1 s)
    assert "the same schedules, findings and steps: yes" in out
