"""An OTLP ``ExportTraceServiceRequest`` body (JSON or protobuf) as plain ``Span`` records.

OTLP/JSON as swamp sends it (``JsonTraceSerializer`` of ``@opentelemetry/otlp-transformer`` 0.57.2, called
with hex ids: camelCase keys, trace and span ids as hex, times as decimal strings of nanoseconds, ``intValue``
as a JSON number) and as the OTLP specification writes it (``intValue`` as a string); protobuf as the
OpenTelemetry SDKs send it (``opentelemetry-proto``'s messages). Anything else is a ``Malformed`` body: the
receiver answers 400 and counts it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

STATUS = {0: "unset", 1: "ok", 2: "error", "STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok",
          "STATUS_CODE_ERROR": "error"}


class Malformed(ValueError):
    """The body is not an ExportTraceServiceRequest this receiver can read."""


@dataclass
class Span:
    """One span: ids as lowercase hex ("" for no parent), times in epoch nanoseconds, attributes flattened."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    status: str = "unset"
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)  # event names ("retry" per retry, as swamp's extensions add)

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6


def decode(body: bytes, content_type: str) -> list[Span]:
    """The spans of one request body; ``Malformed`` when it cannot be read as its content type says."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in ("application/x-protobuf", "application/protobuf"):
        return _from_protobuf(body)
    if kind in ("application/json", ""):
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise Malformed(f"not JSON: {e}") from None
        return _from_json(doc)
    raise Malformed(f"unsupported content-type {content_type!r} (application/json or application/x-protobuf)")


# ---- JSON ------------------------------------------------------------------------------------


def _hex_id(value: Any, size: int, what: str, required: bool = True) -> str:
    """An id as hex: OTLP/JSON's hex string; base64 (protobuf's JSON mapping of bytes) is read too."""
    if value in (None, ""):
        if required:
            raise Malformed(f"a span has no {what}")
        return ""
    if not isinstance(value, str):
        raise Malformed(f"{what} must be a string, got {type(value).__name__}")
    text = value.lower()
    if len(text) == size * 2:
        try:
            bytes.fromhex(text)
            return text
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == size:
        return raw.hex()
    raise Malformed(f"{what} {value!r} is neither {size * 2} hex digits nor {size} bytes of base64")


def _nanos(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise Malformed(f"{what} must be a number of nanoseconds")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise Malformed(f"{what} must be nanoseconds (a number or a decimal string), got {value!r}")


def any_value(v: Any) -> Any:
    """An OTLP AnyValue (JSON) as a Python value; ``intValue`` as a number or as a string."""
    if not isinstance(v, dict):
        raise Malformed(f"an attribute value must be an AnyValue object, got {v!r}")
    if "stringValue" in v:
        return str(v["stringValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        x = v["intValue"]
        try:
            return int(x) if not isinstance(x, bool) else _bad(x)
        except (TypeError, ValueError):
            raise Malformed(f"intValue {x!r} is not an integer") from None
    if "doubleValue" in v:
        try:
            return float(v["doubleValue"])
        except (TypeError, ValueError):
            raise Malformed(f"doubleValue {v['doubleValue']!r} is not a number") from None
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in v:
        return str(v["bytesValue"])
    return None  # an empty AnyValue


def _bad(x: Any) -> Any:
    raise ValueError(x)


def attributes(kvs: Any) -> dict[str, Any]:
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise Malformed("attributes must be a list of {key, value}")
    out = {}
    for kv in kvs:
        if not isinstance(kv, dict) or "key" not in kv:
            raise Malformed(f"an attribute must be {{key, value}}, got {kv!r}")
        out[str(kv["key"])] = any_value(kv.get("value") or {})
    return out


def _from_json(doc: Any) -> list[Span]:
    if not isinstance(doc, dict):
        raise Malformed("the body must be a JSON object (ExportTraceServiceRequest)")
    out = []
    for rs in _list(doc.get("resourceSpans"), "resourceSpans"):
        for ss in _list(rs.get("scopeSpans"), "scopeSpans"):
            for s in _list(ss.get("spans"), "spans"):
                status = s.get("status") or {}
                out.append(Span(
                    trace_id=_hex_id(s.get("traceId"), 16, "traceId"), span_id=_hex_id(s.get("spanId"), 8, "spanId"),
                    parent_id=_hex_id(s.get("parentSpanId"), 8, "parentSpanId", required=False),
                    name=str(s.get("name", "")), start_ns=_nanos(s.get("startTimeUnixNano", 0), "startTimeUnixNano"),
                    end_ns=_nanos(s.get("endTimeUnixNano", 0), "endTimeUnixNano"),
                    status=STATUS.get(status.get("code", 0), "unset"), status_message=str(status.get("message", "")),
                    attributes=attributes(s.get("attributes")),
                    events=[str(e.get("name", "")) for e in _list(s.get("events"), "events")]))
    return out


def _list(value: Any, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise Malformed(f"{what} must be a list of objects")
    return value


# ---- protobuf --------------------------------------------------------------------------------


def _pb_value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return getattr(v, kind)


def _from_protobuf(body: bytes) -> list[Span]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except DecodeError as e:
        raise Malformed(f"not an ExportTraceServiceRequest (protobuf): {e}") from None
    out = []
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                if len(s.trace_id) != 16 or len(s.span_id) != 8:
                    raise Malformed("a span's trace_id must be 16 bytes and its span_id 8")
                out.append(Span(trace_id=s.trace_id.hex(), span_id=s.span_id.hex(), parent_id=s.parent_span_id.hex(),
                                name=s.name, start_ns=int(s.start_time_unix_nano), end_ns=int(s.end_time_unix_nano),
                                status=STATUS.get(int(s.status.code), "unset"), status_message=s.status.message,
                                attributes={kv.key: _pb_value(kv.value) for kv in s.attributes},
                                events=[e.name for e in s.events]))
    return out


def empty_response(content_type: str) -> tuple[bytes, str]:
    """An empty ExportTraceServiceResponse in the request's encoding (full success)."""
    if (content_type or "").split(";", 1)[0].strip().lower() in ("application/x-protobuf", "application/protobuf"):
        return b"", "application/x-protobuf"
    return b"{}", "application/json"
