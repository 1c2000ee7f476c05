"""``run.json``'s ``failed_parts``: a part the harness started that died during the run, in one record and one line.

The parts are the embedded stand-in's servers, the stand-in probe, Locust's processes (the one of a plain run, or
the master and its workers), the process sampler, and the run directory's filesystem (it fills). Whoever notices a
part die (the supervisor, or for the probe the Locust process that started it) records it here; the supervisor
stops the test, and ``harness run`` prints the record's ``line`` and exits 5 (the run did not complete).

A record: ``part`` (``stand-in``, ``probe``, ``locust``, ``locust-worker``, ``sampler``, ``disk``), ``name``
(``dynalite``, ``local``, ``worker-1``, ...), ``pid``, ``at`` (epoch s, when it was noticed), ``status`` (its exit
status) or ``signal`` (the signal that ended it), ``detail`` (what its log said last, or why), ``log`` (its
log's path) and ``log_tail`` (the last lines of that log).
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.record import runinfo

TAIL_LINES = 10
TELLING = re.compile(r"error|fail|fatal|exception|no space|denied|panic|abort|killed", re.IGNORECASE)


@dataclass(frozen=True)
class PartFailure:
    """One part that died (or, ``disk``, filled): what, when, how it ended, and what its log said."""

    part: str
    name: str
    at: float
    pid: int | None = None
    status: int | None = None
    signal: str | None = None
    detail: str = ""
    log: str | None = None
    log_tail: tuple[str, ...] = field(default_factory=tuple)

    @property
    def key(self) -> tuple[str, str, int | None]:
        return self.part, self.name, self.pid

    def what(self) -> str:
        """The part in words: ``the embedded stand-in dynalite``, ``the Locust worker process worker-1``."""
        return {"stand-in": f"the embedded stand-in {self.name}", "probe": "the stand-in probe",
                "locust": f"the Locust process ({self.name})",
                "locust-worker": f"the Locust worker process {self.name}",
                "sampler": "the process sampler (processes.csv)",
                "disk": f"the run directory's filesystem ({self.name})",
                "front": "the loopback front"}.get(self.part, f"{self.part} {self.name}")

    def how(self) -> str:
        """How it ended, and what it said: ``status 1: IO error: ... No space left on device``."""
        if self.part == "disk":
            return self.detail
        ended = f"killed by {self.signal}" if self.signal else (
            f"status {self.status}" if self.status is not None else "its exit status is unknown")
        return f"{ended}: {self.detail}" if self.detail else ended

    def line(self, t0: float | None) -> str:
        """The one line on stderr: ``the embedded stand-in dynalite exited at 19 s (status 1: ...); the test was
        stopped`` (``t0``: the test's start, epoch s)."""
        when = f" at {max(0.0, self.at - t0):.0f} s" if t0 else ""
        verb = "filled" if self.part == "disk" else "exited"
        after = ("the run did not complete (rows up to its last flush are kept)" if self.part == "locust"
                 else "the test was stopped")
        return f"{self.what()} {verb}{when} ({self.how()}); {after}"

    def as_dict(self, t0: float | None = None) -> dict[str, Any]:
        out = asdict(self)
        out["log_tail"] = list(self.log_tail)
        out["at_s"] = round(self.at - t0, 1) if t0 else None
        out["line"] = self.line(t0)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PartFailure:
        return cls(part=str(d.get("part", "")), name=str(d.get("name", "")), at=float(d.get("at") or 0.0),
                   pid=d.get("pid"), status=d.get("status"), signal=d.get("signal"), detail=str(d.get("detail", "")),
                   log=d.get("log"), log_tail=tuple(d.get("log_tail") or ()))


def ended(returncode: int | None) -> tuple[int | None, str | None]:
    """(exit status, signal name) from a ``Popen.returncode`` (negative: the signal that ended it)."""
    if returncode is None:
        return None, None
    if returncode < 0:
        try:
            return None, signal.Signals(-returncode).name
        except ValueError:
            return None, f"signal {-returncode}"
    return returncode, None


def from_wait_status(status: int) -> tuple[int | None, str | None]:
    """(exit status, signal name) from a ``waitpid`` status word (a zombie's, read from ``/proc``)."""
    try:
        return ended(os.waitstatus_to_exitcode(status))
    except ValueError:
        return None, None


def log_tail(path: str | Path | None, lines: int = TAIL_LINES, max_bytes: int = 16_384) -> tuple[str, ...]:
    """The last non-empty lines of a log (read from its end: a log can be large)."""
    if not path:
        return ()
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            text = f.read().decode(errors="replace")
    except OSError:
        return ()
    out = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return tuple(ln[:400] for ln in out[-lines:])


def telling(tail: tuple[str, ...] | list[str], width: int = 160, last: bool = True) -> str:
    """The line of a log's tail that says most about why it ended: the last naming an error, else (``last``)
    the last line. A process killed by a signal wrote nothing about it: its last line is not a reason."""
    line = next((ln for ln in reversed(tail) if TELLING.search(ln)), tail[-1] if tail and last else "").strip()
    return line if len(line) <= width else line[: width - 3] + "..."


def failure(part: str, name: str, at: float, *, pid: int | None = None, returncode: int | None = None,
            log: str | Path | None = None, detail: str = "") -> PartFailure:
    """A part's record from its exit (``returncode`` as ``Popen`` gives it) and its log."""
    status, sig = ended(returncode)
    tail = log_tail(log)
    return PartFailure(part, name, at, pid=pid, status=status, signal=sig,
                       detail=detail or ("" if sig == "SIGKILL" else telling(tail, last=sig is None)),
                       log=str(log) if log else None, log_tail=tail)


def merge(*groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records from several places (the test's run.json, the supervisor's), each part once, in order of death."""
    seen, out = set(), []
    for group in groups:
        for d in group:
            key = (d.get("part"), d.get("name"), d.get("pid"))
            if key not in seen:
                seen.add(key)
                out.append(d)
    return sorted(out, key=lambda d: d.get("at") or 0.0)


def append(run_dir: str | Path, f: PartFailure, t0: float | None) -> None:
    """Add ``f`` to ``run_dir``'s run.json ``failed_parts`` (a Locust process's own record of a child it lost)."""
    info = runinfo.read(run_dir)
    runinfo.update(run_dir, failed_parts=[*(info.get("failed_parts") or []), f.as_dict(t0)])
