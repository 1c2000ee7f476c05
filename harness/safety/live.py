"""``harness check --live``: read a run's final state from its table/bucket now, not from the run directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from harness.aws.clients import make_clients
from harness.aws.endpoints import Endpoints, classify, configured_endpoints, is_loopback
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.errors import HarnessError
from harness.safety.state import snapshot


def live_state(run_dir: str | Path, *, aws: bool = False) -> dict:
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise HarnessError(f"{run_dir} is not a run directory (no run.json): give the directory `harness run` made")
    info = json.loads(path.read_text())
    ddb, s3 = configured_endpoints()
    if aws:
        endpoints = Endpoints(None, None, "aws")
    elif ddb or s3:
        endpoints = Endpoints(ddb, s3, classify(ddb or s3))
    else:
        was = (info.get("endpoint") or {}).get(info.get("backend", "dynamodb")) or "AWS"
        raise HarnessError(f"--live needs the run's endpoint (it ran against {was}): set AWS_ENDPOINT_URL, "
                           "or pass --aws; an embedded server is gone once its run ends (check without --live)")
    urls = [u for u in (endpoints.dynamodb, endpoints.s3) if u]
    if urls and all(is_loopback(u) for u in urls):
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "harness-local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "harness-local")
    clients = make_clients(endpoints, total_attempts=2)
    res, sc = info.get("resources") or {}, (info.get("scenario") or {}).get("datastore") or {}
    if info.get("backend") == "s3":
        backend = S3Backend(clients.s3, res["bucket"], sc.get("s3_index", "sharded"), create=False)
    else:
        backend = DynamoBackend(clients.dynamodb, res["table"], sc.get("gsi", "per-model"), create=False)
    try:
        return snapshot(backend)
    except (BotoCoreError, ClientError) as e:
        where = endpoints.dynamodb or endpoints.s3 or "AWS"
        raise HarnessError(f"cannot read the run's {info.get('backend')} state at {where}: {e}") from None
