"""Count every request a client sends, and its bytes, into the current step's Work.

One boto3 client per service is shared by every Locust user of a process
(creating sessions per user stalls the event loop), so the step a request
belongs to is carried in a context variable: greenlets and threads each have
their own. Retries pass through ``before-send`` again and so count as requests.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.datastore.work import Work

_current: contextvars.ContextVar[Work | None] = contextvars.ContextVar("harness_work", default=None)


@contextmanager
def recording(work: Work) -> Iterator[Work]:
    """Attribute every instrumented request made inside the block to ``work``."""
    token = _current.set(work)
    try:
        yield work
    finally:
        _current.reset(token)


def _on_send(request: Any, event_name: str, **_: Any) -> None:
    work = _current.get()
    if work is None:
        return None
    work.request(event_name.rsplit(".", 1)[-1])
    body = request.body
    if body is not None:
        try:
            work.bytes_sent += len(body)
        except TypeError:  # a file-like streaming body
            pass
    return None


def _on_after_call(http_response: Any, parsed: Any, model: Any = None, **_: Any) -> None:
    work = _current.get()
    if work is None or http_response is None:
        return
    if model is not None and model.has_streaming_output:
        # the body is still unread; reading it here would consume it
        length = parsed.get("ContentLength", 0) if isinstance(parsed, dict) else 0
        work.bytes_received += int(length or 0)
    else:
        work.bytes_received += len(http_response.content or b"")


def instrument(client: Any) -> Any:
    """Register the counting hooks on ``client`` (idempotent per client)."""
    if getattr(client, "_harness_instrumented", False):
        return client
    client.meta.events.register("before-send", _on_send, unique_id="harness-count-send")
    client.meta.events.register("after-call", _on_after_call, unique_id="harness-count-recv")
    client._harness_instrumented = True
    return client
