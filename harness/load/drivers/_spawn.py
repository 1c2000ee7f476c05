"""Run one command without blocking the gevent hub: its own process group, a timeout that kills the group.

Inside Locust every user is a greenlet on one hub; ``gevent.subprocess`` waits for the child and reads its
pipes cooperatively, so a hundred users each waiting on a process keep the hub (and the master's heartbeats)
running. A command that outlives its timeout is killed with its whole process group (``start_new_session``:
a shell's children too), so nothing it started survives the iteration.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from gevent import subprocess as gsubprocess

OUTPUT_LIMIT = 8192  # bytes of stdout / stderr kept (the tail: a JSON error is the last line)


@dataclass
class Exit:
    """How one command ended: exit code (None: it never started), output tails, wall time and its times."""

    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    start_ns: int
    end_ns: int
    timed_out: bool = False
    error: str = ""  # why it could not start (no such file, not executable)
    pid: int = 0

    @property
    def wall_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out


def _tail(data: bytes | None) -> str:
    return (data or b"")[-OUTPUT_LIMIT:].decode(errors="replace")


def run(argv: list[str], *, cwd: str, env: dict[str, str], timeout_s: float, nice: int = 0,
        on_start: Callable[[int], None] | None = None) -> Exit:
    """Run ``argv`` in ``cwd`` with ``env`` (the whole environment), for at most ``timeout_s`` seconds, ``nice``
    steps below the harness's priority (so a machine full of commands still runs Locust's heartbeats);
    ``on_start`` is given its process group's id once it runs (a freeze: ``harness.load.drivers._freeze``)."""
    start = time.time_ns()
    try:
        proc = gsubprocess.Popen(argv, cwd=cwd, env=env, stdin=gsubprocess.DEVNULL, stdout=gsubprocess.PIPE,
                                 stderr=gsubprocess.PIPE, start_new_session=True,
                                 preexec_fn=(lambda: os.nice(nice)) if nice else None)
    except OSError as e:
        return Exit(argv, None, "", "", start, time.time_ns(), error=f"{argv[0]}: {e.strerror or e}")
    if on_start is not None:
        on_start(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except gsubprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        timed_out = True
    finally:
        if proc.poll() is None:  # a greenlet killed at the test's end: the process goes with it
            _kill_group(proc.pid)
            proc.wait()
    return Exit(argv, proc.returncode, _tail(out), _tail(err), start, time.time_ns(), timed_out=timed_out,
                pid=proc.pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
