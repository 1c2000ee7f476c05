"""The reference command's spans, under the names swamp core and its datastore extensions use.

Every request the command makes is noted by botocore's hooks (``RequestLog``: its operation, times, the step
whose Work it counted into, its status, capacity units and returned counts); once the command is done,
``export`` builds the invocation's spans with those times through the OpenTelemetry SDK and sends them in
one request with its OTLP/HTTP exporter (protobuf) to the endpoint the command was given, under the
``TRACEPARENT`` it was given. The layout is swamp's as far as its code shows it (docs/command-driver.md):

- ``swamp.cli.bootstrap`` (process start to ready), ``swamp.cli`` around the command's action, and
  ``swamp.cli.teardown`` (where swamp flushes its datastore sync: push, commit, release), each a root;
- under ``swamp.cli``: ``swamp.lock.acquire`` (``lock.key`` = ``<lock>#<8 hex>``, ``lock.label`` datastore) around
  the extension's ``lock acquire`` for ``method run`` and ``model delete``; the pull (``dynamodb-datastore
  pullChanged`` / ``s3-datastore pull``); ``swamp.model.method.run``, ``swamp.model.delete``, ``swamp.data.prune``;
- under ``swamp.cli.teardown``: ``preparePush``, the commit's own lock acquire (two-phase), ``commitPush``, the
  catalog export (``s3-datastore exportCatalog``; on DynamoDB, whose extension has no span of its own for it,
  ``harness-swamp exportCatalog``) and ``lock release``;
- one ``DynamoDB <Op>`` / ``S3 <Op>`` span per request under its step's span, with the attributes the
  extensions set (table or bucket, index, HTTP status, consumed capacity, count, scanned count, response size,
  a ``retry`` event per retry).

Each step span lasts exactly the model's step time, so a row made from these spans has the model's step times.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from harness.core.work import current_work

EXT = {"dynamodb": "dynamodb-datastore", "s3": "s3-datastore"}
SCOPES = {"dynamodb": "@webframp/dynamodb-datastore", "s3": "@swamp/s3-datastore"}
REQUEST = {"dynamodb": "DynamoDB", "s3": "S3"}
TEARDOWN_STEPS = ("push", "commit_lock", "commit", "export", "release", "collect")
COMMANDS = {"run": ("model", "method run", "swamp.model.method.run"), "delete": ("model", "delete",
                                                                                 "swamp.model.delete"),
            "prune": ("data", "prune", "swamp.data.prune")}
_KEY = "harness_refcmd"


@dataclass
class Call:
    op: str
    start_ns: int
    end_ns: int = 0
    work: Any = None
    status: int | None = None
    error: str = ""
    sends: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)


class RequestLog:
    """Every request of one client, as botocore's hooks see it (retries are sends of the same call)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.calls: list[Call] = []

    def install(self, client: Any) -> RequestLog:
        ev = client.meta.events
        ev.register("before-parameter-build", self._params, unique_id="refcmd-params")
        ev.register("before-send", self._send, unique_id="refcmd-send")
        ev.register("after-call", self._done, unique_id="refcmd-done")  # after the accounting's own after-call
        ev.register("after-call-error", self._failed, unique_id="refcmd-failed")
        return self

    def _params(self, params: dict, model: Any, context: dict | None = None, **_: Any) -> None:
        if context is None:
            return
        w = current_work()
        attrs: dict[str, Any] = {"rpc.system": "aws-api", "rpc.service": REQUEST[self.backend],
                                 "rpc.method": model.name}
        if self.backend == "dynamodb":
            attrs["db.system.name"] = "dynamodb"
            if params.get("TableName"):
                attrs["aws.dynamodb.table_names"] = [params["TableName"]]
            if params.get("IndexName"):
                attrs["aws.dynamodb.index_name"] = params["IndexName"]
        else:
            if params.get("Bucket"):
                attrs["aws.s3.bucket"] = params["Bucket"]
            if params.get("Key"):
                attrs["aws.s3.key"] = params["Key"]
        units = (w.read_units + w.write_units) if w is not None else 0.0
        context[_KEY] = (Call(model.name, time.time_ns(), work=w, attributes=attrs), units)

    def _send(self, request: Any, **_: Any) -> None:
        got = (getattr(request, "context", None) or {}).get(_KEY)
        if got is not None:
            got[0].sends += 1

    def _done(self, http_response: Any, parsed: Any, context: dict | None = None, **_: Any) -> None:
        got = (context or {}).pop(_KEY, None)
        if got is None:
            return
        call, units0 = got
        call.end_ns = time.time_ns()
        call.status = getattr(http_response, "status_code", None)
        parsed = parsed if isinstance(parsed, dict) else {}
        code = (parsed.get("Error") or {}).get("Code")
        if code:
            call.error = str(code)
        w = call.work
        if self.backend == "dynamodb":
            units = ((w.read_units + w.write_units) if w is not None else 0.0) - units0
            if units > 0:
                call.attributes["aws.dynamodb.consumed_capacity.total"] = units
            for k, attr in (("Count", "aws.dynamodb.count"), ("ScannedCount", "aws.dynamodb.scanned_count")):
                if isinstance(parsed.get(k), int):
                    call.attributes[attr] = parsed[k]
        elif isinstance(parsed.get("ContentLength"), int):
            call.attributes["http.response.body.size"] = parsed["ContentLength"]
        self.calls.append(call)

    def _failed(self, exception: BaseException | None = None, context: dict | None = None, **_: Any) -> None:
        got = (context or {}).pop(_KEY, None)
        if got is None:
            return
        call = got[0]
        call.end_ns, call.error = time.time_ns(), type(exception).__name__ if exception else "error"
        self.calls.append(call)


@dataclass
class Invocation:
    """What one call did, for its spans."""

    command: dict[str, Any]
    backend: str
    lock_key: str
    lock: Any  # the scenario's LockConfig
    catalog_rows: int
    steps: list[tuple[Any, int, int]]  # (Step, start ns, end ns)
    calls: list[Call]
    started_ns: int
    ready_ns: int
    done_ns: int
    saved_ns: int
    error: BaseException | None = None


def _step_attributes(inv: Invocation, name: str, work: Any, pushed: int) -> tuple[str, dict[str, Any]]:
    """The span name and attributes of one of the model's steps, as swamp's code names them."""
    ext, c = EXT[inv.backend], inv.command
    if name in ("lock", "commit_lock"):
        return f"{ext} lock acquire", {"lock.key": inv.lock_key, "lock.timeout_ms": int(inv.lock.wait_s * 1000),
                                       "lock.ttl_ms": int(inv.lock.ttl_s * 1000),
                                       "lock.contended": work.lock_attempts > 1}
    if name == "release":
        return f"{ext} lock release", {"lock.key": inv.lock_key}
    if name == "pull":
        return (f"{ext} pullChanged" if inv.backend == "dynamodb" else f"{ext} pull"), {
            "datastore.files_pulled": work.files_pulled, "datastore.files_deleted": 0,
            "datastore.fast_path_hit": work.files_pulled == 0 and work.total_requests <= 1}
    if name == "push":
        return f"{ext} preparePush", {"datastore.files_planned_push": work.files_pushed}
    if name == "commit":
        return f"{ext} commitPush", {"datastore.files_pushed": pushed, "datastore.files_deleted": 0,
                                     "datastore.entries": work.index_entries_written}
    if name == "export":
        return ("s3-datastore exportCatalog" if inv.backend == "s3" else "harness-swamp exportCatalog"), {
            "datastore.rows": work.catalog_rows}
    if name == "method":
        return "swamp.model.method.run", {"model.id_or_name": c.get("instance", ""),
                                          "method.name": c.get("method", "")}
    if name == "delete":
        return "swamp.model.delete", {"model.id_or_name": c.get("instance", "")}
    if name == "prune":
        return "swamp.data.prune", {}
    # the harness's own steps swamp has none of (a fenced commit's garbage, collected after the release): a span
    # name of its own, which the mapping counts where the model driver counts the step (release_ms)
    return f"harness-swamp {name}", {}


def export(endpoint: str, traceparent: str | None, inv: Invocation) -> None:
    """Build the invocation's spans with their recorded times and send them (one OTLP/HTTP request)."""
    from opentelemetry import context as otel_context
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.trace import Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    class Collect(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[Any] = []

        def on_end(self, span: Any) -> None:
            self.spans.append(span)

    collect = Collect()
    provider = TracerProvider(resource=Resource.create({"service.name": "harness-swamp"}))
    provider.add_span_processor(collect)
    core, ext = provider.get_tracer("swamp"), provider.get_tracer(SCOPES[inv.backend])
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent}) if traceparent else \
        otel_context.Context()
    error_status = Status(StatusCode.ERROR, str(inv.error)[:300]) if inv.error is not None else None
    cli, teardown, cli_end = _root_spans(core, parent, inv)
    step_span = _step_spans(core, ext, parent, inv, cli, teardown)
    _request_spans(ext, parent, inv, cli, step_span)
    for span, end, is_failed, wrapper in step_span.values():
        if is_failed and error_status is not None:
            span.set_status(error_status)
        span.end(end_time=end)
        if wrapper is not None:
            wrapper.end(end_time=end)
    if error_status is not None:
        cli.set_status(error_status)
    cli.end(end_time=cli_end)
    teardown.end(end_time=inv.saved_ns)
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=5)
    try:
        exporter.export(collect.spans)
    finally:
        exporter.shutdown()


def _child_of(span: Any, parent: Any) -> Any:
    from opentelemetry import trace as api

    return api.set_span_in_context(span, parent)


def _root_spans(core: Any, parent: Any, inv: Invocation) -> tuple[Any, Any, int]:
    """The three roots: ``swamp.cli.bootstrap`` (ended), ``swamp.cli`` and ``swamp.cli.teardown`` (open), and
    when ``swamp.cli`` ends (its action's last step)."""
    area, sub, _ = COMMANDS[inv.command["command"]]
    core.start_span("swamp.cli.bootstrap", context=parent, start_time=inv.started_ns).end(end_time=inv.ready_ns)
    action = [t for t in inv.steps if t[0].name not in TEARDOWN_STEPS]
    flush = [t for t in inv.steps if t[0].name in TEARDOWN_STEPS]
    cli_end = max([e for _, _, e in action], default=inv.ready_ns)
    cli = core.start_span("swamp.cli", context=parent, start_time=inv.ready_ns, attributes={
        "swamp.command": area, "swamp.subcommand": sub, "swamp.args": " ".join(
            str(inv.command.get(k, "")) for k in ("method", "instance") if inv.command.get(k))})
    teardown = core.start_span("swamp.cli.teardown", context=parent, start_time=min(
        [s for _, s, _ in flush], default=inv.done_ns))
    return cli, teardown, cli_end


def _step_spans(core: Any, ext: Any, parent: Any, inv: Invocation, cli: Any, teardown: Any) -> dict[int, Any]:
    """One open span per step under its root (the lock's inside core's ``swamp.lock.acquire``), by its Work's
    id: (span, end, whether the command failed in it, the wrapper around it)."""
    failed_step = next((s.name for s, _, _ in reversed(inv.steps) if s.name != "release"), None) \
        if inv.error is not None else None
    pushed = sum(s.work.files_pushed for s, _, _ in inv.steps if s.name == "push")
    step_span: dict[int, Any] = {}
    for step, start, end in inv.steps:
        root = teardown if step.name in TEARDOWN_STEPS else cli
        name, attrs = _step_attributes(inv, step.name, step.work, pushed)
        ctx = _child_of(root, parent)
        wrapper = None
        if step.name == "lock" and inv.command["command"] in ("run", "delete"):  # core's own span around it
            wrapper = core.start_span("swamp.lock.acquire", context=ctx, start_time=start, attributes={
                "lock.key": f"{inv.lock_key}#{secrets.token_hex(4)}", "lock.label": "datastore"})
            ctx = _child_of(wrapper, parent)
        if step.name in ("lock", "commit_lock"):
            attrs["lock.wait_duration_ms"] = step.ms
        tracer = core if name.startswith("swamp.") else ext
        span = tracer.start_span(name, context=ctx, start_time=start, attributes=attrs)
        step_span[id(step.work)] = (span, end, step.name == failed_step, wrapper)
    return step_span


def _request_spans(ext: Any, parent: Any, inv: Invocation, cli: Any, step_span: dict[int, Any]) -> None:
    """One ended span per request, under its step's span (a heartbeat's under the release's, else the cli's)."""
    from opentelemetry.trace import Status, StatusCode

    release = next((v for v in step_span.values() if v[0].name.endswith("lock release")), None)
    for call in inv.calls:
        owner = step_span.get(id(call.work)) if call.work is not None else None
        owner = owner or release  # a heartbeat's renewals count for the release, as the model counts them
        ctx = _child_of(owner[0], parent) if owner is not None else _child_of(cli, parent)
        span = ext.start_span(f"{REQUEST[inv.backend]} {call.op}", context=ctx, start_time=call.start_ns,
                              attributes={**call.attributes, **({"http.response.status_code": call.status}
                                                                 if call.status is not None else {})})
        for n in range(2, call.sends + 1):
            span.add_event("retry", {"retry.attempt": n - 1})
        if call.error:
            span.set_attribute("error.type", call.error)
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=call.end_ns or call.start_ns)
