"""A command's freeze: its process group stopped (SIGSTOP) for a while, then continued (SIGCONT).

The command driver's stop-the-world pause, as the model driver's ``[fidelity.pauses]`` pauses a lock holder:
with ``probability`` per run command, ``at`` seconds after it starts its whole process group is stopped for
``duration`` (past the lock's TTL, a holder that wakes up after another took its lock), then continued. The
process cannot tell: its clock jumps, its sockets wait. A greenlet on the hub does it, so the worker's own wait
for the command goes on; a command that ends meanwhile (a timeout's SIGKILL) ends the freeze.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import time
from collections.abc import Callable

import gevent

log = logging.getLogger("harness")


def _signal(pid: int, sig: int) -> bool:
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class Freezer:
    """One worker's freezes (``[fidelity.pauses]``: probability per run command, ``at``, ``duration``)."""

    def __init__(self, probability: float, at_s: float, duration_s: float, rng: random.Random | None = None) -> None:
        self.probability, self.at_s, self.duration_s = probability, at_s, duration_s
        self.rng = rng or random.Random()
        self._g: gevent.Greenlet | None = None
        self.frozen_s = 0.0  # the last command's time stopped

    def arm(self) -> Callable[[int], None] | None:
        """The ``on_start`` for the next command (None: this one is not frozen)."""
        self.frozen_s = 0.0
        if self.probability <= 0 or self.rng.random() >= self.probability:
            return None
        return self._start

    def _start(self, pid: int) -> None:
        self._g = gevent.spawn(self._freeze, pid)

    def _freeze(self, pid: int) -> None:
        gevent.sleep(self.at_s)
        if not _signal(pid, signal.SIGSTOP):
            return
        t0 = time.monotonic()
        log.info("harness: froze command process group %d for %g s", pid, self.duration_s)
        try:
            gevent.sleep(self.duration_s)
        finally:
            _signal(pid, signal.SIGCONT)
            self.frozen_s = time.monotonic() - t0

    def disarm(self) -> float:
        """After the command ended: the freeze (if any) is over; the seconds it was stopped."""
        if self._g is not None:
            self._g.kill()
            self._g = None
        return self.frozen_s
