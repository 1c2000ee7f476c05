"""Point the unit tests' S3 at an external endpoint: ``HARNESS_TEST_S3_ENDPOINT=http://...`` (SeaweedFS, moto...).

Without the variable the tests use in-process moto (``mock_aws``). With it,
the ``aws`` fixture's S3 client talks to that endpoint (with the harness's own
client settings: path-style addressing) while DynamoDB stays where
``HARNESS_TEST_DYNAMODB_ENDPOINT`` puts it; each test deletes the buckets it
created, objects first (never a bucket that existed before it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT_ENV = "HARNESS_TEST_S3_ENDPOINT"


def endpoint() -> str | None:
    return os.environ.get(ENDPOINT_ENV) or None


def client(session: boto3.session.Session | None = None) -> Any:
    return (session or boto3).client("s3", endpoint_url=endpoint(), region_name="us-east-1",
                                     config=Config(s3={"addressing_style": "path"}))


def empty_and_delete(c: Any, bucket: str) -> None:
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            c.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    c.delete_bucket(Bucket=bucket)


@contextmanager
def scratch_buckets(c: Any) -> Iterator[None]:
    """Delete the buckets a test created on the external endpoint, and only those.

    They are the ones its CreateBucket calls made (seen through the client's own events): SeaweedFS lists no
    bucket to a caller it has no identity for, so ListBuckets cannot tell which are new.
    """
    made: list[str] = []

    def asked(params: dict, context: dict, **_: Any) -> None:
        context["scratch_bucket"] = params.get("Bucket")

    def created(http_response: Any, context: dict, **_: Any) -> None:
        if http_response.status_code == 200 and context.get("scratch_bucket"):
            made.append(context["scratch_bucket"])

    c.meta.events.register("provide-client-params.s3.CreateBucket", asked)
    c.meta.events.register("after-call.s3.CreateBucket", created)
    try:
        yield
    finally:
        c.meta.events.unregister("provide-client-params.s3.CreateBucket", asked)
        c.meta.events.unregister("after-call.s3.CreateBucket", created)
        for name in dict.fromkeys(made):
            try:
                empty_and_delete(c, name)
            except ClientError:
                pass
