"""One actor of a random schedule (``harness explore --random``): its operations in a thread of their own, one
request at a time on the controller's word, and the disturbances armed on its client.

Each operation runs in a greenlet of its own, so only one actor runs at a time and switching is in-process (no
thread for the OS to wake): the controller resumes an actor with a budget (so many requests, up to a request
of some kind, or to the end of its operation) and is back once the actor stops (before a request its budget
does not cover, or while it waits for an answer that was lost) or its operation ends. Every request boundary
is a place where the schedule may switch actors, and a schedule's requests happen in one order on every replay.
Each request takes ``REQUEST_S`` of the shared clock (swamp's unfenced index is read by "changed since").

The disturbances, each armed for the actor's next request of a kind (its label, ``faults.label``):

- ``lost-answer``: the request lands and its answer is lost; the actor stops there, waiting for it (the
  harness's clients wait 30 s for an answer, longer than a short lease), and sends it again when resumed;
- ``lost-then``: the request lands and its answer is lost, and botocore's resend fails otherwise (``then``:
  throttled past its retries, a server error, or its connection reset): the error the caller sees says nothing
  of the first attempt, which landed (issue 55);
- ``throttle``: the request fails as throttled after botocore's retries (it never landed);
- ``crash``: the actor's process dies there: this request and every later one fail, nothing is cleaned up;
  its next operation starts a fresh process (nothing local, an empty catalog);
- ``gsi``: its next GSI query answers without the items of one write, ``rank`` 0 the newest (an index behind
  its table), 1 or 2 an older one while newer ones show (an index showing writes out of order);
- ``stop``: the actor stops before that request, whatever its budget (a freeze there, once time moves).

An actor's clock may run ahead of the others' (``ahead_s``); its sleeps move the one shared FakeClock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import greenlet
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, ConnectionClosedError

from harness.core.clock import FakeClock
from harness.products.explore.faults import ClientHooks, Crash, LostAnswer, _written, label

REQUEST_S = 0.005  # what one request takes of the shared clock
RESUME_CAP = 4000  # requests one resume may make before the actor is stopped anyway (a loop that never ends)
THROTTLE = {"dynamodb": ("ProvisionedThroughputExceededException", 400), "s3": ("SlowDown", 503)}
SERVER_ERROR = {"dynamodb": ("InternalServerError", 500), "s3": ("InternalError", 500)}
RESEND_FAILS = ("throttle", "5xx", "reset")  # how a lost answer's resend fails (``lost-then``)
THEN_WORDS = {"throttle": "is throttled past botocore's retries", "5xx": "fails with a server error",
              "reset": "has its connection reset"}


def resend_error(then: str, op: str, service: str, url: str) -> Exception:
    """The error a lost answer's resend meets (``lost-then``), as botocore hands it over after its retries."""
    if then == "reset":
        return ConnectionClosedError(endpoint_url=url)
    code, status = (THROTTLE if then == "throttle" else SERVER_ERROR)[service]
    return ClientError({"Error": {"Code": code, "Message": f"{then} (harness explore)"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, op)


class Stuck(Exception):
    """An actor did not end its operation when told to: the schedule cannot go on (a fault of the simulation)."""


class SkewClock:
    """An actor's clock: the shared FakeClock's time plus ``ahead_s``; sleeping moves the shared clock."""

    def __init__(self, base: FakeClock) -> None:
        self.base, self.ahead_s = base, 0.0

    def now(self) -> float:
        return self.base.now() + self.ahead_s

    def sleep(self, seconds: float) -> None:
        self.base.advance(max(0.0, seconds))


def sim_label(op: str, params: dict) -> str:
    """``faults.label``, with a BatchWriteItem's puts told from its deletes (a commit's items, a collection)."""
    what = label(op, params)
    if op == "BatchWriteItem":
        reqs = [r for batch in (params.get("RequestItems") or {}).values() for r in batch]
        kinds = sorted({"delete" if "DeleteRequest" in r else "put" for r in reqs})
        return f"{what} {'+'.join(kinds)}" if kinds else what
    return what


@dataclass
class Budget:
    """How far a resumed actor may go: ``requests`` of them, or up to (before) the next ``until`` request after
    the first, or (neither) to the end of its operation."""

    requests: int | None = None
    until: str | None = None

    def words(self) -> str:
        if self.until is not None:
            return f"up to its next {self.until}"
        if self.requests is not None:
            return f"{self.requests} request{'s' if self.requests != 1 else ''}"
        return "to the end"


@dataclass
class Fault:
    kind: str
    at: str | None = None  # the label of the request it hits (None: the next request; gsi: the next GSI query)
    rank: int = 0  # gsi: which write's items the answer lacks (0 the newest)
    then: str = "throttle"  # lost-then: how the resend fails (RESEND_FAILS)

    def words(self) -> str:
        where = f"next {self.at}" if self.at else "next request"
        return {"lost-answer": f"its {where} lands and its answer is lost",
                "lost-then": f"its {where} lands, its answer is lost, and the resend {THEN_WORDS[self.then]}",
                "throttle": f"its {where} is throttled past botocore's retries",
                "crash": f"its process dies at its {where}",
                "stop": f"it stops before its {where}",
                "gsi": "its next GSI query misses the newest write's items" if self.rank == 0 else
                f"its next GSI query misses the items of the write {self.rank} before the newest (newer ones "
                "show)"}[self.kind]


class Hooks(ClientHooks):
    """botocore event hooks on one client, registered once; they serve whichever actor uses the client now."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.actor: Actor | None = None

    def _before_call(self, model: Any, **_: Any) -> Any:
        a = self.actor
        if a is None or greenlet.getcurrent() is not a.glet:
            return None  # set-up: not the actor's operation
        return a.before_request(model.name, self._params, self.client.meta.service_model.service_name)

    def _before_send(self, request: Any, event_name: str, **_: Any) -> Any:
        a = self.actor
        if a is not None and a.failing is not None and event_name.endswith("." + a.failing[0]):
            op, then = a.failing  # lost-then: the resend of the request whose answer was lost
            a.failing = None
            a.said.append(f"{a.name}'s resend {THEN_WORDS[then]}")
            raise resend_error(then, op, self.client.meta.service_model.service_name, request.url)
        if a is None or a.losing is None or not event_name.endswith("." + a.losing):
            return None
        op, a.losing = a.losing, None
        from moto.core.models import botocore_stubber

        botocore_stubber(event_name=event_name, request=request)  # it lands ...
        a.wait_for_answer()  # ... the actor waits for an answer that never comes (others may run meanwhile)
        if a.then is not None:
            a.failing, a.then = (op, a.then), None
        raise LostAnswer(endpoint_url=request.url)  # ... and botocore sends it again

    def _after_query(self, parsed: dict, **_: Any) -> None:
        a = self.actor
        if a is None or "IndexName" not in self._params:
            return
        f = a.armed.get("gsi")
        items = parsed.get("Items") or []
        writes = sorted({_written(i) for i in items}, reverse=True)
        if f is None or len(writes) <= f.rank:
            return
        gone = writes[f.rank]
        del a.armed["gsi"]
        parsed["Items"] = [i for i in items if _written(i) != gone]
        parsed["Count"] = len(parsed["Items"])
        a.said.append(f"{a.name}'s GSI query (request {a.n}) misses {len(items) - len(parsed['Items'])} item(s) "
                      f"of {'the newest write' if f.rank == 0 else f'the write {f.rank} before the newest'}")


class Actor:
    """One worker: a datastore (remade after a crash), its operations in threads, its armed faults."""

    def __init__(self, name: str, hooks: Hooks, make_store: Callable[[SkewClock], Any], clock: SkewClock) -> None:
        self.name, self.hooks, self.make_store, self.clock = name, hooks, make_store, clock
        self.glet: Any = None  # the greenlet of its current operation
        self._parent: Any = None  # the controller's, which resumes it
        hooks.actor = self
        self.busy = self.crashed = False
        self.op = ""
        self.n = 0  # requests of the current operation so far
        self.outcome: str | None = None
        self.stopped_at: str | None = None  # the request it stopped before ("" waiting for a lost answer)
        self.armed: dict[str, Fault] = {}  # kind -> the fault armed
        self.losing: str | None = None  # the operation whose request is to land and lose its answer
        self.then: str | None = None  # lost-then: how its resend is to fail
        self.failing: tuple[str, str] | None = None  # (operation, how): the resend that fails
        self.fired: list[tuple[str, str]] = []  # (fault kind, the request's label) of every fault that fired
        self.said: list[str] = []  # what happened since the controller last looked (faults fired, its end)
        self.seen: set[str] = set()  # the labels of its requests (the schedule's vocabulary is learned from them)
        self._budget = Budget()
        self._made = 0
        self.store = make_store(clock)

    # ---- the controller's side --------------------------------------------------------------------------
    def begin(self, op: str, fn: Callable[[Any], None]) -> None:
        """Start an operation (a greenlet of its own, not running yet); after a crash, in a fresh process."""
        if self.crashed:
            self.store = self.make_store(self.clock)
            self.crashed = False
            self.said.append(f"{self.name} restarts: a fresh process, nothing local")
        self.busy, self.op, self.n, self.outcome, self.stopped_at = True, op, 0, None, None
        self._parent = greenlet.getcurrent()
        self.glet = greenlet.greenlet(lambda: self._main(fn), parent=self._parent)

    def resume(self, budget: Budget) -> None:
        """Let the actor go on within ``budget``; back once it stopped or its operation ended."""
        if not self.busy:
            return
        self._budget, self._made = budget, 0
        self.glet.switch()

    def arm(self, fault: Fault) -> None:
        self.armed[fault.kind if fault.kind in ("gsi", "stop") else "request"] = fault

    # ---- the actor's thread -----------------------------------------------------------------------------
    def _main(self, fn: Callable[[Any], None]) -> None:
        try:
            fn(self.store)
            self.outcome = "done"
        except Crash:
            self.outcome = "crashed"
            self.crashed = True
        except Exception as e:  # noqa: BLE001 - a refusal or a timeout is part of the schedule
            self.outcome = f"{type(e).__name__}: {str(e)[:100]}"
        finally:
            self.busy, self.stopped_at = False, None  # (the greenlet ends: the controller goes on)

    def _stop(self, at: str) -> None:
        self.stopped_at = at
        self._parent.switch()
        self.stopped_at = None

    def before_request(self, op: str, params: dict, service: str) -> Any:
        """At a request boundary: stop if the budget says so; apply a fault armed for this request."""
        if self.crashed:
            raise Crash()
        what = sim_label(op, params)
        self.seen.add(what)
        stop = self.armed.get("stop")
        if stop is not None and stop.at in (None, what):
            del self.armed["stop"]
            self.fired.append(("stop", what))
            self.said.append(f"{self.name} stops before request {self.n + 1} ({what})")
            self._stop(what)
        elif self._made and (self._made >= RESUME_CAP or (self._budget.until is not None and what == self._budget.until)
                             or (self._budget.requests is not None and self._made >= self._budget.requests)):
            self._stop(what)
        self._made += 1
        self.n += 1
        self.clock.sleep(REQUEST_S)
        f = self.armed.get("request")
        if f is None or f.at not in (None, what):
            return None
        del self.armed["request"]
        self.fired.append((f.kind, what))
        where = f"request {self.n} ({what})"
        if f.kind == "crash":
            self.crashed = True
            self.said.append(f"{self.name}'s process dies at {where}")
            raise Crash()
        if f.kind == "throttle":
            code, status = THROTTLE[service]
            self.said.append(f"{self.name}'s {where} is throttled past botocore's retries")
            http = AWSResponse("https://throttled.invalid", status, {}, None)
            http._content = b""
            return http, {"Error": {"Code": code, "Message": "throttled (harness explore)"},
                          "ResponseMetadata": {"HTTPStatusCode": status}}
        self.losing = op  # lost-answer: before-send lands it and loses the answer
        self.then = f.then if f.kind == "lost-then" else None
        self.said.append(f"{self.name}'s {where} lands, its answer lost: {self.name} waits for it")
        return None

    def wait_for_answer(self) -> None:
        self._stop("")
        self._made = 1  # its resend is the resumed actor's first request


__all__ = ["Actor", "Budget", "Fault", "Hooks", "SkewClock", "Stuck", "sim_label"]
