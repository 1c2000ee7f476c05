"""boto3 sessions and clients: one session per credentials kind and one client per service per process.

A new Session costs 0.1-0.4 s of blocking CPU; made per Locust user it stalls
the event loop and the master drops the worker. So clients are built once and
shared (botocore clients are thread- and greenlet-safe).

Two kinds of credentials sign requests (the run plan says which, per service):
``chain`` is boto3's own chain (environment, profile, instance role); ``dummy``
is fixed local keys for a stand-in, in a session that ignores the user's
profile (a profile missing here would fail, and real keys have no business
signing for a local stand-in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.configprovider import ConstantProvider

from harness.aws.endpoints import Endpoints
from harness.aws.instrument import instrument

DEFAULT_REGION = "us-east-1"
SERVICES = ("dynamodb", "s3")
# letters and digits only: DynamoDB Local refuses any other access key id (UnrecognizedClientException)
DUMMY_KEYS = {"aws_access_key_id": "harnesslocal", "aws_secret_access_key": "harnesslocal"}


@dataclass
class Clients:
    dynamodb: Any  # None when the run does not use the service (nothing can be sent for it)
    s3: Any
    endpoints: Endpoints


def new_session(credentials: str = "chain", region: str | None = None) -> boto3.session.Session:
    """A session signing with boto3's chain, or with the local keys (``dummy``) whatever the user's profile."""
    if credentials == "dummy":
        core = botocore.session.Session()
        core.get_component("config_store").set_config_provider("profile", ConstantProvider(None))
        return boto3.session.Session(botocore_session=core, region_name=region, **DUMMY_KEYS)
    return boto3.session.Session(region_name=region)


class Sessions:
    """One session per credentials kind, made on first use and kept for the process's life."""

    def __init__(self, region: str | None = None) -> None:
        self.region = region
        self._made: dict[str, boto3.session.Session] = {}

    def get(self, credentials: str) -> boto3.session.Session:
        if credentials not in self._made:
            self._made[credentials] = new_session(credentials, self.region)
        return self._made[credentials]


def make_clients(endpoints: Endpoints, *, pool: int = 64, region: str | None = None,
                 connect_timeout: float = 5.0, read_timeout: float = 30.0,
                 total_attempts: int = 4, session: boto3.session.Session | None = None,
                 sessions: Mapping[str, boto3.session.Session] | None = None,
                 services: Iterable[str] = SERVICES, attempts: Mapping[str, int] | None = None) -> Clients:
    """``total_attempts`` counts the first try (botocore's own ``max_attempts`` counts retries); ``attempts``
    overrides it per service (swamp's S3 client makes one).

    ``sessions`` gives each service its session (its credentials); ``session`` is the one for the rest
    (pass the process's own to make more clients cheaply: its service models are loaded once). A service
    not in ``services`` gets no client.
    """
    def cfg(service: str) -> Config:
        return Config(
            max_pool_connections=pool,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retries={"mode": "standard", "total_max_attempts": (attempts or {}).get(service, total_attempts)},
            tcp_keepalive=True,
            s3={"addressing_style": "path"},
            ignore_configured_endpoint_urls=True,  # the plan's URL, or AWS: never an AWS_ENDPOINT_URL* boto3 finds
            # botocore checks every request's parameters against the service model before sending (a fifth of
            # its serializing CPU on a DynamoDB call); the harness's requests are built by its own code, and a bad
            # one is still refused by the service (or its stand-in) as a ValidationException
            parameter_validation=False,
        )
    wanted = set(services)
    made: dict[str, Any] = {}
    for service in SERVICES:
        if service not in wanted:
            made[service] = None
            continue
        s = (sessions or {}).get(service) or session
        if s is None:
            s = session = boto3.session.Session()
        url = endpoints.dynamodb if service == "dynamodb" else endpoints.s3
        made[service] = instrument(s.client(service, region_name=region or s.region_name or DEFAULT_REGION,
                                            endpoint_url=url, config=cfg(service)))
    return Clients(dynamodb=made["dynamodb"], s3=made["s3"], endpoints=endpoints)
