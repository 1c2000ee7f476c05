"""OTLP/HTTP in: swamp's JSON encoding and the Python SDK's protobuf decode to the same spans, a body that
cannot be read is a counted 400 (never an exception), and the mapping makes the row's columns from spans."""

from __future__ import annotations

import gzip
import json

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from harness.record.otlp.decode import Span
from harness.record.otlp.mapping import SWAMP, parse_overrides, row_values
from harness.record.otlp.receiver import Receiver, TraceBook

TRACE, PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def swamp_json(int_as_string: bool) -> bytes:
    """A request as swamp's JsonTraceSerializer writes it (otlp-transformer 0.57.2, hex ids, string times)."""
    n = (lambda v: str(v)) if int_as_string else (lambda v: v)
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "swamp"}}], "droppedAttributesCount": 0},
        "scopeSpans": [{"scope": {"name": "@webframp/dynamodb-datastore", "version": ""}, "spans": [{
            "traceId": TRACE, "spanId": "00f067aa0ba902b7", "parentSpanId": PARENT, "name": "dynamodb-datastore "
            "lock acquire", "kind": 1, "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000012500000", "attributes": [
                {"key": "lock.wait_duration_ms", "value": {"intValue": n(12)}},
                {"key": "lock.contended", "value": {"boolValue": True}},
                {"key": "aws.dynamodb.table_names", "value": {"arrayValue": {"values": [{"stringValue": "t"}]}}},
                {"key": "aws.dynamodb.consumed_capacity.total", "value": {"doubleValue": 1.5}}],
            "droppedAttributesCount": 0, "events": [{"attributes": [], "name": "retry",
                                                     "timeUnixNano": "1700000000001000000"}],
            "droppedEventsCount": 0, "status": {"code": 2, "message": "Lock timeout"}, "links": [],
            "droppedLinksCount": 0}]}]}]}).encode()


def accept(body: bytes, ctype: str = "application/json", query: str = "", enc: str = "") -> tuple[int, TraceBook]:
    book = TraceBook()
    book.expect(TRACE, PARENT, {"iteration": 3})
    status, out, kind = Receiver(book).accept("POST", "/v1/traces", query, {"content-type": ctype,
                                                                            "content-encoding": enc}, body)
    if status == 200:
        assert (out, kind) in ((b"{}", "application/json"), (b"", "application/x-protobuf"))
    return status, book


@pytest.mark.parametrize("int_as_string", [False, True])
def test_swamps_json_encoding_decodes_intvalue_as_number_or_string(int_as_string):
    status, book = accept(swamp_json(int_as_string))
    assert status == 200
    (s,) = book.traces[TRACE].spans
    assert (s.span_id, s.parent_id, s.name) == ("00f067aa0ba902b7", PARENT, "dynamodb-datastore lock acquire")
    assert s.duration_ms == 12.5 and s.status == "error" and s.status_message == "Lock timeout"
    assert s.attributes == {"lock.wait_duration_ms": 12, "lock.contended": True,
                            "aws.dynamodb.table_names": ["t"], "aws.dynamodb.consumed_capacity.total": 1.5}
    assert s.events == ["retry"]


def test_gzip_bodies_are_read():
    assert accept(gzip.compress(swamp_json(False)), enc="gzip")[0] == 200


def test_protobuf_from_the_python_sdk_decodes_to_the_same_spans():
    class Keep(SpanProcessor):
        spans: list = []

        def on_end(self, span):
            self.spans.append(span)

    keep = Keep()
    provider = TracerProvider()
    provider.add_span_processor(keep)
    tracer = provider.get_tracer("t")
    ctx = TraceContextTextMapPropagator().extract({"traceparent": f"00-{TRACE}-{PARENT}-01"})
    s = tracer.start_span("dynamodb-datastore commitPush", context=ctx, start_time=10**18,
                          attributes={"datastore.entries": 42, "datastore.fast_path_hit": False, "x": 0.5})
    s.end(end_time=10**18 + 3_000_000)
    status, book = accept(encode_spans(keep.spans).SerializeToString(), "application/x-protobuf")
    assert status == 200
    (got,) = book.traces[TRACE].spans
    assert got.parent_id == PARENT and got.name == "dynamodb-datastore commitPush" and got.duration_ms == 3.0
    assert got.attributes == {"datastore.entries": 42, "datastore.fast_path_hit": False, "x": 0.5}


@pytest.mark.parametrize("body, ctype, enc", [
    (b"{not json", "application/json", ""),
    (b'{"resourceSpans": 7}', "application/json", ""),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00f067aa0ba902b7"}]}]}]})
     .encode(), "application/json", ""),
    (b"\xff\xfe not a protobuf message", "application/x-protobuf", ""),
    (b"plain", "text/plain", ""),
    (b"not gzip", "application/json", "gzip"),
])
def test_a_malformed_body_is_a_counted_400(body, ctype, enc):
    status, book = accept(body, ctype, query=f"cmd={TRACE}", enc=enc)
    assert status == 400
    assert book.counts["rejected"] == 1 and book.traces[TRACE].rejected == 1 and book.traces[TRACE].spans == []


def test_only_post_v1_traces():
    r = Receiver(TraceBook())
    assert r.accept("POST", "/v1/logs", "", {}, b"{}")[0] == 404
    assert r.accept("GET", "/v1/traces", "", {}, b"")[0] == 405


def test_spans_of_a_closed_trace_are_late_and_of_no_trace_unjoined():
    t = iter([0.0, 100.0])
    book = TraceBook(clock=lambda: next(t))
    trace = book.expect(TRACE, PARENT, {"iteration": 1})
    book.close(trace)
    book.add([Span(TRACE, "1" * 16, PARENT, "late", 0, 1), Span("f" * 32, "2" * 16, "", "stray", 0, 1)])
    late, unjoined = book.take_strays()
    assert [(x[0].meta["iteration"], x[1].name) for x in late] == [(1, "late")] and [s.name for s in unjoined] == [
        "stray"]
    assert trace.spans == [] and book.take_strays() == ([], [])


def _s(name, sid, parent, start, end, **attrs):
    return Span(TRACE, sid, parent, name, start * 1_000_000, end * 1_000_000, attributes=attrs)


def test_the_mapping_takes_the_first_rule_that_matches_and_each_request_counts_for_its_nearest_step():
    spans = [
        _s("swamp.cli", "c" * 16, PARENT, 0, 100),
        _s("swamp.lock.acquire", "a" * 16, "c" * 16, 0, 30),
        _s("dynamodb-datastore lock acquire", "b" * 16, "a" * 16, 1, 29, **{"lock.wait_duration_ms": 25}),
        _s("DynamoDB PutItem", "d" * 16, "b" * 16, 2, 4, **{"aws.dynamodb.consumed_capacity.total": 1.0}),
        _s("swamp.model.method.run", "e" * 16, "c" * 16, 30, 60),
        _s("DynamoDB Query", "f" * 16, "e" * 16, 31, 35, **{"aws.dynamodb.consumed_capacity.total": 0.5}),
        _s("swamp.cli.teardown", "1" * 16, PARENT, 100, 200),
        _s("dynamodb-datastore lock acquire", "2" * 16, "1" * 16, 100, 150, **{"lock.key": ".datastore.lock"}),
        _s("dynamodb-datastore commitPush", "3" * 16, "1" * 16, 150, 190, **{"datastore.entries": 9}),
    ]
    m = row_values(spans)
    v = m.values
    assert v["lock_wait_ms"] == 25.0  # the extension's attribute, not core's 30 ms around it, not both
    assert v["commit_lock_ms"] == 50.0  # no attribute: its duration; under teardown: the commit's lock
    assert v["method_ms"] == 30.0 and v["commit_ms"] == 40.0 and v["index_entries_written"] == 9
    assert (v["lock_requests"], v["method_requests"], v["method_request_ms"]) == (1, 1, 4.0)
    assert v["commit_requests"] == 0 and v["pull_ms"] is None and v["pull_requests"] is None
    assert v["write_units"] == 1.0 and v["read_units"] == 0.5 and v["requests"] == 2 and v["lock_attempts"] == 1
    assert v["bytes_received"] is None and v["registry_bytes"] is None
    assert m.column_of["b" * 16] == "lock_wait_ms" and "a" * 16 not in m.column_of

    cols, requests = parse_overrides({"commit_ms": [{"span": "myext seal", "value": "seal.ms"}],
                                      "requests": ["HTTP *"]}, "driver.spans")
    mine = SWAMP.with_overrides(cols, requests)
    got = row_values([_s("myext seal", "9" * 16, PARENT, 0, 10, **{"seal.ms": 4}),
                      _s("HTTP PUT", "8" * 16, "9" * 16, 1, 2)], mine).values
    assert got["commit_ms"] == 4.0 and got["commit_requests"] == 1 and got["lock_wait_ms"] is None
    with pytest.raises(ValueError, match="not a column spans can fill"):
        parse_overrides({"total_ms": []}, "driver.spans")
