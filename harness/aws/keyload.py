"""Capacity units per partition key, so a report can name a hot key against DynamoDB's per-partition limits.

DynamoDB gives one partition key at most ~3,000 read and ~1,000 write units a
second however large the table (the legacy ``gsi1pk = "FILE"`` is the spec's
example). The instrumentation already prices every request per key
(``harness.aws.capacity.Charge``: table, index, partition key value, units);
``KeyLoad`` sums those charges per (table, index, key) between drains, counts
the throttled attempts per key, and hands back the top keys of each table and
index per interval (the rest summed under the key ``""``), the rows of
``RUN_DIR/keys.csv`` (``harness.record.keys``).

Entry points: ``install(client, load)`` on a DynamoDB client the accounting
hooks are on (``harness.aws.instrument.instrument``), then ``load.drain(now)``
every few seconds into ``KeysLog.add``. One ``KeyLoad`` per process, shared by
every client and greenlet of it (a lock guards the sums).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from harness.aws.capacity import Charge, conditional_failure_charges, query_key
from harness.aws.instrument import SHAPES, current_call

TOP_KEYS = 20  # per table and index per interval
THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
READ_OPS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})


class KeyLoad:
    """Units and throttles per (table, index, key) since the last ``drain``."""

    def __init__(self, top: int = TOP_KEYS) -> None:
        self.top = top
        self._units: dict[tuple[str, str, str], list[float]] = {}  # -> [read, write, throttles]
        self._guard = threading.Lock()

    def charge(self, charges: Iterable[Charge]) -> None:
        """Add what requests cost, per key (the charges the accounting computed)."""
        with self._guard:
            for c in charges:
                cell = self._units.setdefault((c.table, c.index or "", c.key), [0.0, 0.0, 0.0])
                cell[0 if c.kind == "read" else 1] += c.units

    def throttled(self, keys: Iterable[tuple[str, str | None, str]]) -> None:
        """One throttled attempt on each distinct (table, index, key) it would have charged."""
        with self._guard:
            for table, index, key in set(keys):
                self._units.setdefault((table, index or "", key), [0.0, 0.0, 0.0])[2] += 1

    def drain(self, ts: float) -> list[dict[str, Any]]:
        """The interval's rows: each table and index's top keys by units, the rest under key ``""``; reset."""
        with self._guard:
            cells, self._units = self._units, {}
        by_place: dict[tuple[str, str], list[tuple[str, list[float]]]] = {}
        for (table, index, key), v in cells.items():
            by_place.setdefault((table, index), []).append((key, v))
        out = []
        for (table, index), items in sorted(by_place.items()):
            items.sort(key=lambda kv: (-(kv[1][0] + kv[1][1]), -kv[1][2], kv[0]))
            keep, rest = items[: self.top], items[self.top:]
            rows = [(k, v) for k, v in keep if k]
            other = [sum(v[i] for k, v in rest + [(k, v) for k, v in keep if not k]) for i in range(3)]
            if any(other):
                rows.append(("", other))
            for key, (r, w, th) in rows:
                out.append({"ts": ts, "table": table, "index": index, "key": key, "read_units": r,
                            "write_units": w, "throttles": int(th)})
        return out


def charged_keys(op: str, params: dict, writes: list[Charge]) -> list[tuple[str, str | None, str]]:
    """The keys a throttled attempt would have charged (writes: priced from the request; reads: the target)."""
    if writes:
        return [(c.table, c.index, c.key) for c in writes]
    table = params.get("TableName", "")
    if op == "GetItem":
        shape = SHAPES.get(table)
        v = params.get("Key", {}).get(shape.pk if shape else "pk", {})
        return [(table, None, str(next(iter(v.values()), "")))]
    if op == "Query":
        return [(table, params.get("IndexName"), query_key(params))]
    return [(table, params.get("IndexName"), "")] if op in READ_OPS and table else []


def install(client: Any, load: KeyLoad) -> Any:
    """Feed ``load`` from ``client``'s DynamoDB calls (after ``instrument``; idempotent per client and load)."""
    if getattr(client, "_harness_keyload", None) is load:
        return client

    def attempt(parsed_response: Any = None, **_: Any) -> None:
        info = current_call()
        code = (parsed_response or {}).get("Error", {}).get("Code") if isinstance(parsed_response, dict) else None
        if info is not None and code in THROTTLE_CODES:
            load.throttled(charged_keys(info.op, info.params, info.writes))

    def done(parsed: Any, model: Any, **_: Any) -> None:
        info = current_call()
        if info is None or not isinstance(parsed, dict) or info.op != model.name:
            return
        code = parsed.get("Error", {}).get("Code")
        if code is None:
            load.charge(info.writes + info.reads(parsed))
        elif code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
            load.charge(conditional_failure_charges(info.op, info.params, SHAPES))

    ev = client.meta.events
    ev.register("response-received.dynamodb", attempt, unique_id=f"harness-keyload-try-{id(load)}")
    ev.register("after-call.dynamodb", done, unique_id=f"harness-keyload-{id(load)}")
    client._harness_keyload = load
    return client
