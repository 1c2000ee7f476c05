"""The pieces of failing loudly, one at a time: the classifier, the backoff (on a FakeClock), a part's record and
line, what the supervisor watches, the disk estimate, shards whole or absent, the dead_endpoint check, the bound
that never names a spinning generator, failed_parts in run.json. The real runs are tests/e2e/test_fail_loud_e2e.py.
"""

from __future__ import annotations

import errno
import json
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
    SSLError,
)

from harness.aws.standin.dynalite import missing_runtime as dynalite_missing
from harness.core import aws_errors
from harness.core.clock import FakeClock
from harness.core.errors import HarnessError
from harness.load.backoff import CAP_S, ConnectionBackoff
from harness.load.drivers.model import classify
from harness.metrics import bound
from harness.metrics.bound import Resource
from harness.record import runinfo
from harness.record.parts import PartFailure, ended, failure, merge, telling
from harness.record.writer import ShardWriter
from harness.report.run.checks import results
from harness.report.run.dead_endpoint import dead_endpoint
from harness.supervisor import disk, failed_parts
from harness.supervisor.watch import FreeSpace, Parts, Reserve, SamplerThread, ServerProcess
from tests.support.plans import make_plan

# ---- the classifier --------------------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_refused_connection_classifies_as_connection():
    import boto3
    from botocore.config import Config

    c = boto3.client("dynamodb", endpoint_url=f"http://127.0.0.1:{_closed_port()}", region_name="us-east-1",
                     aws_access_key_id="x", aws_secret_access_key="y",
                     config=Config(retries={"total_max_attempts": 1}, connect_timeout=2))
    with pytest.raises(Exception) as got:
        c.list_tables()
    assert aws_errors.kind(got.value) == "connection" and classify(got.value) == "connection"


@pytest.mark.parametrize("exc,kind", [
    (EndpointConnectionError(endpoint_url="http://x"), "connection"),  # refused, and DNS
    (ConnectionClosedError(endpoint_url="http://x"), "connection"),  # reset mid-request
    (SSLError(endpoint_url="http://x", error="bad cert"), "connection"),
    (ConnectionResetError(), "connection"),
    (socket.gaierror(), "connection"),
    (ConnectTimeoutError(endpoint_url="http://x"), "timeout"),  # a slow host is not a dead one
    (ReadTimeoutError(endpoint_url="http://x"), "timeout"),
    (ClientError({"Error": {"Code": "ThrottlingException"}}, "Query"), "throttled"),
    (ValueError("x"), "other"),
])
def test_connection_failures_are_one_kind(exc, kind):
    assert aws_errors.kind(exc) == kind
    assert classify(exc) == kind


def test_a_connection_failure_wrapped_by_the_datastore_is_still_one():
    try:
        try:
            raise EndpointConnectionError(endpoint_url="http://x")
        except EndpointConnectionError as e:
            raise RuntimeError("the lock could not be read") from e
    except RuntimeError as wrapped:
        assert aws_errors.is_connection_failure(wrapped) and classify(wrapped) == "connection"


# ---- the backoff ------------------------------------------------------------------------------------------------


def test_the_backoff_is_bounded_exponential_jittered_and_reset_by_any_other_outcome():
    clock = FakeClock()
    b = ConnectionBackoff(clock, random.Random(7))
    slept = [b.pause("connection") for _ in range(8)]
    ceilings = [min(CAP_S, 0.25 * 2 ** i) for i in range(8)]
    assert all(c / 2 <= s <= c for s, c in zip(slept, ceilings, strict=True)), slept
    assert max(slept) <= CAP_S and slept[5] > slept[0] * 4  # it grows, and stops growing at the cap
    assert clock.now() - 1_700_000_000.0 == pytest.approx(sum(slept))  # the sleeps went to the clock
    assert b.pause("") == 0 and b.streak == 0  # a success resets
    assert b.pause("lock_timeout") == 0 and b.pause("throttled") == 0  # other failures do not back off here
    assert b.pause("connection") <= 0.25
    other = ConnectionBackoff(FakeClock(), random.Random(8))
    assert [other.pause("connection") for _ in range(8)] != slept  # jittered: two workers do not retry in step


def test_a_dead_endpoint_costs_a_few_rows_a_second_not_hundreds():
    """A worker whose every iteration fails at once: over a minute of the fake clock, how many iterations."""
    clock = FakeClock()
    b = ConnectionBackoff(clock, random.Random(1))
    start, n = clock.now(), 0
    while clock.now() - start < 60:
        clock.advance(0.002)  # an iteration that fails at once
        b.pause("connection")
        n += 1
    assert 12 <= n <= 25, n  # ~0.3 a second a worker, where it spun at ~100 a second


# ---- a part's record and its line -------------------------------------------------------------------------------


def test_a_parts_line_says_what_when_and_how():
    t0 = 1000.0
    f = PartFailure("stand-in", "dynalite", 1019.4, pid=7, status=1,
                    detail="IO error: /r/dynalite-db/000005.log: No space left on device")
    assert f.line(t0) == ("the embedded stand-in dynalite exited at 19 s (status 1: IO error: "
                          "/r/dynalite-db/000005.log: No space left on device); the test was stopped")
    killed = PartFailure("locust", "local", 1015.0, signal="SIGKILL")
    assert killed.line(t0) == ("the Locust process (local) exited at 15 s (killed by SIGKILL); the run did not "
                               "complete (rows up to its last flush are kept)")
    assert PartFailure("locust-worker", "worker-1", 1009.0, signal="SIGKILL").line(t0).startswith(
        "the Locust worker process worker-1 exited at 9 s (killed by SIGKILL)")
    assert PartFailure("disk", "/r", 1007.0, detail="No space left on device: 0 B free of 6 MiB").line(t0) == (
        "the run directory's filesystem (/r) filled at 7 s (No space left on device: 0 B free of 6 MiB); the test "
        "was stopped")
    assert PartFailure.from_dict(f.as_dict(t0)) == f and f.as_dict(t0)["at_s"] == 19.4
    assert ended(-9) == (None, "SIGKILL") and ended(1) == (1, None)


def test_the_telling_line_of_a_log_is_its_last_error():
    tail = ("Listening at 127.0.0.1:4567", "IO error: 000005.log: No space left on device", "closing")
    assert telling(tail) == "IO error: 000005.log: No space left on device"
    assert telling(("started", "serving")) == "serving" and telling(("started",), last=False) == ""


def test_merge_keeps_each_part_once_first_died_first():
    a = PartFailure("probe", "probe", 5.0, pid=1).as_dict()
    b = PartFailure("stand-in", "dynalite", 3.0, pid=2).as_dict()
    assert [d["name"] for d in merge([a], [b, a])] == ["dynalite", "probe"]


# ---- what the supervisor watches ---------------------------------------------------------------------------------


def test_a_server_that_dies_is_one_failure_with_its_status_and_its_log(tmp_path):
    log = tmp_path / "server.log"
    script = "import sys; print('ready'); print('IO error: x.log: No space left on device', file=sys.stderr); " \
             "sys.exit(1)"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=out)
        proc.wait(10)
    f = ServerProcess("dynalite", proc, str(log)).check()
    assert (f.part, f.name, f.status, f.signal, f.pid) == ("stand-in", "dynalite", 1, None, proc.pid)
    assert f.detail == "IO error: x.log: No space left on device" and f.log_tail[-1] == f.detail
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        w = ServerProcess("weed", alive, None)
        assert w.check() is None
        alive.send_signal(signal.SIGKILL)
        alive.wait(10)
        assert w.check().signal == "SIGKILL"
    finally:
        if alive.poll() is None:
            alive.kill()


@pytest.mark.skipif(dynalite_missing() is not None, reason=f"{dynalite_missing()}")
def test_a_client_that_goes_away_mid_request_does_not_end_dynalite(tmp_path):
    """A killed Locust worker resets its connections: dynalite threw the request's error and exited (status 1, "at
    abortIncoming"), ending the run for every other worker; it now logs it and serves on."""
    import struct

    import boto3
    from botocore.config import Config

    from harness.aws.standin.dynalite import EmbeddedDynalite

    server = EmbeddedDynalite(s3_moto=False, in_memory=True, log_path=str(tmp_path / "dynalite.log")).start()
    try:
        host, port = server.dynamodb_url.split("//")[1].split(":")
        s = socket.create_connection((host, int(port)))
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"Li")  # half a request
        time.sleep(0.3)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, as a killed process's sockets
        time.sleep(0.5)
        assert server.proc.poll() is None, (tmp_path / "dynalite.log").read_text()
        c = boto3.client("dynamodb", endpoint_url=server.dynamodb_url, region_name="us-east-1",
                         aws_access_key_id="x", aws_secret_access_key="y", config=Config(retries={"max_attempts": 0}))
        assert c.list_tables()["TableNames"] == []  # the others are still served
        assert "went away mid-request" in (tmp_path / "dynalite.log").read_text()
    finally:
        server.stop()


def test_the_disk_and_the_sampler_are_watched_and_the_reserve_is_given_back(tmp_path):
    assert FreeSpace(tmp_path, floor=0).check() is None
    full = FreeSpace(tmp_path, floor=1 << 60).check()  # more than any disk: full
    assert full.part == "disk" and full.detail.startswith("No space left on device: ")
    reserve = Reserve(tmp_path, size=1 << 18).take()
    assert reserve.path.stat().st_size == 1 << 18
    parts = Parts(tmp_path, [FreeSpace(tmp_path, floor=1 << 60)], reserve)
    assert parts.check().part == "disk" and not reserve.path.exists()  # given back at the stop
    assert parts.check() is None  # once
    sampler = type("S", (), {"error": OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "p.csv"))})()
    f = SamplerThread(sampler).check()
    assert f.part == "sampler" and f.detail == "No space left on device writing p.csv"


def test_a_part_the_locust_process_recorded_is_read_from_the_tests_run_json(tmp_path):
    parts = Parts(tmp_path)
    probe = PartFailure("probe", "probe", 10.0, pid=3, signal="SIGKILL").as_dict(5.0)
    assert parts.check([{"status": "running"}]) is None
    got = parts.check([{"status": "running", "failed_parts": [probe]}])
    assert got.part == "probe" and parts.check([{"failed_parts": [probe]}]) is None  # once
    assert parts.locust_exited(9, 0, False, "local") is None  # the end of the run
    assert parts.locust_exited(9, -9, False, "local").signal == "SIGKILL"
    assert parts.locust_exited(9, 0, True, "master").part == "locust"  # exited while a test was recorded


def test_the_locust_process_reads_a_forked_workers_status_without_taking_it():
    """gevent reaps the workers Locust forks; the master reads their status where gevent keeps it, and Locust's
    own waitpid at exit still gets it."""
    script = textwrap.dedent("""
        from gevent import monkey; monkey.patch_all()
        import os, time, gevent
        from harness.load.children import _reaped
        from harness.record.parts import from_wait_status
        pid = gevent.fork()
        if pid == 0:  # a worker lives a while (one that ends at once can end before gevent watches it)
            time.sleep(0.5)
            os._exit(3)
        for _ in range(100):
            gevent.sleep(0.05)
            if pid in _reaped():
                break
        print(from_wait_status(_reaped()[pid]), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "(3, None) 3", p.stdout + p.stderr


def test_failed_parts_go_into_run_json_with_the_workers_name(tmp_path):
    started = "2026-01-01T00:00:00+00:00"
    t0 = pd.Timestamp(started).timestamp()
    runinfo.write(tmp_path, {"status": "finished", "started_at": started, "stop_reason": "SIGINT",
                             "processes": {"worker-1": {"pid": 42}}, "incomplete": [{"process": "worker-1"}],
                             "scenario": {"checks": {}}})
    out = failed_parts.record(tmp_path, [PartFailure("locust-worker", "worker@42", t0 + 9, pid=42,
                                                     signal="SIGKILL")], stopped_by_us=True)
    info = runinfo.read(tmp_path)
    assert [d["name"] for d in out] == ["worker-1"] and info["failed_parts"] == out
    assert info["stop_reason"] == ("the Locust worker process worker-1 exited at 9 s (killed by SIGKILL); the test "
                                   "was stopped")


@pytest.mark.parametrize("allowed", [False, True])
def test_a_worker_lost_under_a_master_fails_the_run_unless_the_scenario_allows_it(tmp_path, allowed):
    runinfo.write(tmp_path, {"status": "finished", "started_at": "2026-01-01T00:00:00+00:00",
                             "incomplete": [{"process": "worker-0", "reason": "the process stopped answering"}],
                             "scenario": {"checks": {"allow_lost_workers": allowed}}})
    out = failed_parts.record(tmp_path, [], stopped_by_us=False)
    if allowed:
        assert out == [] and "failed_parts" not in runinfo.read(tmp_path)
    else:
        assert out[0]["line"] == ("the Locust worker process worker-0 was lost before its final report (the process "
                                  "stopped answering); the run did not complete")


def test_the_scenario_keys_are_read_and_checked(tmp_path):
    from harness.config import scenario as scenarios

    base = Path("harness/config/scenarios/namespaced.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(base.replace("[lock]", "[checks]\ndead_endpoint = false\nallow_lost_workers = true\n\n[lock]"))
    checks = scenarios.load(str(path)).checks
    assert (checks.dead_endpoint, checks.allow_lost_workers) == (False, True)
    assert scenarios.load("namespaced").checks.dead_endpoint is True
    path.write_text(base.replace("[lock]", "[checks]\nallow_lost_workers = \"yes\"\n\n[lock]"))
    with pytest.raises(HarnessError, match="allow_lost_workers"):
        scenarios.load(str(path))


# ---- the disk ---------------------------------------------------------------------------------------------------


def test_the_disk_estimate_follows_the_plan():
    e = disk.estimate(make_plan("namespaced", duration_s=60))
    assert e.iterations == 4 * 60 * 10  # 4 workers, 10 it/s each at most
    assert e.stand_in == e.iterations * disk.STAND_IN_BYTES["dynalite"] and e.total > e.stand_in + e.rows
    memory = disk.estimate(make_plan("namespaced", duration_s=60, stand_in="moto"))
    assert memory.stand_in == 0 and memory.total < e.total / 5
    external = disk.estimate(make_plan("namespaced", duration_s=60, endpoints={"AWS_ENDPOINT_URL": "http://h:1"}))
    assert external.stand_in == 0
    assert disk.estimate(make_plan("namespaced", duration_s=10, workers=1)).iterations == 100
    opened = disk.estimate(make_plan("namespaced", duration_s=60, rate_per_s=2.0))
    assert opened.iterations == 120  # an open fleet: its arrivals


def test_a_run_that_cannot_fit_is_one_line(tmp_path, monkeypatch):
    plan = make_plan("namespaced", duration_s=60)
    usage = type("U", (), {"free": 5 << 20, "total": 6 << 20, "used": 1 << 20})
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda p: usage)
    with pytest.raises(HarnessError) as got:
        disk.refuse_if_short(plan, tmp_path)
    assert str(got.value).startswith(f"the run directory {tmp_path} has 5 MiB free and this run would write about ")
    assert "dynalite's data" in str(got.value) and "\n" not in str(got.value)
    usage.free = 1 << 40
    assert disk.refuse_if_short(plan, tmp_path).total < 1 << 40


def test_a_shard_is_whole_or_absent_and_a_failed_write_keeps_its_rows(tmp_path, monkeypatch):
    w = ShardWriter(tmp_path, flush_every_s=0.0)
    real = ShardWriter._write

    def full_disk(self, records, path):  # half a file, then the disk is full
        path.write_bytes(b"PAR1 half")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    row = {"ts_start": time.time(), "ts_end": time.time(), "worker": "local", "user": "u", "ok": True}
    monkeypatch.setattr(ShardWriter, "_write", full_disk)
    w.add([row])  # the add's own flush fails: logged, kept
    assert w.error is not None and w.written == 0
    with pytest.raises(OSError):
        w.flush()
    assert list((tmp_path / "iterations").iterdir()) == []  # no half file, no temporary left
    monkeypatch.setattr(ShardWriter, "_write", real)
    w.add([row])
    assert w.written == 2 and w.error is None
    (shard,) = (tmp_path / "iterations").glob("*.parquet")
    assert len(pd.read_parquet(shard)) == 2


# ---- what a dead endpoint does to the checks and the bound ------------------------------------------------------


def _rows(kinds: list[str], every_s: float = 1.0) -> pd.DataFrame:
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    ts = [t0 + pd.Timedelta(seconds=i * every_s) for i in range(len(kinds))]
    return pd.DataFrame({"ts_start": ts, "ts_end": ts, "user": "u", "ok": [k == "" for k in kinds],
                         "error_kind": kinds, "total_ms": 1.0, "wait_ms": 1.0})


def test_a_last_window_of_only_connection_failures_fails_the_run():
    dead = _rows([""] * 20 + ["connection"] * 12)
    (got,) = [r for r in results(dead, {"window_s": 30.0}) if r.name == "dead_endpoint"]
    assert not got.passed and got.line.startswith(
        "dead_endpoint: every one of the 11 iterations in the last 10s failed to connect")
    assert dead_endpoint(dead, {"dead_endpoint": False}) is None  # a scenario can turn it off
    assert dead_endpoint(_rows([""] * 20 + ["connection"] * 11 + [""]), {}) is None  # it answered again
    assert dead_endpoint(_rows([""] * 20 + ["lock_timeout"] * 12), {}) is None  # failing, but reachable
    assert dead_endpoint(_rows([""] * 25 + ["connection"] * 5), {"window_s": 4.0}) is not None  # a shorter window


def test_the_bound_never_names_a_generator_spinning_on_connection_failures():
    gen = Resource("generator", "local", 0.97, (0.93, 1.0), {"samples": 30, "saturated_share": 0.9})
    machine = Resource("machine", "", 0.95, None, {"cores": 2})
    step = Resource("step", "push", 0.4, None, {"share": 0.5})
    assert bound.choose([step, gen, machine]) is gen  # a generator really pegged is the bound
    spun = bound.spinning([step, gen, machine], 0.98)
    chosen = bound.choose(spun)
    assert chosen is None or chosen.kind not in ("generator", "machine")
    words = bound.sentence(chosen, spun)
    assert "load generator" not in words and "machine" not in words.split("busiest")[0]
    assert bound.spinning([gen], 0.2) == [gen]  # a few failures change nothing
    assert "spinning on connection failures: 98 %" in bound.describe(spun[1])


def test_the_harness_tab_discounts_a_spinning_generator_too():
    from harness.load.web.live import Live

    live = Live(10.0)
    now = 1_700_000_100.0
    live.add([{"ts_start": now - 9 + i * 0.01, "ts_end": now - 9 + i * 0.01 + 0.001, "ok": False, "user": "u",
               "error_kind": "connection", "total_ms": 1.0} for i in range(800)])
    live.generator = [(now - 9 + i, "local", 99.0) for i in range(9)]
    res = live.resources(now - 10, now, now)
    gen = next(r for r in res if r.kind == "generator")
    assert not gen.candidate and gen.evidence["spinning"] == 1.0
    assert (bound.choose(res) or Resource("step", "", 0, None)).kind != "generator"


def test_a_report_built_from_a_dead_parts_leftovers_says_so_first():
    """The outcome's first line (the report's first screen leads with it, harness/record/outcome.py), said once."""
    from harness.record.outcome import completion
    from harness.report.run.words import other_sentences

    line = PartFailure("stand-in", "dynalite", 19.0, signal="SIGKILL").line(0.0)
    failed = [{"part": "stand-in", "name": "dynalite", "at_s": 19.0, "line": line}]
    assert completion({"status": "finished", "failed_parts": failed}).line == (
        f"The run did not complete: {line}. This report is built from what was recorded before; its checks are "
        "not evaluated.")
    f = {"failed_parts": failed, "rows": 56, "incomplete": [], "span": {"note": ""}, "checks": []}
    assert not any("did not complete" in s for s in other_sentences(f))
    assert completion({"status": "finished"}).state == "completed"


def test_run_json_failed_parts_is_json():
    f = failure("probe", "probe", 12.0, pid=3, returncode=-9)
    assert json.loads(json.dumps(f.as_dict(2.0)))["line"].startswith("the stand-in probe exited at 10 s (killed by")
