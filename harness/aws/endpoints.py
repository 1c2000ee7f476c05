"""Where one process's requests go: a URL per service (None: AWS itself), and what kind of endpoint it is.

The URLs are resolved once, per service, in the run plan (``harness.config.endpoints``):
nothing here reads the environment, and nothing is sent to AWS unless the plan says so.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlparse


@dataclass(frozen=True)
class Endpoints:
    dynamodb: str | None
    s3: str | None
    kind: str  # "embedded" (a stand-in the harness started), "aws", or "other" (DynamoDB Local, a user's moto...)


def is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_kind(url: str | None) -> str:
    """What a configured URL is: an AWS URL (or none) is ``aws``, anything else ``other``."""
    if url is None:
        return "aws"
    host = urlparse(url).hostname or ""
    return "aws" if host.endswith(".amazonaws.com") else "other"
