"""What a run does when a part dies under it: the embedded stand-in killed, and a user's endpoint killed.

For each case it starts a real `harness run` (namespaced, 4 workers) from the checkout given (`--checkout`: its
own `.venv`; another worktree, to compare with the code before the parts were watched), kills the part
`--kill-at` seconds after the test started, and prints: the exit code, the seconds from the death to the
command's end, the rows written after the death, how many failed, the failed rows a second after it, and
the stderr lines.

    python bench/dead_parts.py [--checkout /work/main] [--duration 30] [--kill-at 8]

Loopback only; every process it starts is ended by the end (its own process group).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HARNESS_"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return {**env, **extra}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _started(run_dir: Path, proc: subprocess.Popen, timeout: float = 120) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            info = json.loads((run_dir / "run.json").read_text())
            if info.get("started_at"):
                return pd.Timestamp(info["started_at"]).timestamp()
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"the run in {run_dir} did not start")


def one(checkout: Path, run_dir: Path, duration: float, kill_at: float, endpoint: str | None) -> dict:
    python = str(checkout / ".venv" / "bin" / "python")
    server = None
    env = _env()
    if endpoint == "user":
        port = _port()
        server = subprocess.Popen([python, "-m", "harness", "standin", "--port", str(port)], cwd=checkout, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(3)
        env = _env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y")
    proc = subprocess.Popen([python, "-m", "harness", "run", "namespaced", "--duration", f"{duration:g}s",
                             "--run-dir", str(run_dir), "--no-report"], cwd=checkout, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        t0 = _started(run_dir, proc)
        time.sleep(max(0.0, t0 + kill_at - time.time()))
        if server is not None:
            os.killpg(server.pid, signal.SIGKILL)
        else:
            victim = next(p for p in psutil.Process(proc.pid).children(recursive=True)
                          if any("dynalite_server.js" in x for x in p.cmdline()))
            victim.kill()
        died = time.time()
        _, err = proc.communicate(timeout=duration + 180)
        ended = time.time()
    finally:
        for p in (proc, server):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    d = pd.read_parquet(run_dir / "iterations")
    start = d["ts_start"].map(lambda ts: ts.timestamp())
    after = d[start >= died]
    failed = int((~after["ok"]).sum())
    end = max(d["ts_end"].map(lambda ts: ts.timestamp()).max(), died + 1.0)  # the last row's end
    return {"exit": proc.returncode, "death_to_exit_s": round(ended - died, 1), "rows": len(d),
            "rows_after_death": len(after), "failed_after_death": failed,
            "failed_per_s_after_death": round(failed / max(end - died, 1e-9), 1),
            "stderr": [ln for ln in err.splitlines() if ln.strip()][-3:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout (with its .venv) whose harness to run")
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--kill-at", type=float, default=8.0)
    ap.add_argument("--keep", type=Path, help="keep the run directories here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dead-parts-") as tmp:
        base = args.keep or Path(tmp)
        for case, endpoint in (("embedded stand-in killed", None), ("user's endpoint killed", "user")):
            out = one(args.checkout.resolve(), base / case.split()[0], args.duration, args.kill_at, endpoint)
            print(f"{case}: " + ", ".join(f"{k} {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
