"""One stand-in made of two servers: one for DynamoDB, another for S3 (SeaweedFS, or moto).

The run sees a single stand-in (``urls``, ``services``, ``stop()``), named
after its DynamoDB server (what ``--stand-in`` chose), with the S3 server
named in ``s3_stand_in``. The two start together: the S3 server is launched
first and waited for after the DynamoDB server is up, so the start-ups overlap.
"""

from __future__ import annotations

from typing import Any


class StandInPair:
    """``dynamodb`` serves DynamoDB (its S3, if any, is not used); ``s3`` (launch / await_ready) serves S3."""

    def __init__(self, dynamodb: Any, s3: Any) -> None:
        self.dynamodb, self.s3 = dynamodb, s3

    @property
    def name(self) -> str:
        return self.dynamodb.name

    @property
    def version(self) -> str:
        return self.dynamodb.version

    @property
    def urls(self) -> dict[str, str]:
        return {"dynamodb": self.dynamodb.urls["dynamodb"], "s3": self.s3.urls["s3"]}

    @property
    def services(self) -> dict[str, str]:
        return {"dynamodb": self.dynamodb.services["dynamodb"], "s3": self.s3.services["s3"]}

    @property
    def s3_stand_in(self) -> dict[str, str]:
        return {"name": self.s3.name, "version": self.s3.version}

    @property
    def pids(self) -> dict[str, int]:
        return {**getattr(self.dynamodb, "pids", {}), **getattr(self.s3, "pids", {})}

    def start(self, timeout: float = 60.0) -> StandInPair:
        self.s3.launch()
        try:
            self.dynamodb.start()
            self.s3.await_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        try:
            self.dynamodb.stop()
        finally:
            self.s3.stop()
