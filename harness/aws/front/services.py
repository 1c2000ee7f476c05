"""What the front reads of a request on the wire: its service, its operation, its parameters, what it costs.

DynamoDB's JSON protocol names the operation in ``X-Amz-Target`` and carries the
parameters as JSON: they are priced by the same rules the harness's own clients
are (``harness.aws.capacity`` through ``harness.aws.instrument``'s ``CallInfo``),
with the table's keys and GSIs as ``DescribeTable`` tells them (``SHAPES``, learnt
from any Create/DescribeTable answer passing through, or asked by the front).
S3's REST names the operation by method, path and query (path-style addressing,
as the harness configures its clients and the stand-ins expect).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from harness.aws.capacity import TableShape, conditional_failure_charges, write_charges
from harness.aws.instrument import SHAPES, SIZES, WRITE_OPS, CallInfo, learn_size, register_shape
from harness.aws.keyload import THROTTLE_CODES, charged_keys

DDB_TARGET = b"x-amz-target"
S3_WRITES = {"PutObject", "DeleteObject", "DeleteObjects", "CopyObject", "CompleteMultipartUpload", "UploadPart",
             "CreateMultipartUpload", "PutBucketTagging", "AbortMultipartUpload", "CreateBucket", "DeleteBucket"}


def ddb_request(target: bytes, body: bytes) -> CallInfo:
    """A DynamoDB request's operation and parameters (not yet priced: ``price``, once its tables' shapes are
    known)."""
    op = target.decode("latin-1").rsplit(".", 1)[-1]
    try:
        params = json.loads(body) if body else {}
    except ValueError:
        params = {}
    return CallInfo(op, params if isinstance(params, dict) else {})


def price(info: CallInfo) -> CallInfo:
    """What a write costs, from its parameters and the shapes known (as ``harness.aws.instrument`` prices)."""
    if info.op in WRITE_OPS:
        info.writes = write_charges(info.op, info.params, SHAPES, SIZES)
    return info


def tables_of(info: CallInfo) -> set[str]:
    """The tables a request names (their shapes price it)."""
    p = info.params
    out = {p["TableName"]} if isinstance(p.get("TableName"), str) else set()
    out.update(p.get("RequestItems") or {})
    for t in p.get("TransactItems") or []:
        for x in t.values():
            if isinstance(x, dict) and "TableName" in x:
                out.add(x["TableName"])
    return out


def learn_shape(op: str, parsed: dict) -> None:
    if op in ("DescribeTable", "CreateTable"):
        t = parsed.get("Table") or parsed.get("TableDescription")
        if t and "KeySchema" in t:
            register_shape(TableShape.from_description(t))


def ddb_error_code(parsed: dict) -> str:
    """``com.amazonaws.dynamodb.v20120810#ThrottlingException`` -> ``ThrottlingException``."""
    return str(parsed.get("__type", "")).rsplit("#", 1)[-1]


def ddb_charges(info: CallInfo, status: int, parsed: dict | None) -> tuple[list, str]:
    """(what the attempt cost, its error code or ""), by the rules ``harness.aws.instrument`` counts by."""
    if status == 200 and parsed is not None:
        learn_size(info, parsed)
        return info.writes + info.reads(parsed), ""
    if status == 200:  # a write whose answer need not be read
        return list(info.writes), ""
    code = ddb_error_code(parsed or {})
    if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
        return conditional_failure_charges(info.op, info.params, SHAPES), code
    return [], code


def throttled_keys(info: CallInfo, code: str) -> list:
    return charged_keys(info.op, info.params, info.writes) if code in THROTTLE_CODES else []


def s3_op(method: str, target: str) -> tuple[str, str]:
    """(operation, ``bucket/dir/`` prefix) of a path-style S3 request."""
    u = urlsplit(target)
    path = unquote(u.path).lstrip("/")
    q = parse_qs(u.query, keep_blank_values=True)
    bucket, _, key = path.partition("/")
    prefix = path.rsplit("/", 1)[0] + "/" if "/" in path else path + "/"
    if not bucket:
        return "ListBuckets", prefix
    if not key:
        return _bucket_op(method, q), prefix
    return _object_op(method, q), prefix


def _bucket_op(method: str, q: dict[str, Any]) -> str:
    if method == "GET":
        if "tagging" in q:
            return "GetBucketTagging"
        return "ListObjectsV2" if q.get("list-type") == ["2"] else "ListObjects"
    if method == "PUT":
        return "PutBucketTagging" if "tagging" in q else "CreateBucket"
    if method == "POST" and "delete" in q:
        return "DeleteObjects"
    return {"DELETE": "DeleteBucket", "HEAD": "HeadBucket"}.get(method, method)


def _object_op(method: str, q: dict[str, Any]) -> str:
    if method == "PUT":
        return "UploadPart" if "partNumber" in q else "PutObject"
    if method == "POST":
        return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in q else "DeleteObject"
    return {"GET": "GetObject", "HEAD": "HeadObject"}.get(method, method)
