"""``harness notebook [RUN_DIR ...]``: the review notebook in JupyterLab, on the chosen runs.

The report is a page; the notebook (``harness/products/notebook/review.ipynb``) is where a user
digs further: the same figures and findings, explained, and several runs
overlaid. It picks its runs from ``HARNESS_REVIEW_RUNS`` (else the latest run
under ``HARNESS_RUNS_DIR``), so this command sets both for the server, whose
kernels inherit them, and serves the notebook's own package folder on loopback
only, behind a token (a Jupyter server runs code for whoever reaches it). The
package folder, found through ``importlib.resources``, is there whether the
harness runs from a checkout or from an installed wheel; the runs folder is the
one under the directory the command was started in, as for ``harness run``.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

from harness.core import package_data
from harness.core.environment import child_environment
from harness.core.errors import HarnessError
from harness.record import runinfo
from harness.supervisor.supervise import Interrupted, signals_raise

ROOT = package_data.path("harness.products.notebook")  # the server's root folder: the notebook's package
NOTEBOOK = Path("review.ipynb")  # relative to ROOT
HOST = "127.0.0.1"  # never another interface: the server executes code
RUNS_VARIABLE = "HARNESS_REVIEW_RUNS"
RUNS_DIR_VARIABLE = "HARNESS_RUNS_DIR"  # the folder whose latest run it reviews when none is named
# a checkout's venv, or an install from a clone (the extra into the harness's environment; pipx: `'.[notebook]'`)
INSTALL_HINT = "`bash .ci/install notebook` (a checkout), or `pip install '.[notebook]'` in the clone it came from"


def run_list(run_dirs: list[str]) -> str:
    """The runs as the notebook reads them (absolute, ``:``-separated); each must be a run or a web session."""
    out = []
    for d in run_dirs:
        p = Path(d).resolve()
        if not (p / runinfo.RUN_JSON).is_file():
            raise HarnessError(f"{d} is not a run directory (no run.json): pass a directory that `harness run` made")
        out.append(str(p))
    return ":".join(out)


def environment(run_dirs: list[str]) -> dict[str, str]:
    """The server's environment (its kernels inherit it): the chosen runs, or none to let the notebook pick; and
    the runs folder made absolute (the user's ``HARNESS_RUNS_DIR``, else ``./runs``), as the kernels start in the
    notebook's package folder, not where the user is."""
    runs = run_list(run_dirs)
    env = child_environment({RUNS_VARIABLE: runs} if runs else None, drop=() if runs else (RUNS_VARIABLE,))
    env[RUNS_DIR_VARIABLE] = str(Path.cwd() / (env.get(RUNS_DIR_VARIABLE) or "runs"))
    return env


def url(port: int, token: str) -> str:
    return f"http://{HOST}:{port}/lab/tree/{NOTEBOOK.as_posix()}?token={token}"


def command(port: int, token: str, open_browser: bool) -> list[str]:
    """JupyterLab on loopback, rooted at the notebook's package folder, opening it, stopping without asking."""
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.ip={HOST}", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={ROOT}", f"--IdentityProvider.token={token}",
           f"--ServerApp.default_url=/lab/tree/{NOTEBOOK.as_posix()}", "--ServerApp.answer_yes=True",
           # loopback only: no update check against PyPI, no extension manager listing PyPI's packages
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly"]
    if os.geteuid() == 0:  # containers and CI run as root; Jupyter refuses root unless told
        cmd.append("--allow-root")
    if not open_browser:
        cmd.append("--no-browser")
    return cmd


def _check_port(port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            raise HarnessError(f"port {port} on {HOST} is taken: choose another with --port") from None


def cmd_notebook(run_dirs: list[str], port: int, open_browser: bool) -> int:
    if importlib.util.find_spec("jupyterlab") is None:
        raise HarnessError(f"JupyterLab is not installed: install it with {INSTALL_HINT} (the notebook extra)")
    env = environment(run_dirs)
    _check_port(port)
    token = secrets.token_urlsafe(24)
    runs = env.get(RUNS_VARIABLE)
    chosen = runs.replace(":", ", ") if runs else f"the latest run under {env[RUNS_DIR_VARIABLE]}"
    print(f"harness: the review notebook on {chosen}: {url(port, token)} (Ctrl-C stops the server)", flush=True)
    # its own session: a terminal's Ctrl-C reaches this process only, which stops the server exactly once
    proc = subprocess.Popen(command(port, token, open_browser), env=env, cwd=ROOT, start_new_session=True)
    with signals_raise():  # SIGINT, SIGTERM, SIGHUP: stop the server, never leave it running on its own
        try:
            return proc.wait()
        except Interrupted as e:
            proc.terminate()  # Jupyter shuts its kernels down on SIGTERM
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return 0 if e.signum == signal.SIGINT else 128 + e.signum  # Ctrl-C is how a user stops it
