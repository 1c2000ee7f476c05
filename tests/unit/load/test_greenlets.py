"""The backends' executor inside Locust processes: results, map, and killed waiters that leave it working.

The hang it replaces (a ThreadPoolExecutor under gevent, broken by Locust killing users at stop) showed in
about one 5 s Locust run in four on the instant backend; it does not reproduce in a small script, so the
before/after figure is in bench/harness_overhead.py --quick runs, not here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from harness.load.greenlets import executor_for_this_process

ROOT = Path(__file__).resolve().parents[3]

KILLED_WAITERS = textwrap.dedent("""
    from gevent import monkey
    monkey.patch_all()
    import gevent
    from harness.load.greenlets import GreenletExecutor, executor_for_this_process

    ex = executor_for_this_process(4)
    assert isinstance(ex, GreenletExecutor), ex
    done = []

    def call(i):
        gevent.sleep(0.01)
        done.append(i)
        return i

    def user(n):  # what a Locust user does in a commit: submit, then wait on every result
        return [f.result() for f in [ex.submit(call, n * 10 + k) for k in range(6)]]

    for n in range(50):  # Locust stops users by killing their greenlets, here while they wait
        g = gevent.spawn(user, n)
        gevent.sleep(0.005 * (n % 4))
        g.kill()
    assert [f.result(timeout=5) for f in [ex.submit(call, -k) for k in range(1, 9)]] == list(range(-1, -9, -1))
    assert list(ex.map(call, [7, 8, 9], timeout=5)) == [7, 8, 9]

    # the wiring that matters: a Locust process's backends (built by its plan's factory) run on such a pool
    import boto3
    from harness.aws.clients import Clients
    from harness.load.process import HarnessProcess
    from tests.support.plans import make_plan
    clients = Clients(boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                                   aws_access_key_id="x", aws_secret_access_key="x"),
                      boto3.client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                                   aws_access_key_id="x", aws_secret_access_key="x"), None)
    process = HarnessProcess(None, "local", make_clients=None)
    for backend in ("dynamodb", "s3"):
        be = process.factory(make_plan("pruning", backend=backend)).backend(clients)
        assert isinstance(be._pool, GreenletExecutor), (backend, be._pool)
    print("ok", len(done))
""")


def test_killed_waiters_leave_the_executor_working():
    proc = subprocess.run([sys.executable, "-c", KILLED_WAITERS], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok ") and "Semaphore" not in proc.stderr


def test_without_gevent_threads_the_backends_keep_their_own_thread_pool():
    assert executor_for_this_process() is None  # pytest's threads are real threads
