"""The final remote state: what readers can see at the end of a run, captured into the run directory.

Embedded runs lose their server when ``harness run`` ends, so the state is
captured before it stops, into ``RUN_DIR/final-state.jsonl.gz``: a header line
(backend, the commit domains' sequences) then one line per visible index entry
with the digest of the content it points at. ``harness check`` re-reads it.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

from harness.core import atomic
from harness.core.errors import HarnessError
from harness.core.work import Work

STATE_FILE = "final-state.jsonl.gz"


def snapshot(backend: Any) -> dict:
    """What a reader of ``backend`` sees now: ``{"backend", "domains", "entries": [...], ...}``."""
    work = Work()
    t = time.perf_counter()
    state = backend.index_snapshot(work)
    state["captured_at"] = time.time()
    state["capture_s"] = round(time.perf_counter() - t, 3)
    state["capture_requests"] = work.total_requests
    return state


def write_final_state(run_dir: str | Path, state: dict) -> Path:
    path = Path(run_dir) / STATE_FILE
    tmp = atomic.temp_beside(path)
    head = {k: v for k, v in state.items() if k != "entries"}
    with gzip.open(tmp, "wt") as f:
        f.write(json.dumps({"type": "header", **head}) + "\n")
        for e in state["entries"]:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    tmp.replace(path)
    return path


def capture(backend: Any, run_dir: str | Path, events: list[dict] | None = None) -> dict:
    """Snapshot the backend and write it into the run directory; returns the state. With the run's ``events``,
    fresh fenced readers pull each namespace its fenced commits wrote too (``fresh.py``: in the header)."""
    state = snapshot(backend)
    if events is not None:
        from harness.safety.fresh import with_fresh_reads

        with_fresh_reads(backend, events, state)
    write_final_state(run_dir, state)
    return state


def read_state(run_dir: str | Path) -> dict:
    path = Path(run_dir) / STATE_FILE
    if not path.is_file():
        raise HarnessError(f"{run_dir} has no captured final state ({STATE_FILE}): the run did not check safety "
                           "(set [checks] safety = true), or use `harness check --live` while its endpoint is up")
    with gzip.open(path, "rt") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or lines[0].get("type") != "header":
        raise HarnessError(f"{path} is not a final-state file (no header line)")
    head = lines[0]
    head.pop("type")
    return {**head, "entries": lines[1:]}
