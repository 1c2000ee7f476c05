"""In-process moto, one request at a time, as DynamoDB and S3 apply each request atomically.

moto's mock is not thread-safe: a backend's concurrent calls (a swamp commit's ten uploads, each adding to the one
registry item) raced inside moto's UpdateItem, which deep-copies the stored item while another thread's update
changes it ("dictionary changed size during iteration", seen in CI under two CPU hogs). The services apply each
request atomically, and so does the harness's own moto server (served by gevent, one request at a time); the tests'
in-process mock does the same here. The requests still come from the backends' threads, in whatever order those
threads send them.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_LOCK = threading.RLock()  # re-entrant: a request moto answers by sending another stays in the same thread


def serialize() -> None:
    """Every request moto's in-process mock answers, answered whole before the next (idempotent)."""
    from moto.core.botocore_stubber import BotocoreStubber

    if getattr(BotocoreStubber.process_request, "atomic", False):
        return
    answer = BotocoreStubber.process_request

    @functools.wraps(answer)
    def one_at_a_time(self: Any, request: Any) -> Any:
        with _LOCK:
            return answer(self, request)

    one_at_a_time.atomic = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = one_at_a_time  # type: ignore[method-assign]
