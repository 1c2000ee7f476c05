"""What the supervisor watches while Locust runs: every part the harness started, and the run directory's disk.

Each watched thing answers ``check()`` with a ``PartFailure`` (``harness/record/parts.py``) or None, every half
second from ``supervise``'s loop, while Locust runs:

- the embedded stand-in's servers (``ServerProcess``): this process started them, so ``Popen.poll`` says at once
  that one ended and with what status;
- the process sampler's thread (``SamplerThread``): it stops on a write that fails (a full disk);
- the run directory's filesystem (``FreeSpace``): below ``FLOOR`` free, the next write fails, so the test is
  stopped first; ``Reserve`` keeps a little room aside for the record of that stop.

The stand-in probe and the worker processes of ``--processes`` are the Locust process's children: it records
their deaths in the test's ``run.json`` (``harness/load/children.py``), which ``Parts.check`` reads too. Locust's
own process (local or master) is ``supervise``'s child; its death is ``Parts.locust_exited``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from harness.aws.standin.servers import servers
from harness.record.parts import PartFailure, failure

FLOOR = 1 << 20  # bytes free below which the run directory's filesystem counts as full
RESERVE = 2 << 20  # bytes kept aside in the run directory, given back when the test is stopped for the disk
RESERVE_FILE = ".harness-reserve"


class Watched(Protocol):
    def check(self) -> PartFailure | None: ...


class ServerProcess:
    """A server this process started (a stand-in's, or the front: ``part``): any exit while Locust runs is a
    death."""

    def __init__(self, name: str, proc: Any, log: str | None, part: str = "stand-in") -> None:
        self.name, self.proc, self.log, self.part = name, proc, log, part
        self.said = False

    def check(self) -> PartFailure | None:
        code = self.proc.poll()
        if code is None or self.said:
            return None
        self.said = True
        return failure(self.part, self.name, time.time(), pid=self.proc.pid, returncode=code, log=self.log)


class SamplerThread:
    """The process sampler (a thread here): it stops on its own only when a write failed."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler
        self.said = False

    def check(self) -> PartFailure | None:
        err = getattr(self.sampler, "error", None)
        if err is None or self.said:
            return None
        self.said = True
        return PartFailure("sampler", "processes.csv", time.time(), pid=os.getpid(), detail=_oserror(err))


def _oserror(e: OSError) -> str:
    return f"{e.strerror or e}" + (f" writing {Path(e.filename).name}" if e.filename else "")


def size_words(n: float) -> str:
    """``12 KiB``, ``5.8 MiB``, ``1.2 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n:.0f} B"


class FreeSpace:
    """The run directory's filesystem: under ``floor`` bytes free it is full (the next write would fail)."""

    def __init__(self, run_dir: Path, floor: int = FLOOR) -> None:
        self.run_dir, self.floor = run_dir, floor
        self.said = False

    def check(self) -> PartFailure | None:
        if self.said:
            return None
        try:
            usage = shutil.disk_usage(self.run_dir)
        except OSError:
            return None
        if usage.free >= self.floor:
            return None
        self.said = True
        return PartFailure("disk", str(self.run_dir), time.time(),
                           detail=f"No space left on device: {size_words(usage.free)} free of "
                                  f"{size_words(usage.total)}")


class Reserve:
    """A file of ``size`` bytes in the run directory, deleted to give the stop's record room on a full disk."""

    def __init__(self, run_dir: Path, size: int = RESERVE) -> None:
        self.path, self.size = run_dir / RESERVE_FILE, size

    def take(self) -> Reserve:
        chunk = b"\0" * (1 << 16)
        try:
            with self.path.open("wb") as f:
                for _ in range(self.size // len(chunk)):
                    f.write(chunk)
        except OSError:
            self.release()
        return self

    def release(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass


class Parts:
    """Everything watched during one run, and the failures seen so far (the first one stops the test)."""

    def __init__(self, run_dir: Path, watched: Iterable[Watched] = (), reserve: Reserve | None = None) -> None:
        self.run_dir = run_dir
        self.watched: list[Watched] = list(watched)
        self.reserve = reserve
        self.failures: list[PartFailure] = []
        self.recorded: set[tuple] = set()  # failures the Locust process wrote into a test's run.json
        self.stopped = False  # the supervisor stopped the test for the first failure

    @classmethod
    def of_run(cls, run_dir: Path, stand_in: Any, sampler: Any, front: Any = None) -> Parts:
        """The stand-in's servers, the front (``harness.aws.front.launch``), the sampler and the disk."""
        watched: list[Watched] = [ServerProcess(s.name, s.proc, s.log) for s in servers(stand_in)]
        if front is not None and front.proc is not None:
            watched.append(ServerProcess(front.name, front.proc, str(front.log_path), part="front"))
        if sampler is not None:
            watched.append(SamplerThread(sampler))
        watched.append(FreeSpace(run_dir))
        return cls(run_dir, watched, Reserve(run_dir).take())

    def check(self, tests: list[dict] = ()) -> PartFailure | None:
        """The first new failure: a watched part's, or one a Locust process recorded in a test's run.json."""
        for w in self.watched:
            f = w.check()
            if f is not None:
                return self._add(self._why(f))
        for info in tests:
            for d in info.get("failed_parts") or []:
                f = PartFailure.from_dict(d)
                if f.key not in self.recorded:
                    self.recorded.add(f.key)
                    return self._add(f)
        return None

    def _why(self, f: PartFailure) -> PartFailure:
        """A part that died saying nothing, on a full disk (it could not even write its log): the disk says why."""
        if f.detail or f.signal:
            return f
        full = FreeSpace(self.run_dir).check()
        return replace(f, detail=full.detail + " in the run directory's filesystem") if full is not None else f

    def _add(self, f: PartFailure) -> PartFailure:
        self.failures.append(f)
        if f.part == "disk" or "No space" in f.detail:
            self.give_back()
        return f

    def locust_exited(self, pid: int, returncode: int, running: bool, name: str) -> PartFailure | None:
        """Locust's own process ended by itself: a death when a signal ended it or a test was still recorded."""
        if returncode >= 0 and not running:
            return None
        return self._add(failure("locust", name, time.time(), pid=pid, returncode=returncode,
                                 log=self.run_dir / "locust.log"))

    def give_back(self) -> None:
        if self.reserve is not None:
            self.reserve.release()
