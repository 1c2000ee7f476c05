"""`harness notebook RUN_DIR` serves the review notebook in a real JupyterLab on loopback, on the chosen runs.

The test does what a user's browser does: it reads the URL the command prints, asks the server's REST API
for the notebook (``/api/contents``), runs code in one of the server's own kernels (over its websocket) to see
which runs the notebook will open, then executes the notebook it was served with nbclient on those runs and
stops the server with Ctrl-C (SIGINT), as a user would.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import nbformat
import numpy as np
import pytest
import websocket
from nbclient import NotebookClient

from harness.products.notebook.command import ROOT as SERVED
from tests.e2e.conftest import ROOT, clean_env
from tests.support.synthetic import make_run

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _wait_for(base: str, token: str, proc: subprocess.Popen, deadline_s: float = 120) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        assert proc.poll() is None, "the server exited before it answered"
        try:
            _get(f"{base}/api/status?token={token}")
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"JupyterLab did not answer at {base} within {deadline_s:g} s")


def _kernel_says(base: str, token: str, code: str) -> str:
    """Run ``code`` in a kernel the server starts (its environment is the server's) and return what it printed."""
    req = urllib.request.Request(f"{base}/api/kernels?token={token}", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        kernel = json.loads(r.read())["id"]
    ws = websocket.create_connection(f"{base.replace('http', 'ws')}/api/kernels/{kernel}/channels?token={token}",
                                     timeout=60)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                                       "session": uuid.uuid4().hex, "version": "5.3"},
                            "parent_header": {}, "metadata": {}, "channel": "shell",
                            "content": {"code": code, "silent": False, "store_history": False,
                                        "user_expressions": {}, "allow_stdin": False}}))
        out = ""
        while True:
            m = json.loads(ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                out += m["content"]["text"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return out
    finally:
        ws.close()


def test_notebook_serves_the_review_notebook_on_the_chosen_runs(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    falling = make_run(runs / "falling", workers=4, duration_s=300.0, scenario="legacy-gsi",
                       rate=lambda t: 1.0 * (1 - 0.8 * t / 300), steps={"pull_ms": lambda t: 20 + 400 * t / 300},
                       counts={"pull_items_read": lambda t: 5 + 3 * t})
    steady = make_run(runs / "steady", workers=8, duration_s=300.0, scenario="pruning",
                      rate=lambda t: np.full_like(t, 0.8), t0=1_750_010_000.0)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "notebook", str(falling), str(steady), "--port",
                             str(port), "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(), cwd=tmp_path)  # outside the checkout, as an installed harness runs
    try:
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:(\d+))/lab/tree/review\.ipynb\?token=(\S+) ", line)
        assert m and int(m.group(2)) == port, line
        base, token = m.group(1), m.group(3)
        assert f"{falling}, {steady}" in line  # the runs it opens, named
        _wait_for(base, token, proc)

        listing = _get(f"{base}/api/contents?token={token}")  # the server's root: the notebook's package folder
        assert "review.ipynb" in {c["name"] for c in listing["content"] if c["type"] == "notebook"}
        served = _get(f"{base}/api/contents/review.ipynb?token={token}&content=1")
        assert served["type"] == "notebook" and served["content"]["cells"]
        with pytest.raises(urllib.error.HTTPError) as refused:  # no token, no notebook: the server runs code
            _get(f"{base}/api/contents/review.ipynb")
        assert refused.value.code == 403

        chosen = _kernel_says(base, token, "import os; print(os.environ['HARNESS_REVIEW_RUNS'])").strip()
        assert chosen == f"{falling}:{steady}"
        # the runs folder where the command was started (made absolute: the kernel starts in the package folder)
        runs_dir = _kernel_says(base, token, "import os; print(os.environ['HARNESS_RUNS_DIR'])").strip()
        assert runs_dir == str(runs)
        # the notebook's first cell in the server's own kernel, where it starts: it finds the harness and the runs
        first = next(c.source for c in nbformat.from_dict(served["content"]).cells if c.cell_type == "code")
        assert f"Reviewing:\n  {falling}\n  {steady}" in _kernel_says(base, token, first)

        nb = nbformat.from_dict(served["content"])
        monkeypatch.setenv("HARNESS_REVIEW_RUNS", chosen)  # the kernel's environment, as the server's has it
        monkeypatch.setenv("MPLBACKEND", "Agg")
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(SERVED)}}).execute()
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        text = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
        assert f"Reviewing:\n  {falling}\n  {steady}" in text
        assert "legacy-gsi / dynamodb / 4 workers" in text and "pruning / dynamodb / 8 workers" in text
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        assert images >= 2 * 3 + 1  # each run's figures and the overlay
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read()[-2000:]
    with socket.socket() as s:  # nothing is left listening (SO_REUSEADDR: closed connections may linger)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()


def test_notebook_refuses_what_is_not_a_run_in_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "harness", "notebook", str(tmp_path)], capture_output=True, text=True,
                       env=clean_env(), cwd=ROOT, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (f"harness: {tmp_path} is not a run directory (no run.json): pass a directory that "
                                "`harness run` made")


def test_notebook_names_a_taken_port(tmp_path):
    run = make_run(tmp_path / "r", workers=2, duration_s=60.0, rate=lambda t: np.full_like(t, 0.5))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([sys.executable, "-m", "harness", "notebook", str(run), "--port", str(port),
                            "--no-browser"], capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=60)
    assert p.returncode == 2 and p.stderr.strip() == (f"harness: port {port} on 127.0.0.1 is taken: choose another "
                                                      "with --port")



def test_sigterm_stops_the_server_too(tmp_path):
    """A service manager's SIGTERM to `harness notebook` must not leave JupyterLab running on its own."""
    run = make_run(tmp_path / "r", workers=2, duration_s=60.0, rate=lambda t: np.full_like(t, 0.5))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "notebook", str(run), "--port", str(port),
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=clean_env(), cwd=ROOT)
    try:
        line = proc.stdout.readline()
        token = re.search(r"token=(\S+) ", line).group(1)
        _wait_for(f"http://127.0.0.1:{port}", token, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    with pytest.raises(OSError):  # nothing answers any more: the server went with it
        _get(f"http://127.0.0.1:{port}/api/status?token={token}")
