"""Faults aimed at one moment of one user's command, for playing the model's violating schedules on a real client.

The fidelity model's faults are drawn per request with a probability: right for load, useless for landing a
fault on *the* commit write of *the* command a schedule names. Here a ``Step`` watches one user's requests (a
seat is a user, so a step sees one repository's commands and nothing else) and acts on the ones it matches:

- ``lost``: the request lands upstream and its answer is dropped (the front's ``lost`` verdict);
- ``throttle``: the service's own throttling error (``ThrottlingException``), past any SDK's retries when it
  matches every attempt;
- ``freeze``: a callback (the caller's ``SIGSTOP`` of the command's process group), then the request goes on.

``AfterGlobalLock`` is the matcher the schedules use: a DynamoDB write made after the user's write to the global
lock item (``.locks/<ns>.lock``, the commit's lock in swamp's two-phase push), i.e. the commit's writes. The
user is carried to the model by a context variable the ``ScheduledFront`` sets per request (one asyncio task
per connection, so no request sees another's user).
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.aws.fidelity.model import FidelityModel, Verdict, injected_throttle, throttle_reply
from harness.aws.front.server import Front
from harness.aws.front.wire import Message
from harness.aws.instrument import WRITE_OPS

_USER: contextvars.ContextVar[str] = contextvars.ContextVar("front_schedule_user", default="")
GLOBAL_LOCK_MARK = ".locks/"
ACTIONS = ("lost", "throttle", "freeze")


class AfterGlobalLock:
    """Matches a DynamoDB write that is not on a lock item, once the user has written its global lock item
    (the commit's writes); the lock's own writes (acquire, renewal, release) never match."""

    def __init__(self, ops: frozenset[str] = WRITE_OPS) -> None:
        self.ops = ops
        self.armed = False

    def __call__(self, op: str, params: dict) -> bool:
        text = json.dumps(params)
        if GLOBAL_LOCK_MARK in text and op in WRITE_OPS:
            self.armed = True
            return False
        if "/.lock" in text or GLOBAL_LOCK_MARK in text:
            return False
        return self.armed and op in self.ops


@dataclass
class Step:
    """One fault of a schedule: ``action`` on ``user``'s requests ``match`` accepts, skipping the first ``skip``
    matches and acting on the next ``times`` (``None``: every match from then on)."""

    user: str
    action: str
    match: Callable[[str, dict], bool]
    times: int | None = 1
    skip: int = 0
    on_freeze: Callable[[], None] | None = None
    seen: int = 0
    acted: list[str] = field(default_factory=list)  # the operations it acted on, in order

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown schedule action {self.action!r} (one of {', '.join(ACTIONS)})")

    def wants(self, user: str, op: str, params: dict) -> bool:
        if user != self.user or not self.match(op, params):
            return False
        self.seen += 1
        if self.seen <= self.skip:
            return False
        return self.times is None or len(self.acted) < self.times


class ScheduledModel(FidelityModel):
    """The fidelity model with ``Step``s before its own draws: a matching step's action wins."""

    def __init__(self, *args, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kw)
        self.steps: list[Step] = []
        self._lock = threading.Lock()

    def add(self, step: Step) -> Step:
        with self._lock:
            self.steps.append(step)
        return step

    def clear(self) -> None:
        with self._lock:
            self.steps = []

    def decide(self, service: str, op: str, *, prefix: str = "", params: dict | None = None,
               writes: list | None = None, faults: bool = True) -> Verdict | None:
        step = self._step(op, params or {}) if faults else None
        if step is not None:
            step.acted.append(op)
            if step.action == "lost":
                return Verdict("lost")
            if step.action == "throttle":
                self.injected += 1
                t = injected_throttle(service, op, prefix, params)
                return Verdict("throttle", throttle_reply(service, t), t)
            if step.on_freeze is not None:
                step.on_freeze()
        return super().decide(service, op, prefix=prefix, params=params, writes=writes, faults=faults)

    def _step(self, op: str, params: dict) -> Step | None:
        user = _USER.get()
        with self._lock:
            for step in self.steps:
                if step.wants(user, op, params):
                    return step
        return None


class ScheduledFront(Front):
    """The front, telling its ``ScheduledModel`` whose request it is deciding."""

    async def handle(self, user: str, req: Message) -> bytes | None:
        _USER.set(user)
        return await super().handle(user, req)
