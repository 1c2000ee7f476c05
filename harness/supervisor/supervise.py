"""Supervising Locust: its process group, the run's progress lines, and signals.

Locust runs as its own process (master + workers with ``--processes``) so its
gevent patching and event loop never mix with this supervisor, which only
watches the run directory (progress while a test runs, each test's stop and
report) and enforces the time bound.

Signals: SIGTERM, SIGHUP and SIGINT to ``harness run`` are passed to the
Locust master, which stops the running test, collects every worker's rows,
records them and quits; then the supervisor ends whatever is left of Locust's
process group. Nothing outlives the command.

A part that dies: every half second the supervisor also asks the parts it watches (``harness/supervisor/watch.py``:
the stand-in's servers, the sampler, the disk; the probe and Locust's workers through the test's run.json); the
first that died stops the test through the same path a signal takes (``stop_with_reason``), and Locust's own
process ending while a test is recorded is one too. ``harness run`` then exits 5 (the run did not complete).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from harness.record import runinfo
from harness.record.parts import PartFailure
from harness.record.reader import count_rows, shard_paths
from harness.supervisor import progress as progress_line
from harness.supervisor.watch import Parts

GRACE_S = 60.0  # past the run time, Locust gets this long to stop before it is ended
PROGRESS_EVERY_S = 10.0
STOP_WAIT_S = 45.0  # after a signal: Locust records the running test, collects its workers' rows, then exits
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A signal to ``harness run`` (SIGTERM, SIGHUP or SIGINT), raised where the supervisor is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


def _iso_to_epoch(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


class Watcher:
    """Reads run.json files to tell the user what happens: progress while a test runs, its stop, its report.

    A headless run is one test in the run directory; a web session lists its
    tests (each a run directory under ``tests/``) in its own run.json.
    """

    def __init__(self, run_dir: Path, say: Callable[[str], None]) -> None:
        self.run_dir, self.say = run_dir, say
        self.seen: dict[Path, set[Path]] = {}
        self.rows: dict[Path, int] = {}
        self.ends: dict[Path, progress_line.Ends] = {}  # each test's recorded end times: the rate now
        self.stopped: set[Path] = set()
        self.reported: set[Path] = set()
        self.next_progress = time.monotonic() + PROGRESS_EVERY_S
        self.last_tests: list[tuple[int, Path, dict]] = []  # what the last poll read

    def tests(self) -> list[tuple[int, Path, dict]]:
        """(number, directory, run.json) of every test so far."""
        try:
            info = runinfo.read(self.run_dir)
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        if not info.get("session"):
            return [(1, self.run_dir, info)]
        out = []
        for entry in info.get("tests", []):
            d = self.run_dir / entry["dir"]
            try:
                out.append((entry["number"], d, runinfo.read(d)))
            except (FileNotFoundError, json.JSONDecodeError):
                continue
        return out

    @property
    def session(self) -> bool:
        return runinfo.is_session(self.run_dir)

    def recording(self, tests: list[tuple[int, Path, dict]]) -> bool:
        """A test is being recorded: a Locust process that ends now, even with status 0, is a death."""
        return any(info.get("status") == "running" for _, _, info in tests)

    def open(self) -> bool:
        """A web session is open (its master ends it by closing it first)."""
        try:
            return runinfo.read(self.run_dir).get("status") == "open"
        except (FileNotFoundError, json.JSONDecodeError):
            return False

    def _count(self, d: Path) -> int:
        seen = self.seen.setdefault(d, set())
        new = [p for p in shard_paths(d) if p not in seen]
        self.rows[d] = self.rows.get(d, 0) + (count_rows(new) if new else 0)
        seen.update(new)
        return self.rows[d]

    def poll(self, final: bool = False) -> None:
        progress = time.monotonic() >= self.next_progress
        if progress:
            self.next_progress += PROGRESS_EVERY_S
        session = self.session
        self.last_tests = self.tests()
        for number, d, info in self.last_tests:
            label = f"test {number:03d}" if session else ""
            if info.get("status") == "running" and progress and not final:
                rows = self._count(d)
                started = _iso_to_epoch(info.get("started_at")) or time.time()
                elapsed = max(time.time() - started, 0.0)
                bound = info.get("options", {}).get("run_time_s") or info["scenario"]["fleet"]["duration_s"]
                ends = self.ends.setdefault(d, progress_line.Ends())
                ends.add(self.seen.get(d, set()))
                now = progress_line.current_rate(ends.array(), started)
                self.say(progress_line.line(label, elapsed, bound, rows, now))
            if info.get("status") == "finished" and d not in self.stopped:
                self.stopped.add(d)
                if session:
                    self.say(f"harness: {label} ({info.get('scenario_name')}) stopped: {info.get('stop_reason')}; "
                             f"{info.get('rows_written', 0)} iterations recorded in {d}")
                for gap in info.get("incomplete") or []:
                    self.say(f"harness: warning: {label + ': ' if label else ''}{gap['process']} is incomplete "
                             f"({gap['reason']}); the rows are a lower bound")
            if info.get("report") and d not in self.reported:
                self.reported.add(d)
                self.say(f"harness: {label + ' ' if label else ''}report {d / info['report']}")


@contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGTERM / SIGHUP / SIGINT into ``Interrupted`` in this (main) thread, for the run's length."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in FORWARDED}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def supervise(cmd: list[str], run_dir: Path, limit_s: float | None,
              say: Callable[[str], None], parts: Parts | None = None) -> tuple[int, str | None]:
    """Run Locust to its end (``limit_s`` at most, then it is ended); on a signal, let it record the running test,
    then end its whole process group. Locust inherits this process's environment as it is.

    ``parts``: what else to watch; the first that dies stops the test (``stop_with_reason``) and is kept in
    ``parts.failures``, as is Locust's own process when it ends while a test is recorded."""
    out = open(run_dir / "locust.out", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    watcher = Watcher(run_dir, say)
    limit = limit_s
    start = time.monotonic()
    received: str | None = None
    stopped = False  # the supervisor asked Locust to stop (a part died, or it overran)
    try:
        try:
            while proc.poll() is None:
                try:
                    proc.wait(0.5)  # returns as Locust exits (a sleep made every run end up to 0.5 s later)
                except subprocess.TimeoutExpired:
                    pass
                watcher.poll()
                failed = _check(parts, watcher) if proc.poll() is None else None
                if failed is not None:
                    stopped = parts.stopped = True
                    stop_with_reason(proc, failed, say)
                    break
                if limit is not None and time.monotonic() - start > limit:
                    stopped = True
                    say("harness: Locust overran the run time; stopping it")
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(30)
            if parts is not None and not stopped and proc.returncode is not None:
                parts.locust_exited(proc.pid, proc.returncode, watcher.recording(watcher.tests()) or watcher.open(),
                                    _role(cmd))
        except Interrupted as e:
            received = e.name
            hurry = _hold_signals()
            say(f"harness: {received}: stopping Locust (the running test is recorded first)")
            _forward(proc, e.signum)
            _wait(proc, STOP_WAIT_S, hurry, say)
    finally:
        if proc.poll() is None:
            _end_group(proc.pid)
            proc.wait(10)
        _end_group(proc.pid)  # workers or report builders Locust left behind
        out.close()
        watcher.poll(final=True)
    return (proc.returncode if proc.returncode is not None else -1), received


def _check(parts: Parts | None, watcher: Watcher) -> PartFailure | None:
    if parts is None:
        return None
    return parts.check([info for _, _, info in watcher.last_tests])  # as the poll just read them


def stop_with_reason(proc: subprocess.Popen, failed: PartFailure, say: Callable[[str], None]) -> None:
    """The supervisor's own stop: a part the harness started died (or the disk filled), so the test is stopped
    through the path a signal takes (the master stops the running test, collects every worker's rows, records
    them and quits), and waited for as a signal's stop is. SIGTERM, not SIGINT: Locust handles it in a greenlet
    of its own (``gevent.signal_handler``), where SIGINT is a KeyboardInterrupt raised in whichever greenlet
    runs. What died goes into run.json afterwards (``harness run``); this only stops. (A check that stops a test
    early from inside the Locust master is a different stop: Locust's own, with its own reason.)"""
    say(f"harness: {failed.what()} {'filled' if failed.part == 'disk' else 'exited'}; stopping Locust (the "
        "running test is recorded first)")
    _forward(proc, signal.SIGTERM)
    _wait(proc, STOP_WAIT_S, _hold_signals(), say)


def _role(cmd: list[str]) -> str:
    return "master" if "--master" in cmd or "--processes" in cmd else "local"


def _forward(proc: subprocess.Popen, signum: int) -> None:
    try:
        proc.send_signal(signum)
    except ProcessLookupError:
        pass


def _hold_signals() -> threading.Event:
    """From the first signal on, later ones only hurry the shutdown (they must not break its cleanup)."""
    hurry = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for s in FORWARDED:
            signal.signal(s, lambda *_: hurry.set())
    return hurry


def _wait(proc: subprocess.Popen, seconds: float, hurry: threading.Event, say: Callable[[str], None]) -> None:
    """Wait for Locust to finish recording; a second signal ends it at once."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        if hurry.wait(0.2):
            say("harness: a second signal: ending Locust now")
            return
    if proc.poll() is None:
        say(f"harness: Locust did not stop within {seconds:g} s; ending it")


def _group_members(pgid: int) -> list[int]:
    """Live processes of a process group (zombies waiting for their parent do not count)."""
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                out.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def _end_group(pgid: int, wait_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, whatever is left of Locust's process group (its own session: nothing else is in it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_members(pgid):
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _group_members(pgid):
            time.sleep(0.1)
