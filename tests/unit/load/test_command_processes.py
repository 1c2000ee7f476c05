"""processes.csv's ``command`` role: the CPU of short-lived commands is counted, not missed between ticks, and
the bound rule names them as the system under test."""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import psutil
import pytest

from harness.metrics import bound, machine
from harness.record.processes import CommandMeter

BUSY = "x = 0\nfor i in range(3_000_000): x += i"


def test_commands_shorter_than_a_tick_are_counted_from_their_reaped_times():
    t = iter([0.0, 1.0, 2.0])
    meter = CommandMeter(clock=lambda: next(t))
    me = psutil.Process()
    assert meter.sample([me]) == []  # the first look starts the meter
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(2):  # each lives well under a second, between two ticks
        subprocess.run([sys.executable, "-c", BUSY], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    ((name, role, pid, cpu),) = meter.sample([me])
    assert (name, role, pid) == ("command", "command", me.pid)
    assert cpu == pytest.approx(used * 100, rel=0.05)  # one second between the ticks
    assert meter.sample([me])[0][3] == 0.0  # nothing ran since: a row at 0, not the same CPU again


def test_a_process_that_ran_no_command_gets_no_row():
    t = iter([0.0, 1.0])
    meter = CommandMeter(clock=lambda: next(t))
    quiet = psutil.Process(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"]).pid)
    try:
        assert meter.sample([quiet]) == [] and meter.sample([quiet]) == []
    finally:
        quiet.kill()


def test_the_machine_names_the_commands_as_the_system_under_test():
    ticks = np.repeat(np.arange(10.0), 3)
    process = np.tile(["local", "command", "machine"], 10)
    role = np.tile(["locust", "command", "machine"], 10)
    cpu = np.tile([20.0, 170.0, 195.0], 10)
    (m,) = [r for r in machine.resources(ticks, process, role, cpu, cores=2) if r.kind == "machine"]
    assert m.evidence["commands"] == pytest.approx(0.85) and m.utilization == pytest.approx(0.95)
    s = bound.sentence(bound.choose([m]), [m])
    assert "the commands it ran (the system under test: 85 % of the cores)" in s
    assert "the commands take most of it, so every number measures the system under test" in s
    cpu = np.tile([170.0, 10.0, 195.0], 10)  # the harness's own Locust process is what fills it
    (m,) = [r for r in machine.resources(ticks, process, role, cpu, cores=2) if r.kind == "machine"]
    s = bound.sentence(bound.choose([m]), [m])
    assert "the commands take most of it" not in s and "every number measures this machine" in s
