"""Bytes sent count S3 uploads too: botocore sends PutObject's body as an aws-chunked stream without a length."""

from __future__ import annotations

from harness.aws.instrument import instrument
from harness.core.work import Work, recording


def test_a_put_objects_payload_counts_as_bytes_sent(aws):
    _, s3 = aws
    s3.create_bucket(Bucket="bytes-test")
    w = Work()
    with recording(w):
        s3.put_object(Bucket="bytes-test", Key="k", Body=b"x" * 5000)
    assert dict(w.requests) == {"PutObject": 1}
    assert 5000 <= w.bytes_sent < 5200  # the payload (and whatever framing the client adds), not 0
    empty = Work()
    with recording(empty):
        s3.put_object(Bucket="bytes-test", Key="e", Body=b"")
    assert empty.bytes_sent < 200


def test_a_dynamodb_requests_json_body_counts_as_before(aws):
    ddb, _ = aws
    instrument(ddb)
    w = Work()
    with recording(w):
        ddb.list_tables()
    assert 0 < w.bytes_sent < 100
