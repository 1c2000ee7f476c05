"""The machine as a resource (harness/metrics/machine.py, the rule in harness/metrics/bound.py), on generated
processes.csv samples, and the sampler that writes processes.csv (harness/record/processes.py) on real child
processes."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import psutil
import pytest

from harness.metrics import bound, machine
from harness.record.processes import ProcessSampler
from harness.report.load import read_processes
from harness.report.run.findings import findings
from tests.support.synthetic import T0, make_rows, run_info


def _samples(seed: int, shares: dict[str, tuple[str, float]], machine_total: float, seconds: int = 600,
             cores: int = 2) -> pd.DataFrame:
    """processes.csv's rows: one per process per second, each at its mean CPU (% of a core) with noise."""
    rng = np.random.default_rng(seed)
    ts = T0 + np.arange(1.0, seconds, 1.0)
    parts = [pd.DataFrame({"ts": ts, "process": name, "role": role, "pid": i + 100,
                           "cpu_percent": np.clip(cpu + rng.normal(0, 3, len(ts)), 0, 100), "cores": cores})
             for i, (name, (role, cpu)) in enumerate(shares.items())]
    parts.append(pd.DataFrame({"ts": ts, "process": "machine", "role": "machine", "pid": 0,
                               "cpu_percent": np.clip(machine_total + rng.normal(0, 3, len(ts)), 0, cores * 100),
                               "cores": cores}))
    df = pd.concat(parts, ignore_index=True)
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    return df


FULL = {"local": ("locust", 88.0), "dynalite": ("stand-in", 86.0), "harness": ("harness", 8.0)}


def _epoch(ts: pd.Series) -> np.ndarray:
    return np.array([x.timestamp() for x in ts])


def _resources(df: pd.DataFrame) -> list[bound.Resource]:
    return machine.resources(_epoch(df["ts"]), df["process"].to_numpy(),
                             df["role"].to_numpy(), df["cpu_percent"].to_numpy(), int(df["cores"].max()))


@pytest.mark.parametrize("seed", range(3))
def test_the_harness_filling_the_cores_binds_the_machine_never_its_own_iteration_time(seed):
    kw = dict(workers=20, duration_s=600.0, rate=lambda t: np.full_like(t, 1.0), steps={"pull_ms": lambda t:
                                                                                       np.full_like(t, 900.0)})
    rows = make_rows(seed=seed, **kw)
    info = run_info(workers=20, duration_s=600.0)
    without = findings(rows, info)["bottleneck"]
    assert without["kind"] == "step" and "its own iteration time" in without["sentence"]  # what it said before
    b = findings(rows, info, processes=_samples(seed, FULL, 190.0))["bottleneck"]
    assert b["kind"] == "machine" and b["utilization"] == pytest.approx(0.91, abs=0.02)
    s = b["sentence"]
    assert "its own iteration time" not in s
    assert s.startswith("The fleet is bound by the machine: 2 cores 91 %") or s.startswith(
        "The fleet is bound by the machine: 2 cores 90 %") or s.startswith("The fleet is bound by the machine: "
                                                                          "2 cores 92 %"), s
    assert "Locust local 88 %" in s and "dynalite 86 %" in s
    assert "every number measures this machine, not the datastore" in s


def test_a_saturated_lock_binds_before_the_machine():
    lock = bound.Resource("lock", "ns/.lock", 0.97)
    res = _resources(_samples(1, FULL, 190.0))
    assert bound.choose([*res, lock]) is lock
    assert bound.choose(res).kind == "machine"


def test_a_stand_in_at_90_percent_of_a_core_binds_by_its_own_cpu():
    res = _resources(_samples(2, {"local": ("locust", 30.0), "dynalite": ("stand-in", 95.0)}, 130.0))
    b = bound.choose(res)
    assert b.kind == "stand-in" and b.name == "dynalite" and b.utilization == pytest.approx(0.95, abs=0.02)
    assert bound.sentence(b, res).startswith("The fleet is bound by the stand-in dynalite at a mean 95 %")
    machine_r = next(r for r in res if r.kind == "machine")
    assert not machine_r.saturated  # 125 % of 200: the machine is not full


def test_other_load_on_the_machine_is_a_note_never_the_bound():
    res = _resources(_samples(3, {"local": ("locust", 40.0), "dynalite": ("stand-in", 20.0)}, 195.0))
    m = next(r for r in res if r.kind == "machine")
    assert m.utilization == pytest.approx(0.30, abs=0.02) and m.evidence["other"] == pytest.approx(0.675, abs=0.03)
    step = bound.Resource("step", "pull", 0.95, evidence={"share": 0.9})
    b = bound.choose([step, *res])
    assert b is step
    s = bound.sentence(b, [step, *res])
    assert "a note: other work on this machine took 6" in s and "it is not the bound" in s


def test_a_saturated_locust_process_is_the_bound_before_the_machine():
    gen = bound.Resource("generator", "local", 0.95, evidence={"samples": 100, "saturated_share": 0.7})
    res = _resources(_samples(4, FULL, 190.0))
    assert bound.choose([*res, gen]) is gen


def test_too_few_samples_make_no_machine_resource():
    df = _samples(5, FULL, 190.0, seconds=3)
    assert _resources(df) == []


def test_the_sampler_names_each_process_the_harness_started(tmp_path):
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time() + 20  # locust\n"
                             "while time.time() < t: pass"])
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        s = ProcessSampler(tmp_path, {"dynalite": server.pid}, interval_s=0.2).start()
        deadline = time.monotonic() + 15
        while s.samples < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        s.stop()
    finally:
        for p in (spin, server):
            p.kill()
            p.wait()
    df = read_processes(tmp_path)
    assert df is not None and s.samples >= 4
    by = df.groupby("process")["role"].first().to_dict()
    # a Locust process with no Locust process under it is a plain run's: "local", as generator.csv names it
    assert by["local"] == "locust" and by["dynalite"] == "stand-in" and by["harness"] == "harness"
    assert by["machine"] == "machine"
    assert set(df["cores"]) == {psutil.cpu_count()}
    assert (df.loc[df["process"] == "local", "pid"] == spin.pid).all()
    assert df.loc[df["process"] == "local", "cpu_percent"].max() > 0  # it spins: some CPU on any machine
    assert df.groupby("ts").size().min() == 4  # every tick: each process and the machine


def test_a_master_and_its_workers_are_named_as_generator_csv_names_them(tmp_path):
    """The sampler sees a master (a Locust process with Locust processes under it) and its workers by pid;
    the report names each worker by the index run.json's ``processes`` gives its pid."""
    child = "import time; time.sleep(20)  # locust worker"
    master = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time  # locust master\n"
                               f"ws = [subprocess.Popen([sys.executable, '-c', {child!r}]) for _ in range(2)]\n"
                               "time.sleep(20)"])
    try:
        s = ProcessSampler(tmp_path, interval_s=0.2)
        deadline = time.monotonic() + 15
        names: dict[str, int] = {}
        while len(names) < 4 and time.monotonic() < deadline:  # the harness, the master, its two workers
            names = {name: p.pid for name, _, p in s.tree()}
            time.sleep(0.1)
        workers = sorted(pid for name, pid in names.items() if name.startswith("worker@"))
        assert names["master"] == master.pid and len(workers) == 2
        assert {n for n in names if n.startswith("worker@")} == {f"worker@{pid}" for pid in workers}
        rows = pd.Series(["master", f"worker@{workers[0]}", f"worker@{workers[1]}", "dynalite", "worker@1"])
        info = {"processes": {"worker-0": {"pid": workers[1]}, "worker-1": {"pid": workers[0]}}}
        from harness.report.load import worker_names

        assert worker_names(rows, info).tolist() == ["master", "worker-1", "worker-0", "dynalite", "worker@1"]
        assert worker_names(rows, {}).tolist() == rows.tolist()
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            for p in psutil.Process(master.pid).children(recursive=True):
                p.kill()
        master.kill()
        master.wait()


@pytest.mark.parametrize("flag", ["--master", "--processes"])
def test_a_master_with_no_worker_under_it_yet_or_ever_is_named_by_its_command_line(tmp_path, flag):
    """Before it forks its workers (``--processes``), or with its workers elsewhere (``--master``), a master
    has no Locust process under it: still "master", as generator.csv names it, never "local"."""
    master = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)  # locust", flag, "2"])
    try:
        s = ProcessSampler(tmp_path, interval_s=0.2)
        deadline = time.monotonic() + 15
        names: dict[str, int] = {}
        while "master" not in names and time.monotonic() < deadline:
            names = {name: p.pid for name, _, p in s.tree()}
            time.sleep(0.1)
        assert names.get("master") == master.pid and "local" not in names, names
    finally:
        master.kill()
        master.wait()


def test_the_report_names_workers_from_run_json_and_the_machine_sentence_says_locust_worker(tmp_path):
    """processes.csv as the sampler writes it, run.json's ``processes`` as the master records it: the report's
    rows and its machine sentence name each worker as generator.csv does."""
    shares = {"master": ("locust", 20.0), "worker@4242": ("locust", 85.0), "worker@4343": ("locust", 84.0),
              "dynalite": ("stand-in", 4.0)}
    _samples(8, shares, 195.0, seconds=30).assign(ts=lambda d: _epoch(d["ts"])).to_csv(tmp_path / "processes.csv",
                                                                                       index=False)
    info = {"processes": {"worker-0": {"pid": 4343, "rows": 10}, "worker-1": {"pid": 4242, "rows": 9}}}
    df = read_processes(tmp_path, info)
    assert set(df["process"]) == {"master", "worker-0", "worker-1", "dynalite", "machine"}
    res = _resources(df)
    s = bound.sentence(bound.choose(res), res)
    assert "Locust worker-1 8" in s and "Locust worker-0 8" in s and "worker@" not in s, s


def test_the_harness_tab_names_the_machine_from_the_same_samples_as_the_report(tmp_path):
    from harness.load.web.live import Live
    from harness.record.processes import ProcessesTail

    df = _samples(6, FULL, 190.0, seconds=40)
    writer = ProcessSampler(tmp_path)
    tail = ProcessesTail(tmp_path)
    live = Live()
    t = _epoch(df["ts"])
    for i, ts in enumerate(sorted(set(t))):
        tick = df[t == ts]
        writer.write(ts, [(r.process, r.role, int(r.pid), float(r.cpu_percent)) for r in tick.itertuples()])
        if i % 10 == 9:  # the tab reads every few seconds, whole lines only
            live.add_processes(tail.read())
    live.add_processes(tail.read())
    assert len(live.processes) == len(df)
    report = bound.choose(_resources(read_processes(tmp_path)))
    tab = bound.choose(live.resources(T0, T0 + 40.0, T0 + 40.0))
    assert report.kind == tab.kind == "machine"
    assert tab.utilization == pytest.approx(report.utilization, abs=1e-3)


def test_a_web_sessions_test_reads_its_sessions_processes_csv(tmp_path):
    session = tmp_path / "session"
    test_dir = session / "tests" / "001"
    test_dir.mkdir(parents=True)
    _samples(7, FULL, 190.0, seconds=10).assign(ts=lambda d: _epoch(d["ts"])).to_csv(session / "processes.csv",
                                                                                     index=False)
    df = read_processes(test_dir)
    assert df is not None and set(df["process"]) == {"local", "dynalite", "harness", "machine"}
    assert read_processes(tmp_path / "elsewhere") is None


def test_a_locust_process_pegged_in_much_of_its_samples_binds_though_its_mean_is_under_90():
    """One gevent loop never holds a mean of 90 %: at 85 % [76-94] with 47 % of its samples at >= 90 % it binds
    (the 100-worker disposable fleet ran 40 it/s in one process, 57 in two); at 20 % pegged it does not."""
    step = bound.Resource("step", "delete", 0.99, candidate=False)
    pegged = bound.Resource("generator", "local", 0.85, (0.76, 0.94), {"samples": 19, "saturated_share": 0.47})
    assert pegged.saturated and bound.choose([step, pegged]) is pegged
    assert "bound by the load generator" in bound.sentence(pegged, [step, pegged])
    calm = bound.Resource("generator", "local", 0.85, (0.76, 0.94), {"samples": 19, "saturated_share": 0.2})
    low = bound.Resource("generator", "local", 0.7, (0.6, 0.8), {"samples": 19, "saturated_share": 0.45})
    master = bound.Resource("generator", "master", 0.85, (0.76, 0.94), {"samples": 19, "saturated_share": 0.5},
                            candidate=False)
    assert not (calm.saturated or low.saturated or master.saturated)


def test_the_harness_tab_names_a_worker_by_its_index_once_known_even_for_rows_that_came_before(tmp_path):
    """A worker's pid reaches the master with its first batch, after the sampler's first rows of it: the tab
    names those rows by the index known when it draws, so one worker is never two shares."""
    from harness.load.web.live import Live
    from harness.record.processes import ProcessesTail

    shares = {"master": ("locust", 20.0), "worker@4242": ("locust", 88.0), "dynalite": ("stand-in", 84.0)}
    df = _samples(9, shares, 195.0, seconds=30)
    writer, tail, live = ProcessSampler(tmp_path), ProcessesTail(tmp_path), Live()
    for ts in sorted(set(_epoch(df["ts"]))):
        tick = df[_epoch(df["ts"]) == ts]
        writer.write(ts, [(r.process, r.role, int(r.pid), float(r.cpu_percent)) for r in tick.itertuples()])
    live.add_processes(tail.read())  # before the worker's first batch: its pid is not known yet
    live.worker_names = {"worker@4242": "worker-0"}  # the session's refresh, once the batch came
    res = live.resources(T0, T0 + 30.0, T0 + 30.0)
    s = bound.sentence(bound.choose(res), res)
    assert "Locust worker-0 8" in s and "worker@" not in s, s
