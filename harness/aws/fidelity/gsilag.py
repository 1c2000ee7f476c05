"""GSI lag: an item written by this process shows in a GSI some time after its write, as on AWS.

On AWS a GSI is updated asynchronously and read eventually consistently
(``ConsistentRead`` is refused on one): a GSI query right after a write can
miss the item. The stand-ins answer at once. This part of the fidelity layer
models the lag for the harness's own writes, per process:

- each successful PutItem, UpdateItem, BatchWriteItem ``PutRequest`` and
  TransactWriteItems ``Put`` / ``Update`` the process makes records its item's
  key (table, pk, sk) with a lag drawn from the distribution;
- a GSI read (Query or Scan with ``IndexName``, not ``ConsistentRead``) whose
  answer comes before write time + lag omits that item (``Count`` and
  ``ScannedCount`` fixed);
- an item the process deletes is gone at once: its record is dropped (on AWS a
  deleted item can linger in a GSI for the lag too; not modelled);
- base-table reads (GetItem, BatchGetItem, Query or Scan without ``IndexName``)
  are never touched.

Only writes this process saw are delayed: another process's writes show at once
(the layer in each Locust process knows only its own writes' times). An
overwrite hides the item for its lag, where AWS would show its previous version.

Memory is bounded: a lag is at most the distribution's p99.9 (and ``MAX_LAG_S``),
a record is forgotten once that long has passed, and at most ``MAX_KEYS`` are kept
(past that the oldest shows early).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any

from harness.aws.fidelity.latency import Dist
from harness.aws.instrument import SHAPES
from harness.core.clock import Clock

MAX_LAG_S = 10.0  # no lag is longer than this (nor than the distribution's p99.9)
MAX_KEYS = 100_000  # records kept at most (a process writing 10,000 items/s with 10 s lags fills it)
Z999 = 3.090232306167813
PARAMS = "harness_gsi_lag_params"  # where the request's parameters wait for its answer (botocore's context)

Key = tuple[str, Any, Any]


def _value(attr: dict | None) -> Any:
    """A key attribute as a hashable value: ``{"S": "x"}`` -> ``("S", "x")``."""
    if not attr:
        return None
    (kind, v), = attr.items()
    return kind, v


def item_key(table: str, item: dict) -> Key:
    """The base table key of an item (or a ``Key``), from the table's registered shape (default ``pk`` / ``sk``)."""
    shape = SHAPES.get(table)
    pk, sk = (shape.pk, shape.sk) if shape else ("pk", "sk")
    return table, _value(item.get(pk)), _value(item.get(sk)) if sk else None


def _unprocessed_key(table: str, request: dict) -> tuple[str, Key]:
    if "PutRequest" in request:
        return "put", item_key(table, request["PutRequest"].get("Item", {}))
    return "delete", item_key(table, request.get("DeleteRequest", {}).get("Key", {}))


class GsiLag:
    """The process's recent writes and when each shows in a GSI. One per fidelity layer."""

    def __init__(self, dist: Dist, clock: Clock, rng: random.Random, *, max_keys: int = MAX_KEYS) -> None:
        self.dist, self.clock, self.rng, self.max_keys = dist, clock, rng, max_keys
        self.horizon_s = min(MAX_LAG_S, dist.quantile_ms(Z999) / 1000.0)
        self._shows_at: OrderedDict[Key, tuple[float, float]] = OrderedDict()  # key -> (written at, shows at)
        self.writes = self.hidden = self.delayed = self.answers = 0  # items recorded / held back; GSI answers

    def __len__(self) -> int:
        return len(self._shows_at)

    # ---- writes ----------------------------------------------------------------------
    def wrote(self, key: Key) -> None:
        self.writes += 1
        now = self.clock.now()
        lag = min(self.horizon_s, self.dist.sample_ms(self.rng) / 1000.0)
        self._shows_at.pop(key, None)  # a rewrite: in write order again, with its own lag
        if lag > 0:
            self._shows_at[key] = (now, now + lag)
        self._forget(now)

    def deleted(self, key: Key) -> None:
        self._shows_at.pop(key, None)

    def _forget(self, now: float) -> None:
        records = self._shows_at
        while records:
            key, (written, _) = next(iter(records.items()))
            if written + self.horizon_s > now and len(records) <= self.max_keys:
                break
            records.popitem(last=False)

    def on_write(self, op: str, params: dict, parsed: dict | None = None) -> None:
        """A write that succeeded: record what it wrote, forget what it deleted."""
        if op == "PutItem":
            self.wrote(item_key(params["TableName"], params.get("Item", {})))
        elif op == "UpdateItem":
            self.wrote(item_key(params["TableName"], params.get("Key", {})))
        elif op == "DeleteItem":
            self.deleted(item_key(params["TableName"], params.get("Key", {})))
        elif op == "BatchWriteItem":  # an unprocessed request was not written: it comes back in a later call
            left = {(t, _unprocessed_key(t, r)) for t, rs in ((parsed or {}).get("UnprocessedItems") or {}).items()
                    for r in rs}
            for table, requests in params.get("RequestItems", {}).items():
                for r in requests:
                    if left and (table, _unprocessed_key(table, r)) in left:
                        continue
                    if "PutRequest" in r:
                        self.wrote(item_key(table, r["PutRequest"].get("Item", {})))
                    elif "DeleteRequest" in r:
                        self.deleted(item_key(table, r["DeleteRequest"].get("Key", {})))
        elif op == "TransactWriteItems":
            for t in params.get("TransactItems", []):
                if "Put" in t:
                    self.wrote(item_key(t["Put"]["TableName"], t["Put"].get("Item", {})))
                elif "Update" in t:
                    self.wrote(item_key(t["Update"]["TableName"], t["Update"].get("Key", {})))
                elif "Delete" in t:
                    self.deleted(item_key(t["Delete"]["TableName"], t["Delete"].get("Key", {})))

    # ---- GSI reads --------------------------------------------------------------------
    def on_read(self, params: dict, parsed: dict) -> None:
        """A GSI answer: the items this process wrote too recently to show in it yet are taken out."""
        if not params.get("IndexName") or params.get("ConsistentRead"):
            return
        self.answers += 1
        items = parsed.get("Items")
        if not items or not self._shows_at:
            return
        now, table = self.clock.now(), params["TableName"]
        self._forget(now)
        shown = [i for i in items if self._shows_at.get(item_key(table, i), (0.0, 0.0))[1] <= now]
        hidden = len(items) - len(shown)
        if hidden:
            parsed["Items"] = shown
            parsed["Count"] = len(shown)
            if "ScannedCount" in parsed:
                parsed["ScannedCount"] = max(len(shown), parsed["ScannedCount"] - hidden)
            self.hidden += hidden
            self.delayed += 1

    # ---- botocore hooks ---------------------------------------------------------------
    def before_parameter_build(self, params: dict, context: dict | None = None, **_: Any) -> None:
        if context is not None:
            context[PARAMS] = params

    def after_call(self, parsed: Any, model: Any, context: dict | None = None, **_: Any) -> None:
        params = context.get(PARAMS) if context is not None else None
        if params is None or not isinstance(parsed, dict) or "Error" in parsed:
            return
        op = model.name
        if op in ("Query", "Scan"):
            self.on_read(params, parsed)
        elif op in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"):
            self.on_write(op, params, parsed)
