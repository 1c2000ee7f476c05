"""The disturbances, at one request boundary of one actor, through botocore's event hooks on its client.

- ``freeze``: the actor stops before request k (every lease it holds runs
  out) while the other actor runs an operation, then goes on;
- ``lost-answer``: request k lands (handed to moto directly) and its answer
  is lost: botocore sees a read timeout and sends the request again;
- ``crash``: the actor stops before request k for good: that request and
  every later one fail, so it cleans nothing up;
- ``gsi-lag``: a GSI query at k answers without the items of the newest write
  it would have shown (a fenced commit's sequence, else the newest update
  time), once: on AWS a GSI shows an item some time after its write.

``Tape`` learns an actor's request sequence (with a label per request) and
counts boundaries as the actor makes requests, in every replay alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ReadTimeoutError

from harness.core.work import sealing

DISTURBANCES = ("freeze", "lost-answer", "crash", "gsi-lag")


class Crash(BaseException):
    """The actor's process is gone (not an Exception: nothing of the actor's may catch it and go on)."""


class LostAnswer(ReadTimeoutError):
    """The answer to a request that landed, lost on the way back."""


def label(op: str, params: dict) -> str:
    """A request in words: its operation and what it touches (the seal, the lock, a shard, a GSI query...). An S3
    head PUT is ``PutObject seal`` when a commit sends it as its seal, ``PutObject head`` otherwise (a grant's fence
    write)."""
    if "Key" in params and isinstance(params["Key"], str):  # S3
        key = params["Key"]
        head = key.endswith(("_meta.json", ".datastore-index.json"))
        what = ("seal" if head and op == "PutObject" and sealing() else "head" if head
                else "lock" if key.endswith(".lock") else "content" if "@v" in key
                else "shard" if "_index/" in key or ".datastore-index/" in key else "object")
        return f"{op} {what}"
    if op == "UpdateItem":
        expr = str(params.get("UpdateExpression", ""))
        pk = params.get("Key", {}).get("pk", {}).get("S", "")
        what = ("seal" if expr.startswith("SET #s = :new") else "grant" if "ADD #fence" in expr
                else "model fence" if expr.startswith("SET #m") else "registry" if pk.startswith("PARTITIONS#")
                else "release" if expr.startswith("REMOVE nonce") else "renew" if "expiresAtMs = :e" in expr
                else "lock item" if pk.startswith("LOCK#") else "item")
        return f"UpdateItem {what}"
    if op == "Query":
        return "Query GSI" if "IndexName" in params else "Query table"
    if op == "GetItem":
        pk = params.get("Key", {}).get("pk", {}).get("S", "")
        return "GetItem " + ("lock item" if pk.startswith("LOCK#") else "registry" if pk.startswith("PARTITIONS#")
                             else "chunk" if "CHUNK" in params.get("Key", {}).get("sk", {}).get("S", "") else "item")
    return op


class ClientHooks:
    """botocore event hooks on one client, registered once: each call's own parameters kept (for its label), an
    answer lost resent at once; what happens before a call, before a send and after a GSI query is the
    subclass's (the explorer's ``Tape``, the random simulation's ``actor.Hooks``)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._params: dict = {}
        ev = client.meta.events
        ev.register("before-parameter-build", self._params_of)
        ev.register("before-call", self._before_call)
        ev.register_first("before-send", self._before_send)
        ev.register_first("needs-retry", self._needs_retry)
        ev.register("after-call.dynamodb.Query", self._after_query)

    def _params_of(self, params: dict, **_: Any) -> None:
        self._params = params  # the call's own parameters (before-call sees the serialized request)

    def _needs_retry(self, caught_exception: Any = None, attempts: int = 1, **_: Any) -> Any:
        if isinstance(caught_exception, LostAnswer) and attempts < 3:
            return 0  # botocore sends it again (at once: the explorer's time is the FakeClock's)
        return None

    def _before_call(self, model: Any, **_: Any) -> Any:
        return None

    def _before_send(self, request: Any, event_name: str, **_: Any) -> Any:
        return None

    def _after_query(self, parsed: dict, **_: Any) -> None:
        return None


class Tape(ClientHooks):
    """Counts an actor's requests while armed; at boundary ``k`` it applies the disturbance it was given."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.reset()

    def reset(self) -> None:
        self.armed = False
        self.seen: list[str] = []  # labels of the requests made while armed
        self.at: int | None = None
        self.disturbance: str | None = None
        self.on_freeze: Callable[[], None] | None = None
        self.fired = self.crashed = self._lag = False
        self._lose: Any = None  # the request to land and lose (set in before-call, used in before-send)
        self._params: dict = {}

    def arm(self, at: int | None = None, disturbance: str | None = None,
            on_freeze: Callable[[], None] | None = None) -> None:
        self.armed, self.at, self.disturbance, self.on_freeze = True, at, disturbance, on_freeze
        self.seen, self.fired = [], False

    def disarm(self) -> None:
        self.armed = False

    # ---- hooks -------------------------------------------------------------------------------------------
    def _before_call(self, model: Any, **_: Any) -> None:
        if self.crashed:
            raise Crash()
        if not self.armed:
            return
        k = len(self.seen)
        params = self._params
        self.seen.append(label(model.name, params))
        if k != self.at or self.fired:
            return
        if self.disturbance == "freeze":
            self.fired = True
            if self.on_freeze is not None:
                self.on_freeze()
        elif self.disturbance == "crash":
            self.fired = self.crashed = True
            raise Crash()
        elif self.disturbance == "lost-answer":
            self.fired = True
            self._lose = model.name
        elif self.disturbance == "gsi-lag" and model.name == "Query" and "IndexName" in params:
            self.fired = True
            self._lag = True

    def _before_send(self, request: Any, event_name: str, **_: Any) -> Any:
        if self._lose is None or not event_name.endswith("." + self._lose):
            return None
        self._lose = None
        from moto.core.models import botocore_stubber

        botocore_stubber(event_name=event_name, request=request)  # it lands ...
        raise LostAnswer(endpoint_url=request.url)  # ... and its answer is lost

    def _after_query(self, parsed: dict, **_: Any) -> None:
        if not self._lag:
            return
        self._lag = False
        items = parsed.get("Items") or []
        if items:  # the newest write's items (a commit's, or swamp's newest in-place entries) are not there yet
            newest = max(_written(i) for i in items)
            parsed["Items"] = [i for i in items if _written(i) != newest]
            parsed["Count"] = len(parsed["Items"])


def _written(item: dict) -> int:
    """When an index item was written, in the order a GSI shows them: its sequence (fenced), else its time."""
    seq = item.get("s", {}).get("N")
    return int(seq) if seq is not None else int(item.get("updatedAt", {}).get("N", 0))
