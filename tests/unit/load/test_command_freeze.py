"""The command driver's freeze: a run command's process group stopped (SIGSTOP) for a while, then continued."""

from __future__ import annotations

import os
import random
import sys

import gevent
import psutil

from harness.load.drivers import _spawn
from harness.load.drivers._freeze import Freezer

SLEEPER = "import time; t = time.monotonic(); time.sleep(0.3); print(round(time.monotonic() - t, 3))"


def _run(freezer: Freezer, seen: list[str] | None = None) -> tuple[_spawn.Exit, float]:
    on_start = freezer.arm()

    def started(pid: int) -> None:
        if seen is not None:  # its state halfway through the freeze
            gevent.spawn_later(freezer.at_s + freezer.duration_s / 2, lambda: seen.append(psutil.Process(pid).status()))
        on_start(pid)

    ex = _spawn.run([sys.executable, "-c", SLEEPER], cwd=os.getcwd(), env=dict(os.environ), timeout_s=30,
                    on_start=started if on_start else None)
    return ex, freezer.disarm() if on_start else 0.0


def test_a_frozen_command_is_stopped_for_the_duration_and_then_finishes():
    seen: list[str] = []
    ex, frozen = _run(Freezer(1.0, 0.1, 1.2), seen)
    assert ex.code == 0, ex.stderr
    assert seen == [psutil.STATUS_STOPPED]  # stopped halfway through, whatever it was doing
    assert ex.wall_ms >= 1200 and 1.2 <= frozen < 3.0


def test_no_freeze_without_its_probability_and_a_timeout_ends_a_frozen_command():
    ex, frozen = _run(Freezer(0.0, 0.1, 5.0))
    assert ex.code == 0 and frozen == 0.0
    f = Freezer(1.0, 0.05, 30.0, random.Random(1))
    on_start = f.arm()
    ex = _spawn.run([sys.executable, "-c", SLEEPER], cwd=os.getcwd(), env=dict(os.environ), timeout_s=1.0,
                    on_start=on_start)
    f.disarm()
    assert ex.timed_out and ex.wall_ms < 10_000  # SIGKILL reaches a stopped group
