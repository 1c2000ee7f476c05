"""The other two processes of a run spread over machines: ``harness worker`` and ``harness standin``.

``harness run SCENARIO --master`` (run.py) supervises the Locust master
and builds the report. A worker needs nothing but where the master is: each
test's run plan (scenario, backend, run id, table and bucket, endpoints)
rides Locust's spawn message from the master, and only the credentials come
from the worker's own environment (the same compose ``environment`` or
Kubernetes Secret as the master's; the plan never carries them). ``harness
worker`` *becomes* Locust (exec), so a container's SIGTERM reaches Locust's
own handler, which sends the worker's last rows to the master before it quits.

``harness standin`` serves the embedded stand-in on an address other
machines reach, for compose and in-cluster runs that should not need
DynamoDB Local (whose licence is the vendor's own).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from harness.core.errors import HarnessError

LOCUSTFILE = Path(__file__).parents[1] / "load" / "locustfile.py"


def worker_command(master_host: str, master_port: int, processes: int = 1) -> list[str]:
    """The Locust worker command line ``harness worker`` runs."""
    if not master_host:
        raise HarnessError("--master-host is empty: give the host name or address of `harness run --master`")
    if not 0 < master_port < 65536:
        raise HarnessError(f"--master-port must be 1-65535, got {master_port}")
    if processes < 1:
        raise HarnessError(f"--processes must be at least 1, got {processes}")
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker", "--master-host", master_host,
           "--master-port", str(master_port)]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    return cmd


def exec_worker(master_host: str, master_port: int, processes: int = 1) -> int:
    cmd = worker_command(master_host, master_port, processes)
    print(f"harness: Locust worker for the master at {master_host}:{master_port}", flush=True)
    os.execv(cmd[0], cmd)
    return 0  # not reached


def serve_standin(host: str, port: int) -> int:
    """Serve the embedded stand-in until SIGTERM / SIGINT / SIGHUP; exit 1 if it dies on its own."""
    from harness.aws.moto_server import EmbeddedMoto
    from harness.record.runinfo import stand_in

    if not 0 <= port < 65536:
        raise HarnessError(f"--port must be 0-65535, got {port}")
    stop = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        # moto-indexed: a Query's cost follows its partition, not the table (stock moto sorts the whole table)
        server = EmbeddedMoto(host=host, port=port, indexed=True).start()
    except RuntimeError as e:
        raise HarnessError(f"the stand-in did not start on {host}:{port}: {e}") from None
    info = stand_in(server) or {}
    print(f"harness: stand-in {info.get('name')} {info.get('version')} serving DynamoDB and S3 at {server.url}",
          flush=True)
    try:
        while not stop.wait(1.0):
            proc = getattr(server, "proc", None)
            if proc is not None and proc.poll() is not None:
                print(f"harness: the stand-in exited on its own (exit {proc.returncode})", file=sys.stderr)
                return 1
    finally:
        server.stop()
    return 128 + received[0] if received and received[0] != signal.SIGTERM else 0
