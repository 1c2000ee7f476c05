"""Injected stop-the-world pauses: configured in the scenario, wired into the datastore, heartbeat frozen too."""

from __future__ import annotations

import threading

import pytest

from harness.config import scenario
from harness.core.errors import HarnessError
from harness.core.work import Work
from harness.datastore.lock import Heartbeat, Lock, LockConfig
from harness.load.drivers.model import SwampWorker
from tests.conftest import make_backend, make_store
from tests.unit.safety.test_safety_regressions import SteppedClock


def test_heartbeat_tick_renews_when_due_and_not_while_suspended(aws, clock):
    be = make_backend("per-model", aws, clock=clock)
    lock = Lock(be.lock_store, "k", clock, LockConfig(ttl_s=3, wait_s=1, retry_s=0.1))
    grant = lock.acquire(Work())
    work = Work()
    beat = Heartbeat(lock, grant, work)
    assert beat.tick() and work.requests["UpdateItem"] == 0  # not due yet
    clock.advance(1.0)
    assert beat.tick() and work.requests["UpdateItem"] == 1
    with beat.suspended():
        clock.advance(5.0)  # due five times over, and past the TTL
        assert beat.tick() and work.requests["UpdateItem"] == 1
    assert beat.tick() and work.requests["UpdateItem"] == 2  # resumed: renews at once (nobody took it)
    assert not grant.lost


def test_a_pause_between_push_and_commit_freezes_the_heartbeat(aws):
    """The holder freezes for longer than its TTL; its heartbeat renews nothing meanwhile (a frozen process
    does not renew either), so another worker could take the lock."""
    clock = SteppedClock()
    be = make_backend("per-model", aws, clock=clock)
    events: list[dict] = []
    store = make_store(be, "w1", clock=clock, heartbeat=True, lock=LockConfig(ttl_s=3, wait_s=1, retry_s=0.1))
    store.record = events.append
    store.pauses = lambda point: 5.0 if point == "commit" else 0.0
    steps: list = []
    errors: list = []

    def sync() -> None:
        try:
            store.sync_run("m", "get_uptime", 100, steps)
        except Exception as e:  # noqa: BLE001 - re-raised in the test thread
            errors.append(e)

    t = threading.Thread(target=sync)
    t.start()
    try:
        with clock.cv:  # both the paused holder and its heartbeat are asleep on the clock
            assert clock.cv.wait_for(lambda: sum(w > clock.now() for w in clock.wakes.values()) == 2, 10)
        start = clock.now()
        for _ in range(19):  # 4.75 s of the 5 s pause
            clock.advance(0.25)
            assert clock.idle()
        renewals_during = [e for e in events if e["type"] == "renew" and e["invoke_ms"] > start * 1000]
        assert renewals_during == []
        clock.advance(0.5)  # the pause ends: the sync commits and releases
        t.join(10)
    finally:
        clock.advance(60)
    assert not errors and not t.is_alive()
    pause = next(e for e in events if e["type"] == "pause")
    assert pause["end_ms"] - pause["start_ms"] >= 5000 and pause["point"] == "commit"
    assert [e["type"] for e in events if e["type"] in ("grant", "pause", "commit", "release")] == [
        "grant", "pause", "commit", "release"]


def test_pauses_come_from_the_scenario_with_their_probability(aws, clock):
    be = make_backend("per-model", aws, clock=clock)
    always = scenario.parse({"fidelity": {"pauses": {"probability": 1.0, "duration": "2s"}}}, "x.toml")
    lw = SwampWorker(always, be, process="local", user="w0", clock=clock, rng_seed=1)
    assert lw.store.pauses("commit") == 2.0 and lw.store.pauses("elsewhere") == 0.0
    never = SwampWorker(scenario.parse({}, "x.toml"), be, process="local", user="w1", clock=clock, rng_seed=1)
    assert never.store.pauses is None
    some = SwampWorker(scenario.parse({"fidelity": {"pauses": {"probability": 0.25, "duration": "1s"}}}, "x.toml"),
                       be, process="local", user="w2", clock=clock, rng_seed=7)
    share = sum(some.store.pauses("commit") > 0 for _ in range(4000)) / 4000
    assert share == pytest.approx(0.25, abs=0.03)


def test_iteration_outcome_carries_the_history(aws, clock):
    sc = scenario.parse({"datastore": {"fencing": False}, "workload": {"shared_models": True,
                                                                       "models_per_worker": 2}}, "x.toml")
    lw = SwampWorker(sc, make_backend("per-model", aws, clock=clock, variant=sc.datastore.variant), process="worker-3",
                     user="w3-0", clock=clock, rng_seed=1)
    from dataclasses import replace

    lw.store.cfg = replace(lw.store.cfg, heartbeat=False)
    out = lw.run_once()
    assert out.row["ok"] and out.row["model_id"] == "shared-m0"
    assert [e["type"] for e in out.events] == ["grant", "commit", "release"]
    assert {(e["worker"], e["user"], e["iteration"]) for e in out.events} == {("worker-3", "w3-0", 0)}
    commit = out.events[1]
    assert commit["ok"] and commit["fencing"] is False and len(commit["writes"]) == 5 and commit["seq"] == 1
    assert lw.run_once().events[0]["iteration"] == 1 and lw.events == []


def test_a_worker_refuses_a_backend_built_for_the_other_system(aws, clock):
    """Fenced or swamp's is the backend's (chosen once when it is built): a scenario that says otherwise is told,
    not silently run as the backend's system."""
    from harness.core.errors import HarnessError

    sc = scenario.parse({"datastore": {"fencing": False}}, "x.toml")
    with pytest.raises(HarnessError, match=r"another system \(fencing = true.*than the scenario's \(fencing = false"):
        SwampWorker(sc, make_backend("per-model", aws, clock=clock), process="local", user="w0", clock=clock)


@pytest.mark.parametrize("table,message", [
    ({"fidelity": {"pauses": {"probability": 1.5, "duration": "1s"}}}, "probability must be between 0 and 1"),
    ({"fidelity": {"pauses": {"probability": 0.5}}}, "duration must be positive"),
    ({"fidelity": {"pauses": {"probability": 0.5, "duration": "1s", "jitter": 1}}}, "jitter is not a known key"),
    ({"datastore": {"fencing": "yes"}}, "datastore.fencing must be true or false"),
    ({"checks": {"safety": 1}}, "checks.safety must be true or false"),
    ({"workload": {"shared_models": "no"}}, "workload.shared_models must be true or false"),
    ({"datastore": {"lock_scope": "model"}}, 'lock_scope "model" is not supported'),
    ({"datastore": {"namespaces": "shared", "lock_scope": "datastore", "workers_per_namespace": 3}},
     'workers_per_namespace needs namespaces = "per-worker"'),
    ({"datastore": {"workers_per_namespace": 0}}, "workers_per_namespace must be at least 1"),
])
def test_bad_safety_knobs_are_one_line_errors(table, message):
    with pytest.raises(HarnessError) as err:
        scenario.parse(table, "x.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_shipped_scenario_spells_fencing_out():
    text = (scenario.resolve("lock-safety")).read_text()
    assert "\nfencing = true" in text
    sc = scenario.load("lock-safety")
    assert sc.datastore.fencing and sc.checks.safety and sc.workload.shared_models
    assert sc.fidelity.pauses.duration_s > sc.lock.ttl_s > 0 and 0 < sc.fidelity.pauses.probability < 1
    ds = sc.datastore  # contended namespace locks, several side by side
    assert ds.lock_scope == "namespace" and ds.namespaces == "per-worker" and ds.workers_per_namespace >= 2
    assert sc.fleet.workers >= 2 * ds.workers_per_namespace


def test_workers_share_a_namespace_and_its_lock_in_groups(aws, clock):
    """``workers_per_namespace = 3``: users 0-2 of a process contend for one namespace lock, 3-5 for the next."""
    from harness.jobs.bulk import preage_namespaces

    sc = scenario.parse({"datastore": {"lock_scope": "namespace", "workers_per_namespace": 3}}, "x.toml")
    ds = sc.datastore
    assert [ds.namespace_of(0, n) for n in range(7)] == ["w0-ns0"] * 3 + ["w0-ns1"] * 3 + ["w0-ns2"]
    assert ds.namespace_of(1, 0) == "w1-ns0"  # another process's users never share with this one's
    assert preage_namespaces(sc, workers=6) == ["w0-ns0", "w0-ns1"]
    assert preage_namespaces(sc, workers=12, processes=2) == ["w0-ns0", "w0-ns1", "w1-ns0", "w1-ns1"]
    be = make_backend("per-model", aws, clock=clock)
    keys = [SwampWorker(sc, be, process="local", user=f"w0-{n}", clock=clock, rng_seed=n,
                        namespace=ds.namespace_of(0, n)).store.lock_key() for n in range(4)]
    assert keys == [".locks/w0-ns0.lock"] * 3 + [".locks/w0-ns1.lock"]
    one = scenario.parse({}, "x.toml").datastore  # the default: each worker its own namespace, named after it
    assert [one.namespace_of(0, n) for n in range(2)] == ["w0-0", "w0-1"]
    assert preage_namespaces(scenario.parse({}, "x.toml"), workers=2) == ["w0-0", "w0-1"]


LOCUST_DISPATCH = """
import json, sys
from locust import User, task
from locust.dispatch import UsersDispatcher
from locust.runners import WorkerNode

class SwampWorkerUser(User):
    @task
    def iterate(self): pass

out = {}
for processes in range(1, 5):
    for workers in range(1, 31):
        nodes = [WorkerNode(f"host_{i:032x}") for i in range(processes)]
        d = UsersDispatcher(worker_nodes=nodes, user_classes=[SwampWorkerUser])
        d.new_dispatch(target_user_count=workers, spawn_rate=workers)
        d._wait_between_dispatch = 0
        *_, final = d
        out[f"{workers},{processes}"] = [sum(u.values()) for u in final.values()]
json.dump(out, sys.stdout)
"""


def test_uneven_groups_agrees_with_how_locust_hands_out_users():
    """Locust's own dispatcher (in a process of its own: importing Locust monkey-patches this one)."""
    import json
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", LOCUST_DISPATCH], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for n in (2, 3):
        ds = scenario.parse({"datastore": {"workers_per_namespace": n}}, "x.toml").datastore
        for key, per_process in json.loads(p.stdout).items():
            workers, processes = map(int, key.split(","))
            assert sum(per_process) == workers
            short = sorted({c % n for c in per_process if c % n})
            note = ds.uneven_groups(workers, processes)
            assert (note is None) == (not short), (n, key, per_process, note)
            if short:
                assert f"with {' or '.join(map(str, short))} worker(s) instead" in note


@pytest.mark.parametrize(("workers", "processes", "short"), [
    (24, 2, None), (24, 0, None), (12, 2, None), (9, 3, None), (6, 2, None),  # whole groups of 3 in each process
    (24, 5, "1 or 2"), (6, 4, "1 or 2"), (4, 0, "1"), (8, 2, "1"), (7, 1, "1")])
def test_groups_that_cannot_be_full_are_named(workers, processes, short):
    """A namespace short of workers_per_namespace (a group of one never contends) is named before the run."""
    ds = scenario.parse({"datastore": {"workers_per_namespace": 3}}, "x.toml").datastore
    note = ds.uneven_groups(workers, processes)
    assert (note is None) == (short is None)
    if short:
        assert f"leave namespaces with {short} worker(s) instead of workers_per_namespace = 3" in note


def test_the_warning_follows_the_run_options():
    from harness.supervisor.run import uneven_groups
    from tests.support.plans import make_plan

    assert "over 2 Locust processes" in uneven_groups(make_plan("lock-safety", workers=8, processes=2))
    assert "over 3 Locust processes" in uneven_groups(make_plan("lock-safety", workers=8, master=True,
                                                                expect_workers=3, aws=True))
    assert uneven_groups(make_plan("lock-safety", workers=8, web=True)) is None  # a web test's users come later
    assert uneven_groups(make_plan("lock-safety", workers=12, processes=2)) is None
    assert scenario.parse({}, "x.toml").datastore.uneven_groups(5, 2) is None  # one worker per namespace
