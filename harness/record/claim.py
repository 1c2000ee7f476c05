"""A run directory belongs to one run: claimed by an exclusive create before anything is written there.

Checking that a directory is empty and then using it lets two runs started at the same moment both pass the
check; both then wrote ``plan.json``, and the loser's cleanup deleted the winner's stand-in store. Here the one
arbiter is ``O_CREAT | O_EXCL`` on a marker, ``RUN_DIR/.harness-run``: the file system lets exactly one
process create it, so the other is refused (one line) before it writes anything or starts anything.

The claim also remembers whether this run made the directory, so a start refused before the load (an
unreachable endpoint, a stand-in that did not start, too little disk) takes back what it made: the directory
was empty when claimed and no other run could write there, so everything in it is this run's. What the
refusal names (a stand-in's log: "see dynalite.log") is kept for the user to read, and the marker then says
``refused``: a later run may take such a directory over, removing only what the marker lists.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import socket
import time
from pathlib import Path

from harness.core.errors import HarnessError

MARKER = ".harness-run"
RUNNING, REFUSED = "running", "refused"
_FS_FAULTS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR)


def unwritable(path: Path, err: OSError) -> HarnessError:
    """An OSError of the file system as the one line the user acts on (exit 2, no traceback)."""
    reason = err.strerror or type(err).__name__
    return HarnessError(f"cannot write the run directory {path}: {reason}: choose another --run-dir")


class RunDirClaim:
    """This run's hold on its directory, from the exclusive create to ``release`` (or ``refused``)."""

    def __init__(self, path: Path, made_dir: bool) -> None:
        self.path, self.made_dir = path, made_dir
        self.marker = path / MARKER

    @classmethod
    def take(cls, path: Path, run_id: str = "") -> RunDirClaim:
        """Claim ``path`` (made if missing) for this process, or a one-line HarnessError saying why not."""
        try:
            return cls._take(path, run_id)
        except OSError as e:
            if e.errno in _FS_FAULTS:
                raise unwritable(path, e) from None
            raise

    @classmethod
    def _take(cls, path: Path, run_id: str) -> RunDirClaim:
        made = False
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.mkdir()
                made = True
            except FileExistsError:  # another run made it just now: the marker decides which of us runs
                pass
        if not path.is_dir():
            raise HarnessError(f"run directory {path} already exists and is not a directory: choose another "
                               "--run-dir")
        stale = _take_over(path)  # a refused start's leftovers: ours to remove once the claim is ours
        if stale is None:
            _refuse_unless_empty(path)
        claim = cls(path, made)
        try:
            fd = os.open(claim.marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise HarnessError(_in_use(path)) from None
        with os.fdopen(fd, "w") as f:
            json.dump({"state": RUNNING, "pid": os.getpid(), "host": socket.gethostname(), "run_id": run_id,
                       "claimed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f)
        if stale is not None:
            stale_path, kept = stale
            for name in kept:
                _remove(path / name)
            stale_path.unlink(missing_ok=True)
        return claim

    def release(self) -> None:
        """The run is over (whatever its outcome): the directory holds its record, and no marker."""
        self.marker.unlink(missing_ok=True)

    def refused(self, message: str) -> None:
        """Take back what this run made in the directory; keep what ``message`` names, for the user to read.

        Called only before the load started, after every part this run started has stopped.
        """
        try:
            entries = [p for p in self.path.iterdir() if p.name != MARKER]
        except OSError:
            return
        kept = sorted(p.name for p in entries if _named(p.name, message))
        for p in entries:
            if p.name not in kept:
                _remove(p)
        if kept:  # the marker says a rerun may take the directory over, and what to remove then
            self.marker.write_text(json.dumps({"state": REFUSED, "kept": kept, "reason": message}))
            return
        self.release()
        if self.made_dir:
            try:
                self.path.rmdir()
            except OSError:
                pass


def _named(name: str, message: str) -> bool:
    """Whether ``message`` names this file (a whole name: "locust" is not named by "see locust.log")."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", message) is not None


def _refuse_unless_empty(path: Path) -> None:
    names = [p.name for p in path.iterdir()]
    if MARKER in names:
        raise HarnessError(_in_use(path))
    if names:
        raise HarnessError(f"run directory {path} already exists and is not empty: choose another --run-dir")


def _take_over(path: Path) -> tuple[Path, list[str]] | None:
    """A refused start's directory holding only what its marker lists: the marker moved aside (an atomic
    rename, so one run alone takes it over) and the names to remove once this run's claim is made."""
    marker = path / MARKER
    info = _read(marker)
    if info.get("state") != REFUSED:
        return None
    kept = [str(n) for n in info.get("kept") or []]
    if not {p.name for p in path.iterdir()} <= {MARKER, *kept}:
        return None
    stale = path / f"{MARKER}.{os.getpid()}.{secrets.token_hex(4)}.stale"
    try:
        os.rename(marker, stale)
    except FileNotFoundError:  # another run took it over first
        return None
    return stale, kept


def _in_use(path: Path) -> str:
    info = _read(path / MARKER)
    if info.get("state") == REFUSED:
        return (f"run directory {path} holds a refused start's files and more: choose another --run-dir "
                "(or empty it)")
    who = f" (pid {info['pid']} on {info.get('host', '?')}, since {info.get('claimed_at', '?')})" if "pid" in info \
        else ""
    return f"run directory {path} is in use by another run{who}: choose another --run-dir"


def _read(marker: Path) -> dict:
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)
