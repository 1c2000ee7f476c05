"""A random schedule's steps, their words, and playing them in a world of their own (no Hypothesis here: a stored
schedule replays on any version of it, and on code changed since, as far as its requests still exist).

A schedule is a list of JSON steps, played after a fixed prelude (A runs m0, B runs m1; C has seen neither):

- ``{"actor": "A", "op": "run" | "delete" | "prune" | "pull", "model": "m0", ...budget}``: A starts an
  operation (``run`` is one-lock's ``sync`` or two-phase's ``model-run``) and goes as far as its budget says;
- ``{"actor": "A", "go": true, ...budget}``: a started actor goes on;
- budget: ``"requests": n`` (that many requests, then it stops), ``"until": "UpdateItem seal"`` (up to its next
  request of that kind), or neither (to the end of the operation);
- ``{"wait": 7}``: time moves while nobody runs (every actor is frozen: leases run out);
- ``{"actor": "A", "fault": "lost-answer" | "throttle" | "crash" | "stop" | "gsi", "at": label, "rank": r}``:
  a disturbance armed for A's next request of that kind (``actor.py``);
- ``{"actor": "A", "ahead": 4}``: A's clock runs that far ahead of the others'.

Then every actor still in an operation finishes it (A, B, C in turn), every live actor pulls once more (its
view is checked too), and the safety checker judges the history against the final state.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from harness.aws.instrument import instrument
from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.catalog import Catalog
from harness.datastore.lock import LockConfig
from harness.datastore.sync import Datastore
from harness.products.explore.actor import Actor, Budget, Fault, Hooks, SkewClock, Stuck
from harness.products.explore.world import Target
from harness.safety.checker import FINDINGS, check
from harness.safety.fresh import with_fresh_reads
from harness.safety.state import snapshot

ACTORS = ("A", "B", "C")
MODELS = ("m0", "m1")
OPS = ("run", "delete", "prune", "pull")
PRELUDE: list[dict] = [{"actor": "A", "op": "run", "model": "m0"}, {"actor": "B", "op": "run", "model": "m1"}]
METHOD = "get_uptime"  # every run writes the same data name: actors meet on uptime/latest
# the explorer's lease (3 s); waits retried every 0.5-1 s and the global lock polled every 0.5 s (the explorer's
# 50 ms would make a wait out of a frozen holder's lease 60 requests long: slow, and no different)
LOCK = LockConfig(ttl_s=3.0, wait_s=10.0, retry_s=0.5, retry_cap_s=1.0)
GLOBAL_POLL_S = 0.5
DRAIN_ROUNDS = 4  # resumes an actor gets at the end to finish (a lost answer stops it once more)
_names = itertools.count(1)


class Troupe:
    """The clients every schedule reuses (a botocore client costs more than a schedule's world): per backend,
    one per actor with its ``Hooks``, and one undisturbed observer that reads the final state."""

    def __init__(self, session: boto3.Session) -> None:
        self.hooks: dict[tuple[str, str], Hooks] = {}
        self.observer: dict[str, Any] = {}
        for service in ("dynamodb", "s3"):
            for who in (*ACTORS, "observer"):
                c = instrument(session.client(service, endpoint_url=f"https://{service}.{session.region_name}"
                                              ".amazonaws.com",  # never a user's AWS_ENDPOINT_URL: moto's mock
                                              config=Config(retries={"max_attempts": 1, "mode": "standard"})))
                if who == "observer":
                    self.observer[service] = c
                else:
                    self.hooks[(service, who)] = Hooks(c)


def _backend(target: Target, client: Any, name: str, clock: Any) -> Any:
    return target.backend_of(client, name, clock)


@dataclass
class Stage:
    """One schedule's world: a fresh table or bucket, the shared clock, the actors, one history."""

    target: Target
    clock: FakeClock
    name: str
    actors: dict[str, Actor]
    observer: Any
    events: list[dict] = field(default_factory=list)


def new_stage(target: Target, troupe: Troupe) -> Stage:
    clock = FakeClock()
    name = f"sim-{os.getpid()}-{next(_names)}"
    events: list[dict] = []
    sync = target.sync_config(namespace="w1", lock_scope="namespace",
                      index_commit="delta" if target.sync == "two-phase" else "full", lock=LOCK, heartbeat=False,
                      sync=target.sync, global_poll_s=GLOBAL_POLL_S, record_views=True)
    actors: dict[str, Actor] = {}
    for who in ACTORS:
        hooks = troupe.hooks[(target.backend, who)]
        lives = itertools.count(1)

        def make_store(c: SkewClock, who: str = who, hooks: Hooks = hooks, lives: Any = lives) -> Datastore:
            be = _backend(target, hooks.client, name, c)
            be.ensure()
            store = Datastore(be, Catalog(), sync, clock=c, holder=who,
                              rng=random.Random(f"{who}-explore-{next(lives)}"))
            store.record = lambda e, c=c: events.append(true_times(e, c.ahead_s))
            return store

        actors[who] = Actor(who, hooks, make_store, SkewClock(clock))
    observer = _backend(target, troupe.observer[target.backend], name, clock)
    return Stage(target, clock, name, actors, observer, events)


def true_times(event: dict, ahead_s: float) -> dict:
    """An event's times on the shared clock (its actor's clock may run ahead): the checker orders events of
    different actors by their times."""
    if not ahead_s:
        return event
    off = int(round(ahead_s * 1000))
    return {k: (v - off if k.endswith("_ms") and isinstance(v, int | float) else v) for k, v in event.items()}


def budget_of(step: dict) -> Budget:
    return Budget(requests=step.get("requests"), until=step.get("until"))


def op_words(target: Target, step: dict) -> str:
    op = step["op"]
    if op == "run":
        op = "sync" if target.sync == "one-lock" else "model-run"
    return f"{op} {step['model']}" if step.get("model") and step["op"] in ("run", "delete") else op


def _call(step: dict) -> Any:
    op, model = step["op"], step.get("model", "m0")
    if op == "run":
        return lambda s: s.sync_run(model, METHOD, 0, [])
    if op == "delete":
        return lambda s: s.delete_model(model, [])
    if op == "prune":
        return lambda s: s.prune([])
    return lambda s: s.pull(Work())


class Play:
    """Plays steps one by one in a fresh world; ``words`` says what happened, ``finish`` checks the history."""

    def __init__(self, target: Target, troupe: Troupe, config: dict[str, str] | None = None) -> None:
        self.target = target.resolved(config) if config else target
        self.stage = new_stage(self.target, troupe)
        self.words: list[str] = [config_words(config)] if config else []
        self.seen: set[str] = set()  # every request's label (a target's vocabulary is learned from these)
        for a in self.stage.actors.values():
            a.seen = self.seen
        for s in PRELUDE:
            self.step(s, prelude=True)

    @property
    def actors(self) -> dict[str, Actor]:
        return self.stage.actors

    def busy(self) -> list[str]:
        return [n for n, a in self.actors.items() if a.busy]

    def _went(self, a: Actor, what: str) -> str:
        said, a.said = a.said, []
        if a.busy:
            where = (f"waits for the lost answer of request {a.n}" if a.stopped_at == "" else
                     f"stopped before request {a.n + 1} ({a.stopped_at})")
        else:
            where = f"{a.outcome}, {a.n} requests"
        return "; ".join([*said, f"{what}: {where}"])

    def step(self, s: dict, prelude: bool = False) -> bool:
        """Play one step; False when it does not apply (an actor already busy, or idle where it must go on)."""
        if "wait" in s:
            self.stage.clock.advance(float(s["wait"]))
            self.words.append(f"time moves {float(s['wait']):g} s (nobody runs: leases of {LOCK.ttl_s:g} s"
                              f"{' run out' if s['wait'] > LOCK.ttl_s else ' go on'})")
            return True
        a = self.actors[s["actor"]]
        if "ahead" in s:
            a.clock.ahead_s += float(s["ahead"])
            self.words.append(f"{a.name}'s clock runs {a.clock.ahead_s:g} s ahead of the others'")
            return True
        if "fault" in s:
            f = Fault(s["fault"], s.get("at"), int(s.get("rank", 0)), s.get("then", "throttle"))
            a.arm(f)
            self.words.append(f"armed: {a.name}: {f.words()}")
            return True
        budget = budget_of(s)
        if "op" in s:
            if a.busy:  # one operation after another: the one it is in finishes first
                self._drain(a, f"{a.name} finishes its {a.op} first")
            a.begin(s["op"], _call(s))
            a.resume(budget)
            what = f"{a.name}: {op_words(self.target, s)}, {budget.words()}"
            self.words.append(("prelude: " if prelude else "") + self._went(a, what))
            return True
        if not a.busy:
            return False
        a.resume(budget)
        self.words.append(self._went(a, f"{a.name} goes on, {budget.words()}"))
        return True

    def _drain(self, a: Actor, what: str) -> None:
        for _ in range(DRAIN_ROUNDS):
            if not a.busy:
                return
            a.resume(Budget())
            self.words.append(self._went(a, what))
        if a.busy:
            raise Stuck(f"{a.name} did not finish its {a.op} in {DRAIN_ROUNDS} resumes")

    def finish(self) -> dict[str, Any]:
        """Every actor ends its operation, every live one pulls once more; the checker's report."""
        for a in self.actors.values():
            self._drain(a, f"{a.name} finishes")
        for a in self.actors.values():
            if not a.crashed:
                self.step({"actor": a.name, "op": "pull"})
        observer = self.stage.observer
        report = check(self.stage.events, with_fresh_reads(observer, self.stage.events, snapshot(observer)))
        if any(a.clock.ahead_s for a in self.actors.values()) and report["lease_overlaps"]:
            # a clock running ahead ends another holder's lease early: a lease lock assumes clocks that agree,
            # so two leases at once are what that disturbance does (fencing must keep the data safe regardless)
            report["violations"] -= report["lease_overlaps"]
            report["expected_lease_overlaps"], report["lease_overlaps"] = report["lease_overlaps"], 0
        return report

    def fired(self) -> list[tuple[str, str]]:
        """(fault kind, the request's label) of every disturbance that fired, every actor's."""
        return [f for a in self.actors.values() for f in a.fired]


def findings(report: dict[str, Any]) -> dict[str, int]:
    return {k: report[k] for k in FINDINGS if report.get(k)}


@dataclass
class Outcome:
    """A played schedule: its steps in words, the checker's findings, how long it took."""

    words: list[str]
    findings: dict[str, int]
    violations: int
    seconds: float
    error: str | None = None
    fired: list[tuple[str, str]] = field(default_factory=list)  # (fault kind, request label) of each that fired

    def then(self) -> str:
        return "then: " + (", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.findings.items())
                           if self.findings else "no violation")


def config_words(config: dict[str, str]) -> str:
    """A schedule's drawn configuration in words (its first line)."""
    names = {"uploads": "uploads_at_commit", "shards": "s3_shards"}
    return "configuration: " + ", ".join(f"{names.get(k, k)} {v}" for k, v in sorted(config.items()))


def play(target: Target, steps: list[dict], troupe: Troupe) -> Outcome:
    """Play a stored schedule from the start (its drawn configuration, the prelude, then ``steps``), check it."""
    t0 = time.perf_counter()
    config = steps[0]["config"] if steps and "config" in steps[0] else None
    p = Play(target, troupe, config)
    for s in steps[1:] if config is not None else steps:
        p.step(s)
    report = p.finish()
    out = Outcome(p.words, findings(report), report["violations"], time.perf_counter() - t0, fired=p.fired())
    out.words.append(out.then())
    return out


__all__ = ["ACTORS", "LOCK", "MODELS", "OPS", "PRELUDE", "Outcome", "Play", "Troupe", "play"]
