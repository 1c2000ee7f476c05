"""The front's process: started, watched and stopped as the stand-ins' are (``harness.aws.standin.processes``).

It writes its log to ``RUN_DIR/front.log`` and says ``harness-front ready control=URL`` once it serves; its
control URL goes into ``RUN_DIR/front.json`` (``FRONT_JSON``), where the command driver finds it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.aws.fidelity.model import FidelityConfig
from harness.aws.front.__main__ import READY
from harness.aws.front.client import FRONT_JSON, FrontClient
from harness.aws.front.config import FrontConfig
from harness.aws.standin.processes import die_with_parent, end_group
from harness.core.errors import HarnessError

FRONT_LOG = "front.log"
FRONT_COUNTS = "front-counts.json"


def for_run(plan: Any, run_dir: str | Path) -> FrontProcess | None:
    """The run's front (not started), or None when the scenario has none: the whole table's modelled capacity
    (``plan.fidelity(1.0)``: one front for every process), in front of the plan's endpoints; with the fidelity
    layer off, a front that only counts."""
    if not plan.scenario.fidelity.front:
        return None
    cfg = plan.fidelity(1.0)
    if not cfg.enabled:
        cfg = FidelityConfig()
    c = plan.connection
    ups = {s: c.service(s).url for s in ("dynamodb", "s3") if c.service(s).url}
    return FrontProcess(FrontConfig(cfg, ups), run_dir)


class FrontProcess:
    """``python -m harness.aws.front`` in a process group of its own; ``proc``, ``name`` and ``log_path`` as the
    supervisor's watch reads them (``harness.supervisor.watch.ServerProcess``)."""

    name = "front"

    def __init__(self, cfg: FrontConfig, run_dir: str | Path) -> None:
        self.cfg = cfg
        self.dir = Path(run_dir)
        self.log_path = self.dir / FRONT_LOG
        self.proc: subprocess.Popen | None = None
        self.control_url = ""

    def start(self, timeout: float = 20.0) -> FrontProcess:
        self.dir.mkdir(parents=True, exist_ok=True)
        cfg_path = self.dir / "front-config.json"
        cfg_path.write_text(self.cfg.to_json())
        log = self.log_path.open("ab")
        start = self.log_path.stat().st_size
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.aws.front", str(cfg_path)], stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=die_with_parent)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._log_since(start)
            for line in text.splitlines():
                if line.startswith(READY):
                    self.control_url = line.split("control=", 1)[1].strip()
                    (self.dir / FRONT_JSON).write_text(json.dumps({"control": self.control_url,
                                                                   "upstreams": self.cfg.upstreams}))
                    return self
            if self.proc.poll() is not None:
                last = text.strip().splitlines()[-1:] or ["(no output)"]
                raise HarnessError(f"the front did not start (exit {self.proc.returncode}): {last[0]}")
            time.sleep(0.05)
        self.stop()
        raise HarnessError(f"the front did not say it was ready within {timeout:g} s (see {self.log_path})")

    def _log_since(self, start: int) -> str:
        with self.log_path.open("rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")

    @property
    def pids(self) -> dict[str, int]:
        return {self.name: self.proc.pid} if self.proc else {}

    def stop(self) -> None:
        """Its counts over the whole run into ``front-counts.json`` (while it still answers), then its end."""
        if self.proc is not None:
            if self.control_url and self.proc.poll() is None:
                try:
                    front = FrontClient(self.control_url)
                    doc = {"users": {u: c.to_dict() for u, c in front.all_counts().items()}, "model": front.model()}
                    (self.dir / FRONT_COUNTS).write_text(json.dumps(doc, indent=1))
                except (OSError, ValueError):
                    pass
            end_group(self.proc, 5.0)
            self.proc = None

    def __enter__(self) -> FrontProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
