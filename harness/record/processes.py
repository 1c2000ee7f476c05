"""``processes.csv``: every process the harness started, and the machine, every second, by CPU.

On one machine the load generator, the stand-in and the harness share the cores: when
they fill them between them, every number of the run measures this machine, not the
datastore. ``generator.csv`` is Locust's own view of its processes (every 3 s); this
file is the harness's, from the operating system (psutil: ``/proc`` on Linux), every
second: each Locust process (the one of a plain run, or the master and each worker
process), each stand-in server by the pid its launcher knows, the harness process
itself and anything else it started, and the machine's total CPU against its cores
(which counts other load on the machine too: a note, never the bound).

Columns: ``ts`` (epoch s), ``process`` (``local``, or ``master`` and ``worker@<pid>`` ...: the report
names a worker ``worker-N`` as ``generator.csv`` does, by the pid run.json's ``processes`` gives;
``dynalite``, ``weed``, ``harness``, ``command``, ``machine``), ``role`` (``locust``, ``stand-in``, ``harness``,
``command``, ``machine``), ``pid`` (0 for the machine; a ``command`` row's: the Locust process that ran them),
``cpu_percent`` (of one core; the machine's: of all its cores together, up to ``cores`` x 100), ``cores``.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

PROCESSES_CSV = "processes.csv"
COLUMNS = ("ts", "process", "role", "pid", "cpu_percent", "cores")
INTERVAL_S = 1.0
ROLES = ("locust", "stand-in", "harness", "command", "machine")
WORKER_PID = "worker@"  # a Locust worker process's name here, before its pid: ``worker@4242``


def worker_pid_names(processes: dict | None) -> dict[str, str]:
    """``worker@<pid>`` -> the worker's own name (``worker-N``), from run.json's ``processes`` (name -> pid):
    the sampler sees pids, the master gives the indices."""
    return {f"{WORKER_PID}{v['pid']}": str(name) for name, v in (processes or {}).items()
            if isinstance(v, dict) and v.get("pid")}


def _is_locust(p: psutil.Process) -> bool:
    try:
        return any("locust" in part for part in p.cmdline()[:4])
    except (psutil.Error, OSError):
        return False


def _is_master(p: psutil.Process) -> bool:
    """A Locust master by its command line: before it forks its workers (``--processes``), and when they run
    elsewhere (``--master``), it has no Locust process under it."""
    try:
        return bool({"--master", "--processes"} & set(p.cmdline()))
    except (psutil.Error, OSError):
        return False


def _ppid(p: psutil.Process) -> int | None:
    try:
        return p.ppid()
    except psutil.Error:
        return None


def _children(p: psutil.Process) -> list[psutil.Process]:
    try:
        return p.children()
    except psutil.Error:
        return []


def _cpu_s(times: psutil._common.pcputimes) -> float:
    """A process's own CPU seconds and those of the children it has reaped."""
    return times.user + times.system + getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)


class CommandMeter:
    """The CPU of the commands each load-sending Locust process runs, tick by tick (``command`` rows).

    A command's process lives a fraction of a second, so a meter started on one tick rarely sees the next:
    each tick adds the CPU its running commands used since they were last seen (all of it for new ones)
    and, for those that ended, the rest of theirs, read from the Locust process's reaped children's times.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._reaped: dict[int, float] = {}  # Locust pid -> its reaped children's CPU seconds, last tick
        self._seen: dict[int, dict[int, float]] = {}  # Locust pid -> {command pid: its CPU seconds, last seen}
        self._at: dict[int, float] = {}
        self._ran: set[int] = set()  # Locust processes that ran a command (the others get no row)

    def sample(self, locust: list[psutil.Process]) -> list[tuple[str, str, int, float]]:
        rows = []
        for p in locust:
            try:
                t = p.cpu_times()
                kids = {q.pid: q for q in p.children()}
            except psutil.Error:
                continue
            reaped = t.children_user + t.children_system
            now = self.clock()
            running: dict[int, float] = {}
            for pid, q in kids.items():
                try:
                    if "locust" in " ".join(q.cmdline()[:4]):
                        continue
                    running[pid] = _cpu_s(q.cpu_times())
                except psutil.Error:
                    continue
            if p.pid not in self._at:  # the first look starts the meter
                self._reaped[p.pid], self._seen[p.pid], self._at[p.pid] = reaped, running, now
                continue
            seen = self._seen[p.pid]
            used = sum(c - seen.get(pid, 0.0) for pid, c in running.items())
            gone = sum(c for pid, c in seen.items() if pid not in running)
            used += max(0.0, reaped - self._reaped[p.pid] - gone)
            span = max(now - self._at[p.pid], 1e-6)
            self._reaped[p.pid], self._seen[p.pid], self._at[p.pid] = reaped, running, now
            if running or used > 0:
                self._ran.add(p.pid)
            if p.pid in self._ran:
                rows.append(("command", "command", p.pid, max(used, 0.0) / span * 100))
        return rows


class ProcessSampler:
    """Samples the harness's process tree and the machine into ``RUN_DIR/processes.csv`` until stopped.

    ``stand_ins`` maps a stand-in's name to its pid (the launchers' ``pids``). A thread of its own, one row
    per process per tick, flushed each tick (a run cut short keeps what was sampled); bounded by ``stop``.
    """

    def __init__(self, run_dir: str | Path, stand_ins: dict[str, int] | None = None, *, root: int | None = None,
                 interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(run_dir) / PROCESSES_CSV
        self.stand_ins = {pid: name for name, pid in (stand_ins or {}).items()}
        self.root = psutil.Process(root or os.getpid())
        self.interval_s, self.clock = interval_s, clock
        self.cores = psutil.cpu_count() or 1
        self._known: dict[int, psutil.Process] = {}
        self._commands = CommandMeter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0
        self.error: OSError | None = None  # why it stopped before it was told to (the supervisor watches this)

    def tree(self) -> list[tuple[str, str, psutil.Process]]:
        """(name, role, process) for the harness and every process under it; Locust's numbered by pid."""
        try:
            kids = self.root.children(recursive=True)
        except psutil.Error:
            kids = []
        out: list[tuple[str, str, psutil.Process]] = [("harness", "harness", self.root)]
        locust = sorted((p for p in kids if _is_locust(p)), key=lambda p: p.pid)
        pids = {q.pid for q in locust}
        top = [p for p in locust if _ppid(p) not in pids]
        for p in top:  # named as generator.csv and the rows name it: a master when it has workers
            out.append(("master" if len(top) < len(locust) or _is_master(p) else "local", "locust", p))
        for p in locust:
            if p not in top:  # its worker index is the master's to give: the report names it by pid
                out.append((f"{WORKER_PID}{p.pid}", "locust", p))
        ran = {q.pid for p in locust if p not in top or not _is_master(p) for q in _children(p) if q not in locust}
        for p in kids:
            if p.pid in self.stand_ins:
                out.append((self.stand_ins[p.pid], "stand-in", p))
            elif p.pid in ran or _ppid(p) in ran:  # a command driver's commands (CommandMeter counts them)
                continue
            elif p not in locust:  # a stand-in's own helpers, a background job: the harness's too
                out.append(("harness", "harness", p))
        return out

    def sample(self) -> list[tuple[str, str, int, float]]:
        """One tick: (process, role, pid, cpu %) rows; a process's first tick only starts its meter (no row)."""
        rows: list[tuple[str, str, int, float]] = []
        harness_cpu, seen = 0.0, set()
        tree = self.tree()
        load = [p for name, role, p in tree if role == "locust" and name != "master"]  # those that run users
        for name, role, p in tree:
            seen.add(p.pid)
            known = self._known.get(p.pid)
            if known is None:
                self._known[p.pid] = p
                try:
                    p.cpu_percent(None)
                except psutil.Error:
                    pass
                continue
            try:
                cpu = known.cpu_percent(None)
            except psutil.Error:
                continue
            if role == "harness":
                harness_cpu += cpu  # the supervisor and its helpers as one row
                continue
            rows.append((name, role, p.pid, cpu))
        rows.append(("harness", "harness", self.root.pid, harness_cpu))
        rows += self._commands.sample(load)
        for pid in set(self._known) - seen:
            del self._known[pid]
        rows.append(("machine", "machine", 0, psutil.cpu_percent(None) * self.cores))
        return rows

    def write(self, ts: float, rows: list[tuple[str, str, int, float]]) -> None:
        new = not self.path.exists()
        with self.path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(COLUMNS)
            for name, role, pid, cpu in rows:
                w.writerow([f"{ts:.3f}", name, role, pid, f"{cpu:.1f}", self.cores])
        self.samples += 1

    def _loop(self) -> None:
        psutil.cpu_percent(None)
        self.sample()  # the meters start here
        while not self._stop.wait(self.interval_s):
            try:
                self.write(self.clock(), self.sample())
            except OSError as e:
                self.error = e  # the run directory went away or its disk is full: nothing more to record
                return

    def start(self) -> ProcessSampler:
        self._thread = threading.Thread(target=self._loop, name="process-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class ProcessesTail:
    """The rows ``processes.csv`` gained since the last read (the Harness tab's machine, live).

    The sampler runs in the harness process and appends a tick at a time; a reader in the Locust master reads
    from where it stopped, whole lines only. Rows: (ts, process, role, cpu_percent, cores).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / PROCESSES_CSV
        self.offset = 0

    def read(self) -> list[tuple[float, str, str, float, int]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].decode(errors="replace").splitlines():
            parts = line.split(",")
            if len(parts) != len(COLUMNS) or parts[0] == COLUMNS[0]:
                continue
            try:
                out.append((float(parts[0]), parts[1], parts[2], float(parts[4]), int(parts[5])))
            except ValueError:
                continue
        return out
