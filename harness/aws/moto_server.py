"""The embedded default: one moto server on a free loopback port, for one run.

moto's own server (Werkzeug) answers ``Connection: close``, so every boto3 call
opens a new TCP connection. Here moto's WSGI app is served by gevent's
keep-alive ``pywsgi`` with ``TCP_NODELAY`` (without it each call waits ~40 ms
for delayed ACKs). It runs as its own process so its CPU does not compete
with the load generator's event loop, and it stops with the run.

Two patches (``harness.aws.standin.moto_patches``) apply in this process only:
moto's models are no longer tracked forever (without it memory grows ~0.85 KB
per request whatever the data), and with ``--indexed`` Query reads only the
queried partition instead of sorting the whole table.

Run directly: ``python -m harness.aws.moto_server [--host H] [--port 0] [--indexed]``
prints ``READY http://<host>:<port> moto/<version>`` and serves until SIGTERM
(or, with ``--exit-with-stdin``, until its parent closes stdin).
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

from harness.core.environment import child_environment
from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.aws.standin import Where

DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "harnesslocal", "AWS_SECRET_ACCESS_KEY": "harnesslocal"}


def serve(host: str, port: int, ready_fd: int = 1, indexed: bool = False) -> None:
    from gevent import monkey

    monkey.patch_all()
    import logging

    from gevent.pywsgi import WSGIHandler, WSGIServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from harness.aws.standin import moto_patches

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    version = moto_patches.apply(indexed)

    class NoDelayHandler(WSGIHandler):
        def handle(self) -> None:
            try:
                self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            super().handle()

    app = DomainDispatcherApplication(create_backend_app)
    server = WSGIServer((host, port), app, handler_class=NoDelayHandler, log=None, error_log=None)
    server.start()
    os.write(ready_fd, f"READY http://{host}:{server.server_port} moto/{version}\n".encode())
    server.serve_forever()


class EmbeddedMoto:
    """Start the server process; ``url`` is where it listens; ``stop()`` ends it.

    The started object is a stand-in (``harness.aws.standin``): ``name``,
    ``version``, ``urls`` per service (both services on one port).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_path: str | None = None,
                 indexed: bool = False) -> None:
        self.host, self.port, self.log_path, self.indexed = host, port, log_path, indexed
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.name = "moto-indexed" if indexed else "moto"
        self.version = ""

    @property
    def urls(self) -> dict[str, str]:
        return {"dynamodb": self.url, "s3": self.url}

    @property
    def services(self) -> dict[str, str]:
        return {"dynamodb": f"{self.name} {self.version}", "s3": f"moto {self.version}"}

    @property
    def s3_stand_in(self) -> dict[str, str]:
        return {"name": "moto", "version": self.version}

    @property
    def pids(self) -> dict[str, int]:
        return {"moto": self.proc.pid} if self.proc else {}

    def launch(self) -> EmbeddedMoto:
        """Start the process (returns at once; ``await_ready`` waits for it): lets another server start alongside."""
        env = child_environment(DUMMY_CREDENTIALS)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.aws.moto_server", "--host", self.host, "--port", str(self.port),
             "--exit-with-stdin", *(["--indexed"] if self.indexed else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
        )
        return self

    def await_ready(self, timeout: float = 30.0) -> EmbeddedMoto:
        """Wait for its READY line: the URL and moto's version."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline().decode().strip()
                if line.startswith("READY "):
                    _, self.url, tag = line.split(" ", 2)
                    self.version = tag.split("/", 1)[1]
                    return self
            if self.proc.poll() is not None:
                break
        self.stop()
        raise HarnessError(f"the embedded {self.name} server did not start; see {self.log_path or 'its log'}")

    def start(self, timeout: float = 30.0) -> EmbeddedMoto:
        return self.launch().await_ready(timeout)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> EmbeddedMoto:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def missing(where: Where) -> str | None:
    """The stand-in registry's question (``harness.aws.standin``): moto needs nothing the harness lacks."""
    return None


def server(name: str, where: Where) -> EmbeddedMoto:
    """``moto`` or ``moto-indexed`` (for DynamoDB; ``moto`` for S3), its log in the run directory."""
    return EmbeddedMoto(log_path=where.log("moto.log"), indexed=name == "moto-indexed")


def _exit_when_parent_goes() -> None:
    """Stop when stdin closes: the run that started us is gone."""
    try:
        while sys.stdin.buffer.read(1):
            pass
    except Exception:
        pass
    os._exit(0)


def main() -> None:
    ap = argparse.ArgumentParser(description="Serve moto (DynamoDB + S3) on loopback with keep-alive.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--exit-with-stdin", action="store_true", help="stop when stdin closes (a parent's lifeline)")
    ap.add_argument("--indexed", action="store_true", help="serve Query from per-partition indexes")
    args = ap.parse_args()
    if args.exit_with_stdin:
        threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    serve(args.host, args.port, indexed=args.indexed)


if __name__ == "__main__":
    main()
