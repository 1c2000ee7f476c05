"""The harness's locustfile, with DynamoDB answering instantly (see bench/instant.py).

For ``bench/harness_overhead.py``: the process's CPU while its users run (from
the last user spawned to the test's stop: no imports, no table set-up, no
shutdown), and the instant store's own CPU in that time, go to
``RUN_DIR/bench_cpu.json`` so the bench can put CPU per iteration, all in and
less the stand-in, beside boto3's.
"""

import json
import time
from pathlib import Path

from locust import events

import harness.load.locustfile as lf
from bench.instant import install
from bench.instant_store import InstantDynamo
from harness.load.locustfile import *  # noqa: F401,F403

_make_clients = lf.make_clients
_STORE = InstantDynamo()  # one per process, like a table: every test's clients answer from it
_WINDOW: dict = {}


def _instant_clients(*args, **kwargs):
    clients = _make_clients(*args, **kwargs)
    install(clients.dynamodb, _STORE)
    return clients


lf.make_clients = _instant_clients


def _mark(name: str) -> None:
    _WINDOW[name] = {"ts": time.time(), "cpu_s": time.process_time(), "store_cpu_s": _STORE.cpu_s}


@events.spawning_complete.add_listener
def _spawned(**_) -> None:
    _mark("from")


@events.test_stopping.add_listener
def _stopping(environment, **_) -> None:
    _mark("to")
    run_dir = getattr(environment.parsed_options, "run_dir", "")
    if run_dir and "from" in _WINDOW:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        Path(run_dir, "bench_cpu.json").write_text(json.dumps(_WINDOW))
