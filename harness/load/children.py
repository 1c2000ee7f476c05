"""The Locust process's own children, watched by it: the stand-in probe, and the workers ``--processes`` forked.

Only a child's parent can read its exit status, and these two are the Locust process's children, not the
supervisor's. A child that dies while a test runs is written into the test's ``run.json`` ``failed_parts`` at
once (``harness/record/parts.py``); the supervisor reads it there within a second and stops the test as it does
for any part that died (``harness/supervisor/supervise.py``).

- The probe (``harness/aws/fidelity/probe.py``): any exit before the load starts stopping (when it is told to
  finish) is a death.
- A worker process: Locust's master forks them with ``gevent.fork``, and gevent reaps each as it exits, keeping
  its wait status in ``gevent.os._watched_children`` until Locust's own ``waitpid`` at the master's exit; it is
  read there, not taken. A worker that ended by a signal or a non-zero status is a death at any time; with
  status 0, while a test runs (at the session's end every worker quits with 0). A scenario that accepts a lost
  worker (``[checks] allow_lost_workers``) records none.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import gevent

from harness.record.parts import PartFailure, append, failure, from_wait_status, log_tail, telling

log = logging.getLogger("harness")

EVERY_S = 0.5


def watch_probe(t: Any, every_s: float = EVERY_S) -> None:
    """Until the test stops: when ``t.probe`` (of ``ActiveTest`` ``t``) has ended, record it and return."""
    while t.stopping_at is None and not t.finishing:
        gevent.sleep(every_s)
        probe = t.probe
        proc = probe.proc if probe is not None else None
        if proc is None or t.stopping_at is not None or t.finishing:
            return
        code = proc.poll()
        if code is None:
            continue
        _record(t, failure("probe", "probe", time.time(), pid=proc.pid, returncode=code, log=t.dir / "probe.log"))
        return


def _record(t: Any, f: PartFailure) -> None:
    log.error("harness: test %03d: %s", t.number, f.line(t.started_at))
    try:
        append(t.dir, f, t.started_at)
    except OSError:
        log.exception("harness: cannot record %s in %s", f.what(), t.dir)


def _reaped() -> dict[int, int]:
    """pid -> wait status of the children gevent forked and reaped, not yet waited for (peeked, not taken)."""
    try:
        from gevent import os as gevent_os

        watched = dict(gevent_os._watched_children)
    except (ImportError, AttributeError):
        return {}
    return {pid: v[1] for pid, v in watched.items() if isinstance(v, tuple) and len(v) >= 2}


def watch_workers(session: Any, every_s: float = EVERY_S) -> None:
    """On a master: for the session's length, every forked worker that dies is recorded in the running test."""
    seen: set[int] = set()
    locust_log = getattr(session.env.parsed_options, "logfile", None)
    while not session.quitting:
        gevent.sleep(every_s)
        for pid, raw in _reaped().items():
            if pid in seen or pid == os.getpid():
                continue
            seen.add(pid)
            t = session.current
            status, sig = from_wait_status(raw)
            running = t is not None and t.stopping_at is None and not t.finishing
            if session.quitting or not (sig or status or running):
                continue
            if t is None or t.scenario.checks.allow_lost_workers:
                continue
            name = next((i.process for i in t.inflows.values() if i.pid == pid), f"worker@{pid}")
            tail = log_tail(locust_log)
            _record(t, PartFailure("locust-worker", name, time.time(), pid=pid, status=status, signal=sig,
                                   log=locust_log, log_tail=tail, detail="" if sig else telling(tail, last=False)))
