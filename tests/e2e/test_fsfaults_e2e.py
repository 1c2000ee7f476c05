"""A run directory belongs to one run, and a refused start leaves it reusable (issue 54, items 2, 3 and 7): real
`harness run` processes on the embedded default.

- two runs started at the same instant on one --run-dir: one runs to its end (exit 0, every row, nothing of
  it deleted), the other is refused with one line before it starts anything (before: both passed the
  emptiness check, the loser's cleanup deleted the winner's dynalite store and the winner exited 5);
- an unreachable AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_S3: one line naming that variable, and no run
  directory left behind, so the same command again says the same (before: "check AWS_ENDPOINT_URL", a
  directory holding plan.json, and the rerun refused as "not empty").
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import ROOT, clean_env, harness, rows

pytestmark = pytest.mark.e2e


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# `harness` as `python -m harness` runs it, once its imports are done and a shared go-file appears: the two
# processes then parse, plan and claim at the same instant (their imports alone differ by a second)
AT_ONCE = """
import os, sys, time
import harness.cli.main, harness.supervisor.run, harness.config.build, harness.aws.standin
go = sys.argv.pop(1)
open(go + "." + str(os.getpid()), "w").close()
while not os.path.exists(go):
    time.sleep(0.0005)
raise SystemExit(harness.cli.main.main(sys.argv[1:]))
"""


def test_two_runs_started_at_the_same_instant_on_one_run_dir(tmp_path):
    run_dir, go = tmp_path / "shared", tmp_path / "go"
    argv = [sys.executable, "-c", AT_ONCE, str(go), "run", "namespaced", "--duration", "3s", "--users", "2",
            "--no-report", "--run-dir", str(run_dir)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                              cwd=ROOT) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("go.*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()  # both ready: go
        done = []
        for p in procs:
            out, err = p.communicate(timeout=180)
            done.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 2], done
    _, _, refused = next(d for d in done if d[0] == 2)
    assert refused.count("\n") == 1 and "Traceback" not in refused, refused
    assert refused.startswith(f"harness: run directory {run_dir} ") and refused.endswith(
        ": choose another --run-dir\n"), refused
    _, out, err = next(d for d in done if d[0] == 0)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "finished" and not info.get("failed_parts"), info  # the winner lost nothing
    assert len(rows(run_dir)) > 0 and f"iterations recorded in {run_dir}" in out
    assert not (run_dir / ".harness-run").exists()  # released at the end


@pytest.mark.parametrize("variable,backend", [("AWS_ENDPOINT_URL_DYNAMODB", "dynamodb"),
                                              ("AWS_ENDPOINT_URL_S3", "s3")])
def test_a_refused_start_names_its_variable_and_leaves_nothing_behind(tmp_path, variable, backend):
    url = f"http://127.0.0.1:{_closed_port()}"
    env = clean_env(**{variable: url}, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y")
    run_dir = tmp_path / "runs" / "refused"
    line = (f"harness: cannot reach {backend} at {url}: is the server running? check {variable}\n")
    for attempt in range(2):  # the same command again: the same line, not "already exists and is not empty"
        p = harness("run", "namespaced", "--backend", backend, "--duration", "5s", "--no-report", "--run-dir",
                    str(run_dir), env=env, timeout=120)
        assert (p.returncode, p.stderr) == (2, line), (attempt, p.stderr)
        assert not run_dir.exists()
    run_dir.mkdir()  # a directory the user made stays, empty
    p = harness("run", "namespaced", "--backend", backend, "--duration", "5s", "--no-report", "--run-dir",
                str(run_dir), env=env, timeout=120)
    assert (p.returncode, p.stderr) == (2, line) and run_dir.is_dir() and not any(run_dir.iterdir())
