"""``run.json``: what a run was, so a report can be rebuilt from the directory alone."""

from __future__ import annotations

import json
import os
import platform
import socket
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

RUN_JSON = "run.json"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("harness", "locust", "boto3", "botocore", "moto", "pandas", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write(run_dir: str | Path, info: dict[str, Any]) -> None:
    path = Path(run_dir) / RUN_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(info, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)


def read(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / RUN_JSON).read_text())


def update(run_dir: str | Path, **fields: Any) -> dict[str, Any]:
    info = read(run_dir)
    info.update(fields)
    write(run_dir, info)
    return info


def host() -> str:
    return socket.gethostname()
