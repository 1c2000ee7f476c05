"""What the launchers of server processes share: free ports, a child that dies with its parent, an orderly end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import IO, Self


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free on ``host`` now (held open together, so no two are the same)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the thread that started it dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def end_group(proc: subprocess.Popen, deadline_s: float) -> None:
    """SIGTERM the process group ``proc`` leads, SIGKILL at the deadline, then whatever else is left in it."""
    for sig, wait in ((signal.SIGTERM, deadline_s), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    try:  # anything else it left in its group
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait(5)


class OneService:
    """The stand-in protocol's maps, and the start and end, of a launcher whose one process serves one AWS
    service.

    A launcher sets ``SERVICE`` ("dynamodb" or "s3") and ``name`` (its server's) and has ``url``,
    ``version``, ``proc`` (the child, None before it starts), ``log_path`` with ``_log`` (its open handle)
    and ``_log_start`` (where this attempt's output starts in it); it defines ``launch`` (start the
    process, return at once), ``await_ready`` and ``stop`` (which calls ``_end_process`` first).
    """

    SERVICE: str
    name: str
    url: str
    version: str
    proc: subprocess.Popen | None
    log_path: Path
    _log: IO[bytes] | None
    _log_start: int

    def launch(self) -> Self:
        raise NotImplementedError

    def await_ready(self, timeout: float) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def start(self, timeout: float = 60.0) -> Self:
        return self.launch().await_ready(timeout)

    def _end_process(self, deadline_s: float) -> None:
        """SIGTERM the process group, SIGKILL at the deadline; close the log."""
        if self.proc is not None:
            end_group(self.proc, deadline_s)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _log_text(self) -> str:
        """This attempt's output so far."""
        with self.log_path.open("rb") as f:
            f.seek(self._log_start)
            return f.read().decode(errors="replace")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def urls(self) -> dict[str, str]:
        return {self.SERVICE: self.url}

    @property
    def services(self) -> dict[str, str]:
        return {self.SERVICE: f"{self.name} {self.version}"}

    @property
    def pids(self) -> dict[str, int]:
        return {self.name: self.proc.pid} if self.proc else {}
