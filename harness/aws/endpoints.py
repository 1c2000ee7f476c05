"""Where requests go: the embedded moto server, a configured endpoint, or AWS.

Nothing is sent to AWS unless the user asked for it: without any
``AWS_ENDPOINT_URL*`` variable and without ``--aws`` the harness starts its own
moto server on loopback.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import urlparse

ENDPOINT_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3")


@dataclass(frozen=True)
class Endpoints:
    dynamodb: str | None
    s3: str | None
    kind: str  # "moto" (embedded), "aws", or "other" (DynamoDB Local, MinIO, a user's moto...)

    @property
    def is_aws(self) -> bool:
        return self.kind == "aws"


def configured_endpoints(env: dict[str, str] | None = None) -> tuple[str | None, str | None]:
    env = dict(os.environ) if env is None else env
    base = env.get("AWS_ENDPOINT_URL") or None
    return env.get("AWS_ENDPOINT_URL_DYNAMODB") or base, env.get("AWS_ENDPOINT_URL_S3") or base


def any_endpoint_configured(env: dict[str, str] | None = None) -> bool:
    env = dict(os.environ) if env is None else env
    return any(env.get(v) for v in ENDPOINT_VARS)


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def classify(url: str | None) -> str:
    """Endpoint kind for run.json: an AWS URL (or none) is ``aws``, else ``other``."""
    if url is None:
        return "aws"
    host = urlparse(url).hostname or ""
    return "aws" if host.endswith(".amazonaws.com") else "other"
