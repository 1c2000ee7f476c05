"""What a run needs before its first iteration, shared by ``harness run`` and the locustfile.

Run ids and resource names, ownership tags, endpoint and credential checks, and
building the backend a scenario asks for. On AWS the harness only writes to
tables and buckets it created (tagged ``harness:owner``) unless told otherwise.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

from harness.aws.clients import DEFAULT_REGION, Clients
from harness.aws.endpoints import Endpoints, classify, configured_endpoints, is_loopback
from harness.aws.instrument import register_table
from harness.datastore.backends.base import Backend
from harness.datastore.backends.dynamodb import GSI_KEYS, TABLE_KEYS, DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.errors import HarnessError
from harness.load.greenlets import executor_for_this_process
from harness.load.scenario import Scenario

OWNER_TAG = "harness:owner"
RUN_TAG = "harness:run"
ENDPOINT_KIND_ENV = "HARNESS_ENDPOINT_KIND"
TARGET_AWS_ENV = "HARNESS_TARGET_AWS"
CAPACITY_SHARE_ENV = "HARNESS_CAPACITY_SHARE"  # each load process models its share of the table's capacity


def new_run_id(scenario: str, backend: str) -> str:
    return f"{scenario}-{backend}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class Resources:
    table: str
    bucket: str
    prefix: str = ""

    @staticmethod
    def for_run(run_id: str, table: str | None = None, bucket: str | None = None) -> Resources:
        base = f"harness-{run_id}".lower()
        return Resources(table=table or base[:255], bucket=bucket or base[:63].rstrip("-"))


def ownership_tags(run_id: str) -> dict[str, str]:
    return {OWNER_TAG: "harness", RUN_TAG: run_id}


def resolve_endpoints(env: dict[str, str] | None = None) -> Endpoints:
    """Endpoints from the standard variables; ``aws`` only when asked for explicitly."""
    env = dict(os.environ) if env is None else env
    ddb, s3 = configured_endpoints(env)
    if env.get(ENDPOINT_KIND_ENV):
        return Endpoints(ddb, s3, env[ENDPOINT_KIND_ENV])
    if ddb or s3:
        return Endpoints(ddb, s3, classify(ddb or s3))
    if env.get(TARGET_AWS_ENV) == "1":
        return Endpoints(None, None, "aws")
    raise HarnessError(
        "no endpoint configured: use `harness run` (it starts an embedded moto server), "
        "set AWS_ENDPOINT_URL, or pass --aws to target AWS itself"
    )


def check_credentials(endpoints: Endpoints) -> None:
    """Real endpoints need real credentials; loopback stand-ins get dummy ones if none are set."""
    creds = boto3.session.Session().get_credentials()
    if creds is not None:
        return
    urls = [u for u in (endpoints.dynamodb, endpoints.s3) if u]
    if urls and all(is_loopback(u) for u in urls):
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "harness-local")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "harness-local")
        return
    where = ", ".join(urls) or "AWS"
    raise HarnessError(
        f"no AWS credentials found for {where}: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    )


def check_reachable(endpoints: Endpoints, backend: str) -> None:
    """One quick call with no retries, so a dead endpoint is one clear line, not a long hang."""
    region = boto3.session.Session().region_name or DEFAULT_REGION
    cfg = Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 1, "mode": "standard"})
    url = endpoints.dynamodb if backend == "dynamodb" else endpoints.s3
    client = boto3.client(backend, endpoint_url=url, region_name=region, config=cfg)
    try:
        if backend == "dynamodb":
            client.list_tables(Limit=1)
        else:
            client.list_buckets()
    except EndpointConnectionError:
        raise HarnessError(
            f"cannot reach {backend} at {url or 'AWS'}: is the server running? check AWS_ENDPOINT_URL"
        ) from None
    except NoCredentialsError:
        raise HarnessError(
            f"no AWS credentials found for {url or 'AWS'}: set AWS_PROFILE or AWS_ACCESS_KEY_ID") from None
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException",
                    "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "AccessDeniedException"):
            raise HarnessError(f"{backend} at {url or 'AWS'} refused the credentials ({code}): check them") from None
        raise HarnessError(f"{backend} at {url or 'AWS'} answered {code}: {e}") from None
    except BotoCoreError as e:
        raise HarnessError(f"cannot use {backend} at {url or 'AWS'}: {e}") from None


def build_backend(scenario: Scenario, clients: Clients, resources: Resources, run_id: str) -> Backend:
    tags = ownership_tags(run_id)
    if scenario.backend == "dynamodb":
        register_table(resources.table, *TABLE_KEYS, GSI_KEYS)  # so write units count the GSI from the first call
        return DynamoBackend(clients.dynamodb, resources.table, scenario.datastore.gsi, tags=tags,
                             executor=executor_for_this_process())
    return S3Backend(clients.s3, resources.bucket, scenario.datastore.s3_index, prefix=resources.prefix, tags=tags,
                     executor=executor_for_this_process())


def owner_tags(clients: Clients, backend: Backend) -> dict[str, str] | None:
    """Tags of an existing table/bucket, or None when it does not exist yet.

    Where the endpoint cannot tag (no TagResource / ListTagsOfResource), the
    tags the harness keeps in a marker item stand in for them.
    """
    if isinstance(backend, DynamoBackend):
        t = backend.describe()
        if t is None:
            return None
        try:
            tags = clients.dynamodb.list_tags_of_resource(ResourceArn=t["TableArn"]).get("Tags", [])
        except ClientError:
            tags = []
        found = {x["Key"]: x["Value"] for x in tags}
        if not found:
            try:
                found = backend.owner_marker()
            except ClientError:
                found = {}
        return found
    assert isinstance(backend, S3Backend)
    try:
        clients.s3.head_bucket(Bucket=backend.bucket)
    except ClientError:
        return None
    try:
        tags = clients.s3.get_bucket_tagging(Bucket=backend.bucket).get("TagSet", [])
    except ClientError:
        tags = []
    return {x["Key"]: x["Value"] for x in tags}


def ensure_owned(clients: Clients, backend: Backend, allow_foreign: bool = False,
                 note: Callable[[str], Any] | None = None) -> None:
    """Create the table/bucket, or refuse to write into one the harness did not create.

    What the endpoint lacks but the harness can do without (TTL, tagging) is
    one ``note`` line each; what it cannot do without is a HarnessError.
    """
    tags = owner_tags(clients, backend)
    name = getattr(backend, "table", None) or getattr(backend, "bucket", "")
    if tags is not None and tags.get(OWNER_TAG) != "harness" and not allow_foreign:
        raise HarnessError(
            f"{backend.name} {name!r} exists and was not created by the harness (no {OWNER_TAG} tag); "
            "choose another name or pass --allow-foreign-resources"
        )
    try:
        backend.ensure()
    except ClientError as e:
        err = e.response.get("Error", {})
        op = getattr(e, "operation_name", "") or "a request"
        where = _endpoint_of(clients, backend)
        raise HarnessError(f"{backend.name} at {where} cannot do {op}, which the harness needs: "
                           f"{err.get('Code', '')} {err.get('Message', '')}".rstrip()) from None
    for line in getattr(backend, "notes", []):
        (note or _note)(f"harness: {backend.name} at {_endpoint_of(clients, backend)}: {line}")
    getattr(backend, "notes", []).clear()


def _endpoint_of(clients: Clients, backend: Backend) -> str:
    e = clients.endpoints
    return (e.dynamodb if backend.name == "dynamodb" else e.s3) or "AWS"


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def delete_owned(clients: Clients, backend: Backend) -> bool:
    """Remove a table/bucket the harness created (never one without its tag)."""
    tags = owner_tags(clients, backend)
    if not tags or tags.get(OWNER_TAG) != "harness":
        return False
    if isinstance(backend, DynamoBackend):
        clients.dynamodb.delete_table(TableName=backend.table)
        return True
    assert isinstance(backend, S3Backend)
    paginator = clients.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=backend.bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            clients.s3.delete_objects(Bucket=backend.bucket, Delete={"Objects": keys, "Quiet": True})
    clients.s3.delete_bucket(Bucket=backend.bucket)
    return True


def endpoint_summary(endpoints: Endpoints) -> dict[str, Any]:
    """For run.json: kind and URLs (never credentials)."""
    return {"kind": endpoints.kind, "dynamodb": endpoints.dynamodb, "s3": endpoints.s3}
