"""Count what every request did into the current step's Work: requests, bytes, capacity units.

One boto3 client per service is shared by every Locust user of a process
(creating sessions per user stalls the event loop), so the step a request
belongs to is carried in a context variable: greenlets and threads each have
their own. Retries pass through ``before-send`` again and so count as requests.

DynamoDB read and write units are computed from the real request and response
by DynamoDB's rules (``harness.aws.capacity``), not taken from the server's
``ConsumedCapacity`` (moto reports fixed numbers), so they mean the same on
every endpoint.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass, field
from typing import Any

from harness.aws.capacity import (
    KB,
    Charge,
    Index,
    TableShape,
    conditional_failure_charges,
    item_id,
    read_charges,
    write_charges,
)
from harness.core.aws_errors import EARLIER_UNANSWERED, attempt_unanswered, mark_unanswered
from harness.core.item_size import item_size
from harness.core.work import current_work, note_send

__all__ = ["instrument", "register_shape", "register_table", "current_call", "SHAPES"]
SHAPES: dict[str, TableShape] = {}  # table name -> keys and GSIs, learned from Create/DescribeTable or registered
# (table, pk, sk) -> the size of an item over 1 KB as an UpdateItem returned it (ReturnValues=ALL_NEW): the next
# update of that item is priced by it, before it is sent (the throttling model) and after (the accounting)
SIZES: dict[tuple[str, str, str], int] = {}


@dataclass
class CallInfo:
    """The DynamoDB call in flight in this greenlet: its parameters and what it costs.

    Writes are priced from the request (the throttling model needs them before
    sending); reads from the response, once, for both the accounting and the
    throttling model.
    """

    op: str
    params: dict
    writes: list[Charge] = field(default_factory=list)
    _reads: list[Charge] | None = None

    def reads(self, parsed: dict) -> list[Charge]:
        if self._reads is None:
            self._reads = read_charges(self.op, self.params, parsed, SHAPES)
        return self._reads


_call: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar("harness_call", default=None)


def current_call() -> CallInfo | None:
    return _call.get()


def register_shape(shape: TableShape) -> None:
    SHAPES[shape.name] = shape


def register_table(name: str, pk: str, sk: str | None, indexes: dict[str, tuple[str, str | None]]) -> None:
    """Register a table's keys and GSIs from plain names (for callers that hold no ``TableShape``)."""
    register_shape(TableShape(name, pk, sk, [Index(n, k[0], k[1]) for n, k in indexes.items()]))


_T0 = "harness_t0"


def _on_before_call(context: dict | None = None, **_: Any) -> None:
    """The call starts: its time runs to after-call (retries, injected latency and throttles included)."""
    if context is not None and current_work() is not None:
        context[_T0] = time.perf_counter()


def _on_attempt(request_dict: dict | None = None, caught_exception: BaseException | None = None,
                response: tuple | None = None, **_: Any) -> None:
    """After each attempt (botocore's needs-retry): one whose answer never came is noted in the call's context,
    so the call's final error, whatever its code, is known to follow an attempt that may have landed."""
    context = (request_dict or {}).get("context")
    if context is not None and attempt_unanswered(caught_exception, response):
        context[EARLIER_UNANSWERED] = True


def _note_unanswered(context: dict | None, exc: BaseException | None = None, parsed: Any = None) -> None:
    """The call failed after an attempt without an answer: say so on its error (see ``aws_errors``)."""
    if not context or not context.get(EARLIER_UNANSWERED):
        return
    if exc is not None:
        mark_unanswered(exc)
    if isinstance(parsed, dict) and "Error" in parsed:  # the ClientError botocore raises carries this dict
        parsed.setdefault("ResponseMetadata", {})[EARLIER_UNANSWERED] = True


def _on_call_error(exception: BaseException | None = None, context: dict | None = None, **kw: Any) -> None:
    _note_unanswered(context, exc=exception)
    _on_call_done(context=context, **kw)


def _on_call_done(context: dict | None = None, **_: Any) -> None:
    work = current_work()
    if work is None or context is None:
        return
    t0 = context.pop(_T0, None)
    if t0 is not None:
        work.request_ms += (time.perf_counter() - t0) * 1000


def _on_send(request: Any, event_name: str, **_: Any) -> None:
    note_send()  # a commit's seal is timed by its send (harness.core.work.sending)
    work = current_work()
    if work is None:
        return None
    work.request(event_name.rsplit(".", 1)[-1])
    body = request.body
    if body is not None:
        try:
            work.bytes_sent += len(body)
        except TypeError:  # a streaming body: S3 PutObject's aws-chunked wrapper (botocore's default checksums)
            work.bytes_sent += _declared_length(request.headers)
    return None


def _declared_length(headers: Any) -> int:
    """The payload length a streaming request declares (aws-chunked: the decoded length), else 0."""
    for name in ("X-Amz-Decoded-Content-Length", "Content-Length"):
        value = headers.get(name)
        if value:
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return 0


def _on_after_call(http_response: Any, parsed: Any, model: Any = None, context: dict | None = None,
                   **_: Any) -> None:
    """The call is done: its time (as ``_on_call_done``) and the bytes it received, in one hook."""
    _note_unanswered(context, parsed=parsed)
    work = current_work()
    if work is None:
        return
    t0 = context.pop(_T0, None) if context is not None else None
    if t0 is not None:
        work.request_ms += (time.perf_counter() - t0) * 1000
    if http_response is None:
        return
    if model is not None and model.has_streaming_output:
        # the body is still unread; reading it here would consume it
        length = parsed.get("ContentLength", 0) if isinstance(parsed, dict) else 0
        work.bytes_received += int(length or 0)
    else:
        work.bytes_received += len(http_response.content or b"")


WRITE_OPS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


def _on_params(params: dict, model: Any, **_: Any) -> None:
    op = model.name
    _call.set(CallInfo(op, params, write_charges(op, params, SHAPES, SIZES) if op in WRITE_OPS else []))


def learn_size(info: CallInfo, parsed: dict) -> None:
    """An update that returned its whole item: bill it by that item's size (DynamoDB bills the larger of the
    item before and after; an ADD only grows it), and remember the size for the item's next update."""
    attrs = parsed.get("Attributes")
    if info.op != "UpdateItem" or not attrs or info.params.get("ReturnValues") != "ALL_NEW":
        return
    shape = SHAPES.get(info.params["TableName"]) or TableShape(info.params["TableName"])
    size = item_size(attrs)
    if size > KB:
        SIZES[item_id(shape, shape.name, info.params.get("Key", {}))] = size
        info.writes = write_charges(info.op, info.params, SHAPES, SIZES)


def _on_ddb_after_call(parsed: Any, model: Any, **_: Any) -> None:
    info = _call.get()
    if info is None or not isinstance(parsed, dict):
        return
    if model.name in ("DescribeTable", "CreateTable"):
        t = parsed.get("Table") or parsed.get("TableDescription")
        if t and "KeySchema" in t:
            register_shape(TableShape.from_description(t))
    work = current_work()
    if work is None:
        return
    code = parsed.get("Error", {}).get("Code")
    if code is None:
        learn_size(info, parsed)
        charges = info.writes + info.reads(parsed)
    elif code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
        charges = conditional_failure_charges(info.op, info.params, SHAPES)
    else:
        charges = []  # throttled, invalid, ...: nothing was written or read
    for c in charges:
        if c.kind == "read":
            work.read_units += c.units
        else:
            work.write_units += c.units


def instrument(client: Any) -> Any:
    """Register the counting hooks on ``client`` (idempotent per client)."""
    if getattr(client, "_harness_instrumented", False):
        return client
    ev = client.meta.events
    # first: a send is noted before any other before-send hook answers it (moto's mock) or raises (a fault hook
    # that lands the request itself and loses its answer: the explorer's), so a landed attempt is never missed
    ev.register_first("before-send", _on_send, unique_id="harness-count-send")
    ev.register("after-call", _on_after_call, unique_id="harness-count-recv")  # the call's time too
    ev.register("before-call", _on_before_call, unique_id="harness-time-start")
    ev.register("after-call-error", _on_call_error, unique_id="harness-time-error")
    ev.register("needs-retry", _on_attempt, unique_id="harness-attempts")
    if client.meta.service_model.service_name == "dynamodb":
        ev.register("before-parameter-build.dynamodb", _on_params, unique_id="harness-ddb-params")
        ev.register("after-call.dynamodb", _on_ddb_after_call, unique_id="harness-ddb-units")
    client._harness_instrumented = True
    return client
