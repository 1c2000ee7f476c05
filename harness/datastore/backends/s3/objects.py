"""Small JSON/bytes object helpers on one bucket (and key prefix) that count their work.

``retry`` wraps each request (swamp's sync-layer retry, ``retry.py``); None sends each once more
only as the client's own retries do."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from harness.core.aws_errors import is_not_found
from harness.core.work import Work, recording

T = TypeVar("T")


class S3Objects:
    def __init__(self, client: Any, bucket: str, prefix: str,
                 retry: Callable[[Callable[[], Any]], Any] | None = None) -> None:
        self.client, self.bucket, self.prefix, self.retry = client, bucket, prefix, retry

    def _send(self, op: Callable[[], T]) -> T:
        return self.retry(op) if self.retry is not None else op()

    def key(self, rel: str) -> str:
        return self.prefix + rel

    def get(self, rel: str, work: Work) -> tuple[bytes, str] | None:
        try:
            with recording(work):
                out, body = self._send(lambda: self._get(rel))
        except ClientError as e:
            if is_not_found(e):
                return None
            raise
        return body, out["ETag"]

    def _get(self, rel: str) -> tuple[dict, bytes]:
        out = self.client.get_object(Bucket=self.bucket, Key=self.key(rel))
        return out, out["Body"].read()

    def get_json(self, rel: str, work: Work) -> tuple[dict, str] | None:
        got = self.get(rel, work)
        return (json.loads(got[0]), got[1]) if got else None

    def put(self, rel: str, data: bytes, work: Work, *, if_match: str | None = None,
            if_none_match: bool = False) -> str:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key(rel), "Body": data}
        if if_match:
            kwargs["IfMatch"] = if_match
        if if_none_match:
            kwargs["IfNoneMatch"] = "*"
        with recording(work):
            out = self._send(lambda: self.client.put_object(**kwargs))
        return out["ETag"]

    def head_bucket(self, work: Work) -> None:
        """swamp's credential preflight: one HeadBucket."""
        with recording(work):
            self._send(lambda: self.client.head_bucket(Bucket=self.bucket))

    def head(self, rel: str, work: Work) -> dict | None:
        """HeadObject's answer (``LastModified``, ``ETag``, ...), or None when the object is missing."""
        try:
            with recording(work):
                return self._send(lambda: self.client.head_object(Bucket=self.bucket, Key=self.key(rel)))
        except ClientError as e:
            if is_not_found(e):
                return None
            raise

    def delete_one(self, rel: str, work: Work) -> None:
        """One DeleteObject (swamp's lock deletes its object this way; a missing object is no error on S3)."""
        with recording(work):
            self._send(lambda: self.client.delete_object(Bucket=self.bucket, Key=self.key(rel)))

    def delete(self, rels: Iterable[str], work: Work) -> None:
        keys = [{"Key": self.key(r)} for r in rels]
        for i in range(0, len(keys), 1000):
            with recording(work):
                batch = keys[i:i + 1000]
                self._send(lambda b=batch: self.client.delete_objects(Bucket=self.bucket,
                                                                     Delete={"Objects": b, "Quiet": True}))

    def list(self, rel_prefix: str, work: Work) -> list[tuple[str, str]]:
        """(relative key, ETag) of every object under ``rel_prefix``."""
        found, token = [], None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.key(rel_prefix)}
            if token:
                kwargs["ContinuationToken"] = token
            with recording(work):
                out = self._send(lambda kw=kwargs: self.client.list_objects_v2(**kw))
            found += [(o["Key"][len(self.prefix):], o["ETag"]) for o in out.get("Contents", [])]
            if not out.get("IsTruncated"):
                return found
            token = out["NextContinuationToken"]
