"""The harness's locustfile, with DynamoDB answering instantly (see bench/instant.py)."""

import harness.load.locustfile as lf
from bench.instant import install
from harness.load.locustfile import *  # noqa: F401,F403

_make_clients = lf.make_clients


def _instant_clients(*args, **kwargs):
    clients = _make_clients(*args, **kwargs)
    install(clients.dynamodb)
    return clients


lf.make_clients = _instant_clients
