"""A DynamoDB that answers instantly: canned responses from a botocore ``before-send`` hook.

boto3 still serializes, signs and parses every call; nothing leaves the
process. Used to measure the harness's own CPU against boto3's, and the rate a
single Locust process can drive when the backend costs nothing.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.awsrequest import AWSResponse

TABLE = {
    "TableName": "instant", "TableStatus": "ACTIVE", "TableArn": "arn:aws:dynamodb:us-east-1:0:table/instant",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "KeySchema": [
        {"AttributeName": "gsi1pk", "KeyType": "HASH"}, {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}],
}
CANNED: dict[str, dict] = {
    "DescribeTable": {"Table": TABLE},
    "ListTagsOfResource": {"Tags": [{"Key": "harness:owner", "Value": "harness"}]},
    "ListTables": {"TableNames": []},
    "UpdateItem": {"Attributes": {"fence": {"N": "1"}}},
    "GetItem": {"Item": {"pk": {"S": "x"}, "sk": {"S": "SEQ"}, "seq": {"N": "1"},
                         "partitions": {"SS": ["w0-0/system/a"]}}},
    "Query": {"Items": [], "Count": 0, "ScannedCount": 0},
    "BatchWriteItem": {"UnprocessedItems": {}},
    "BatchGetItem": {"Responses": {}, "UnprocessedKeys": {}},
    "PutItem": {}, "DeleteItem": {},
}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any):
        yield self.body


_BODIES = {op: json.dumps(body).encode() for op, body in CANNED.items()}


def _answer(request: Any, event_name: str, **_: Any) -> AWSResponse:
    op = event_name.rsplit(".", 1)[-1]
    body = _BODIES.get(op, b"{}")
    headers = {"x-amzn-requestid": "instant", "content-type": "application/x-amz-json-1.0",
               "content-length": str(len(body))}
    return AWSResponse(request.url, 200, headers, _Raw(body))


def install(client: Any) -> Any:
    """Make ``client`` (a DynamoDB client) answer every call instantly, after the harness's own hooks."""
    client.meta.events.register_last("before-send.dynamodb", _answer, unique_id="bench-instant")
    return client


def serve(host: str = "127.0.0.1", port: int = 0) -> None:
    """An instant DynamoDB over real HTTP (keep-alive, TCP_NODELAY): canned answers by X-Amz-Target."""
    import os
    import socket

    from gevent.pywsgi import WSGIHandler, WSGIServer

    class NoDelay(WSGIHandler):
        def handle(self) -> None:
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().handle()

    def app(environ: dict, start_response: Any) -> list[bytes]:
        op = environ.get("HTTP_X_AMZ_TARGET", ".").rsplit(".", 1)[-1]
        environ["wsgi.input"].read()
        body = _BODIES.get(op, b"{}")
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", "instant"),
                                  ("Content-Length", str(len(body)))])
        return [body]

    server = WSGIServer((host, port), app, handler_class=NoDelay, log=None, error_log=None)
    server.start()
    os.write(1, f"READY http://{host}:{server.server_port}\n".encode())
    server.serve_forever()


if __name__ == "__main__":
    serve()
