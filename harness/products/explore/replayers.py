"""Where each schedule's world comes from: made anew with its prelude played again, or forked from one prelude.

An exploration replays hundreds of schedules of one operation, each after the same prelude (both actors sync m0,
for ``prune`` A's orphan). The prelude is deterministic (a FakeClock, seeded actors, one fresh table or bucket)
and is about a third of a schedule's requests, and the requests are most of an exploration's time (moto's
in-process parsing and serializing). ``Forked`` plays the prelude once per operation and forks a child process
per schedule from that state: the child inherits the actors, the clock, the history and moto's tables as the
prelude left them (copy-on-write), plays the schedule, sends its outcome back through a pipe and exits. What a
schedule finds is the same either way (``tests/unit/products/test_explore.py`` compares the two).
``Fresh`` is the portable one: a platform without ``os.fork`` (or not Linux, where forking a process that has
imported macOS frameworks is unsafe) makes each world anew, as every exploration did before.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Protocol

from harness.core.errors import HarnessError
from harness.products.explore.schedules import Schedule, disturb, prelude, replay
from harness.products.explore.world import Lab, new_world

_FIELDS = ("steps", "violations", "findings", "error")


class Replayer(Protocol):
    def replay_all(self, batch: list[Schedule], lab: Lab, quick: bool) -> Iterator[Schedule]:
        """Each schedule of ``batch`` (one target, one operation) played and checked, in order."""
        ...


class Fresh:
    """Every schedule in a world made anew: its prelude played again each time."""

    def replay_all(self, batch: list[Schedule], lab: Lab, quick: bool) -> Iterator[Schedule]:
        for s in batch:
            yield replay(s, lab, quick)


class Forked:
    """The prelude once per batch; each schedule in a child process forked from the world it left."""

    def replay_all(self, batch: list[Schedule], lab: Lab, quick: bool) -> Iterator[Schedule]:
        if not batch:
            return
        first = batch[0]
        w = new_world(first.target, lab)
        prelude(w, first.op)
        for s in batch:
            if (s.target, s.op) != (first.target, first.op):
                raise ValueError("a forked batch is one target's one operation")
            yield self._in_child(w, s, lab, quick)

    @staticmethod
    def _in_child(w: object, s: Schedule, lab: Lab, quick: bool) -> Schedule:
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: play, report, and leave without running the parent's exit handlers
            code = 0
            try:
                os.close(read)
                done = disturb(w, s, lab, quick)  # type: ignore[arg-type]
                payload = {k: getattr(done, k) for k in _FIELDS}
            except BaseException:  # noqa: BLE001 - sent to the parent, which raises it
                payload, code = {"crash": traceback.format_exc()}, 1
            try:
                with os.fdopen(write, "w") as out:
                    json.dump(payload, out)
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as got:
            text = got.read()
        os.waitpid(pid, 0)
        payload = json.loads(text) if text else {"crash": "the schedule's process died without a word"}
        if "crash" in payload:
            raise HarnessError(f"exploring {s.target.name} {s.op} at request {s.boundary + 1} failed in its "
                               f"process:\n{payload['crash']}")
        for k in _FIELDS:
            setattr(s, k, payload[k])
        return s


def choose() -> Replayer:
    """``Forked`` where a fork is safe and cheap (Linux), else ``Fresh``."""
    return Forked() if sys.platform == "linux" and hasattr(os, "fork") else Fresh()


__all__ = ["Forked", "Fresh", "Replayer", "choose"]
