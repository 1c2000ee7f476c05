"""One boto3 Session and one client per service per process.

A new Session costs 0.1-0.4 s of blocking CPU; made per Locust user it stalls
the event loop and the master drops the worker. So clients are built once and
shared (botocore clients are thread- and greenlet-safe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

from harness.aws.endpoints import Endpoints
from harness.aws.instrument import instrument

DEFAULT_REGION = "us-east-1"


@dataclass
class Clients:
    dynamodb: Any
    s3: Any
    endpoints: Endpoints


def make_clients(endpoints: Endpoints, *, pool: int = 64, region: str | None = None,
                 connect_timeout: float = 5.0, read_timeout: float = 30.0,
                 total_attempts: int = 4, session: boto3.session.Session | None = None) -> Clients:
    """``total_attempts`` counts the first try (botocore's own ``max_attempts`` counts retries).

    Pass the process's ``session`` to make more clients cheaply (its service models are loaded once).
    """
    session = session or boto3.session.Session()
    region = region or session.region_name or DEFAULT_REGION
    cfg = Config(
        max_pool_connections=pool,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"mode": "standard", "total_max_attempts": total_attempts},
        tcp_keepalive=True,
        s3={"addressing_style": "path"},
    )
    ddb = session.client("dynamodb", region_name=region, endpoint_url=endpoints.dynamodb, config=cfg)
    s3 = session.client("s3", region_name=region, endpoint_url=endpoints.s3, config=cfg)
    return Clients(dynamodb=instrument(ddb), s3=instrument(s3), endpoints=endpoints)
