"""``run.json``: what a run was, so a report can be rebuilt from the directory alone."""

from __future__ import annotations

import json
import platform
import socket
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.core import atomic

RUN_JSON = "run.json"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("harness", "locust", "boto3", "botocore", "moto", "pandas", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def write(run_dir: str | Path, info: dict[str, Any]) -> None:
    path = Path(run_dir) / RUN_JSON
    atomic.write_text(path, json.dumps(info, indent=2, sort_keys=True, default=str))


def read(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / RUN_JSON).read_text())


def update(run_dir: str | Path, **fields: Any) -> dict[str, Any]:
    info = read(run_dir)
    info.update(fields)
    write(run_dir, info)
    return info


def host() -> str:
    return socket.gethostname()


# ---- web sessions: one run directory per test under the session's directory ----------

TESTS_DIR = "tests"


def new_test_dir(session_dir: str | Path) -> tuple[int, Path]:
    """The next free ``SESSION/tests/NNN`` (created here, so two starts never share one)."""
    root = Path(session_dir) / TESTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name) for p in root.iterdir() if p.name.isdigit()]
    n = max(taken, default=0) + 1
    while True:
        path = root / f"{n:03d}"
        try:
            path.mkdir()
            return n, path
        except FileExistsError:
            n += 1


def is_session(path: str | Path) -> bool:
    """A web session's directory: its run.json lists tests, each a run directory of its own."""
    try:
        return bool(read(path).get("session"))
    except (FileNotFoundError, json.JSONDecodeError):
        return False


def test_dirs(session_dir: str | Path) -> list[Path]:
    """The session's test directories that hold a run (in test order)."""
    root = Path(session_dir) / TESTS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name.isdigit() and (p / RUN_JSON).exists())


def expand_runs(paths: list[str | Path]) -> list[Path]:
    """Run directories to report: a session stands for each of its tests."""
    out: list[Path] = []
    for p in paths:
        out.extend(test_dirs(p) if is_session(p) else [Path(p)])
    return out


def stand_in(server: Any) -> dict | None:
    """``{"name", "version", "services", "s3"}`` of the embedded server that served the run (None without one).

    The server object says what it is; a server that does not (the moto
    process of older code) is moto at the installed version.
    """
    if server is None:
        return None
    name = getattr(server, "name", None) or "moto"
    version = getattr(server, "version", None)
    if not version:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "unknown"
    out: dict = {"name": str(name), "version": str(version)}
    services = getattr(server, "services", None)
    if services:  # which server answered each service (dynalite serves DynamoDB, SeaweedFS or moto S3)
        out["services"] = dict(services)
    s3 = getattr(server, "s3_stand_in", None)
    if s3:  # S3's server by name and version (the top-level name is DynamoDB's)
        out["s3"] = dict(s3)
    return out
