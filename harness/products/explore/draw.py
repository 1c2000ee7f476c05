"""Random schedules drawn, and a violating one shrunk, by Hypothesis's stateful testing over ``play.py``'s steps.

Hypothesis is the only thing here that knows of it: a rule draws one step (start an operation, let a started
actor go on, let time move, arm a disturbance), ``play.py`` plays it at once, and the teardown finishes the
schedule and asks the checker. A violation of a kind not found yet (its findings and the disturbances it uses:
``Kind``) fails the example; Hypothesis then shrinks it to a short schedule that still fails, which is
kept as plain steps (``Round.best``) that replay without Hypothesis. A seed draws the same schedules again only
on the same Hypothesis version and the same code; the stored steps replay on any.

Hypothesis's example database is off (``database=None``): nothing is written to the working directory.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as use_seed
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from harness.products.explore.actor import RESEND_FAILS, Stuck
from harness.products.explore.play import ACTORS, LOCK, MODELS, Outcome, Play, Troupe, findings
from harness.products.explore.schedules import is_read
from harness.products.explore.world import Target

STEPS = 16  # steps drawn per schedule (after the prelude); Hypothesis shrinks a violating one from there
MAX_REQUESTS = 8  # a budget of "so many requests" draws up to this many
BUDGETS = ("end", "requests", "requests", "until", "until")  # to the end, a few requests, up to a write of a kind
OP_DRAWS = ("run", "run", "run", "delete", "delete", "prune", "prune", "pull")  # (drawn evenly: weights)
WAITS = (1.0, LOCK.ttl_s + 1, 2 * LOCK.ttl_s + 1)  # within a lease, past one, past both locks' (two-phase)
AHEAD = (1.0, LOCK.ttl_s + 1)
GSI_RANKS = 3
LEARN: list[dict] = [  # a schedule whose requests name every kind of request a drawn schedule can stop at
    {"actor": "C", "op": "run", "model": "m0"}, {"actor": "A", "op": "delete", "model": "m0"},
    {"actor": "A", "op": "prune"}, {"actor": "B", "op": "pull"}, {"actor": "C", "op": "run", "model": "m1"},
    {"actor": "B", "op": "delete", "model": "m1"}, {"actor": "B", "op": "prune"}]


class OutOfTime(BaseException):
    """The wall-time budget is spent: the round ends (not an Exception: Hypothesis must not take it for a bug)."""


class Found(AssertionError):
    """A violation of a kind this run has not found yet: Hypothesis shrinks the schedule that showed it."""


def vocabulary(target: Target, troupe: Troupe) -> list[str]:
    """The kinds of request (labels) a target's operations make: what a budget or a disturbance may name."""
    p = Play(target, troupe)
    for s in LEARN:
        p.step(s)
    p.finish()
    return sorted(p.seen)


def fault_kinds(target: Target) -> tuple[str, ...]:
    """(Hypothesis draws the first of a list more often than the last: what decides a commit's fate goes first.)"""
    return ("lost-then", "lost-answer", "throttle", "crash", "stop", "ahead") + (
        ("gsi",) if target.backend == "dynamodb" else ())


# The requests that decide a commit's fate, drawn more often as a disturbance's target (issue 55: drawn evenly
# from some 20 kinds, a seal was rarely hit): each kind of request counts this many times in the draw
FATE_WEIGHTS = {"seal": 8, "fate read": 4, "record write": 3, "collection": 3}
SEALS = ("UpdateItem seal", "PutObject seal")
FATE_READS = ("GetItem lock item", "GetObject head")
RECORD_WRITES = ("UpdateItem registry", "UpdateItem lock item", "BatchWriteItem put", "PutObject shard",
                 "PutObject head")  # (S3's head written by a grant: its fence)


def fate_class(label: str) -> str | None:
    """Which fate-deciding request a label is (a seal, a fate read, a record write, a collection), or None."""
    if label in SEALS:
        return "seal"
    if label in FATE_READS:
        return "fate read"
    if label in RECORD_WRITES:
        return "record write"
    if label.startswith("DeleteObjects") or (label.startswith("BatchWriteItem") and "delete" in label):
        return "collection"
    return None


def weight(label: str) -> int:
    return FATE_WEIGHTS.get(fate_class(label) or "", 1)


def weighted(labels: list[str]) -> list[str]:
    """The labels a disturbance's target is drawn from: each as many times as its weight, the heaviest first
    (Hypothesis's draws favour the first of a list, and shrink toward it)."""
    return [lab for lab in sorted(labels, key=lambda x: (-weight(x), x)) for _ in range(weight(lab))]


def disturbances(steps: list[dict]) -> set[str]:
    """The kinds of disturbance a schedule uses (a wait is a freeze)."""
    return {s.get("fault") or ("wait" if "wait" in s else "ahead" if "ahead" in s else "") for s in steps} - {""}


def signature(steps: list[dict], found: dict[str, int]) -> str:
    """A kind of violation: what it broke and which disturbances it took."""
    return f"{'+'.join(sorted(found))} by {'+'.join(sorted(disturbances(steps))) or 'no disturbance'}"


@dataclass(frozen=True)
class Kind:
    """A kind of violation found (its findings, and the disturbances its shrunk schedule needed): a schedule
    with the same findings that uses at least those disturbances is taken for another instance of it."""

    findings: frozenset[str]
    needs: frozenset[str]

    @classmethod
    def of(cls, steps: list[dict], found: dict[str, int]) -> Kind:
        return cls(frozenset(found), frozenset(disturbances(steps)))

    def covers(self, steps: list[dict], found: dict[str, int]) -> bool:
        return set(found) == self.findings and self.needs <= disturbances(steps)


def round_seed(seed: int, target: Target, n: int) -> int:
    """One Hypothesis seed per (run seed, target, round): stable across processes (no ``hash()``)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{target.name}/{n}".encode()).digest()[:8], "big")


@dataclass
class Round:
    """One Hypothesis run on one target: until a new kind of violation is found and shrunk, ``examples`` are
    drawn, or ``deadline`` (``time.monotonic()``) passes."""

    target: Target
    troupe: Troupe
    labels: list[str]
    known: list[Kind]
    deadline: float
    seed: int
    examples: int
    drawn: int = 0
    violating: int = 0  # drawn schedules that violated (a kind found before included)
    shrink_runs: int = 0
    errors: list[str] = field(default_factory=list)
    found_at: int | None = None  # the drawn schedule that first showed the new kind
    first: list[dict] | None = None  # ... its steps
    best: tuple[list[dict], Outcome] | None = None  # the shortest schedule that showed it
    out_of_time: bool = False
    reset: Callable[[], None] = lambda: None  # before each schedule (the seeded ids start again)
    shrink_s: float = 30.0  # Hypothesis's shrinking of a find may take this long (then minimize() goes on)
    shrink_until: float = float("inf")
    _digest: Any = field(default_factory=hashlib.sha256)
    fired: Counter[str] = field(default_factory=Counter)  # "<fault kind> at <fate class>": how often it fired

    @property
    def digest(self) -> str:
        """A digest of every drawn schedule's steps, in order: the same seed draws the same schedules."""
        return self._digest.hexdigest()

    @property
    def aims(self) -> list[str]:
        """Where a disturbance may be aimed: every label, the fate-deciding ones weighted (``FATE_WEIGHTS``)."""
        return weighted(self.labels)

    @property
    def pivots(self) -> list[str]:
        """Where a budget may end: before a write of some kind (a read in between changes nothing)."""
        return [lab for lab in self.labels if not is_read(lab)] or self.labels

    @property
    def shrinking(self) -> bool:
        return self.found_at is not None

    def judge(self, steps: list[dict], out: Outcome) -> None:
        """Count a played schedule; raise ``Found`` for a new kind of violation (keep the shortest)."""
        if not self.shrinking:
            self.drawn += 1
            for kind, lab in out.fired:  # where the drawn schedules' disturbances hit a fate-deciding request
                if (what := fate_class(lab)) is not None:
                    self.fired[f"{kind} at {what}"] += 1
            self.violating += out.violations > 0
            self._digest.update(json.dumps(steps, sort_keys=True).encode())
        else:
            self.shrink_runs += 1
        if not out.violations or any(k.covers(steps, out.findings) for k in self.known):
            return
        if not self.shrinking:
            self.found_at, self.first = self.drawn, list(steps)
            self.shrink_until = time.monotonic() + self.shrink_s
        if self.best is None or _size(steps) < _size(self.best[0]):
            self.best = (list(steps), out)
        raise Found(signature(steps, out.findings))


def _size(steps: list[dict]) -> tuple[int, int]:
    return len(steps), sum(len(str(s)) for s in steps)


def _final() -> bool:
    try:
        return current_build_context().is_final
    except Exception:  # noqa: BLE001 - outside a build context: not Hypothesis's final replay
        return False


class Schedules(RuleBasedStateMachine):
    """The rules: each draws one step and plays it; the teardown finishes the schedule and judges it."""

    def __init__(self, rnd: Round) -> None:
        super().__init__()
        if time.monotonic() > min(rnd.deadline, rnd.shrink_until) and not _final():
            rnd.out_of_time = True
            raise OutOfTime()
        self.rnd = rnd
        rnd.reset()
        # Hypothesis may try an example or two past max_examples: those play nothing (the count is exact)
        self.plays = rnd.shrinking or rnd.drawn < rnd.examples
        self.play: Play | None = None
        self.steps: list[dict] = []
        self.broken: str | None = None

    @initialize(data=st.data())
    def configure(self, data: Any) -> None:
        """The schedule's world: its configuration drawn where the target says ``random`` (its first step)."""
        config = {k: data.draw(st.sampled_from(values)) for k, values in sorted(self.rnd.target.draws.items())}
        if not self.plays:
            return
        self.play = Play(self.rnd.target, self.rnd.troupe, config or None)
        if config:
            self.steps.append({"config": config})

    def _do(self, step: dict) -> None:
        if self.play is None or self.broken:
            return
        try:
            if self.play.step(step):
                self.steps.append(step)
        except Stuck as e:
            self.broken = str(e)

    def _budget(self, data: Any) -> dict:
        kind = data.draw(st.sampled_from(BUDGETS))
        if kind == "requests":
            return {"requests": data.draw(st.integers(1, MAX_REQUESTS))}
        if kind == "until":
            return {"until": data.draw(st.sampled_from(self.rnd.pivots))}
        return {}

    def _busy(self) -> list[str]:
        return self.play.busy() if self.play else []

    # Hypothesis draws among the rules evenly: starting an operation, going on and arming a disturbance are each
    # two rules, so a schedule is mostly actors taking turns (a random scheduler) amid disturbances and freezes
    @rule(data=st.data())
    def start(self, data: Any) -> None:
        who = data.draw(st.sampled_from(ACTORS))  # (from a fixed list: a shrunk schedule keeps its meaning)
        op = data.draw(st.sampled_from(OP_DRAWS))
        step: dict = {"actor": who, "op": op}
        if op in ("run", "delete"):
            step["model"] = data.draw(st.sampled_from(MODELS))
        self._do({**step, **self._budget(data)})

    @rule(data=st.data())
    def start_another(self, data: Any) -> None:
        self.start(data)

    @precondition(lambda self: self._busy())
    @rule(data=st.data())
    def go(self, data: Any) -> None:
        who = data.draw(st.sampled_from(ACTORS))  # an idle one: nothing happens (the step is not kept)
        self._do({"actor": who, "go": True, **self._budget(data)})

    @precondition(lambda self: self._busy())
    @rule(data=st.data())
    def go_on(self, data: Any) -> None:
        self.go(data)

    @rule(seconds=st.sampled_from(WAITS))
    def wait(self, seconds: float) -> None:
        self._do({"wait": seconds})

    @rule(data=st.data())
    def disturb(self, data: Any) -> None:
        who = data.draw(st.sampled_from(ACTORS))
        kind = data.draw(st.sampled_from(fault_kinds(self.rnd.target)))
        if kind == "ahead":
            self._do({"actor": who, "ahead": data.draw(st.sampled_from(AHEAD))})
        elif kind == "gsi":
            self._do({"actor": who, "fault": "gsi", "rank": data.draw(st.integers(0, GSI_RANKS - 1))})
        elif kind == "lost-then":
            self._do({"actor": who, "fault": kind, "at": data.draw(st.sampled_from(self.rnd.aims)),
                      "then": data.draw(st.sampled_from(RESEND_FAILS))})
        else:
            self._do({"actor": who, "fault": kind, "at": data.draw(st.sampled_from(self.rnd.aims))})

    @rule(data=st.data())
    def disturb_again(self, data: Any) -> None:
        self.disturb(data)

    def teardown(self) -> None:
        if self.play is None:
            return
        play, self.play = self.play, None
        t0 = time.perf_counter()
        try:
            report = play.finish() if not self.broken else None
        except Stuck as e:
            report, self.broken = None, str(e)
        if report is None:
            self.rnd.errors.append(self.broken or "")
            return
        self.rnd.judge(self.steps, Outcome(play.words, findings(report), report["violations"],
                                           time.perf_counter() - t0, fired=play.fired()))


def run_round(rnd: Round) -> Round:
    """Draw up to ``rnd.examples`` schedules with Hypothesis (seeded), shrinking the first new violation."""

    def factory() -> Schedules:
        return Schedules(rnd)

    use_seed(rnd.seed)(factory)
    conf = settings(max_examples=max(1, rnd.examples), stateful_step_count=STEPS, database=None, deadline=None,
                    phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False, print_blob=False,
                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, derandomize=False)
    try:
        run_state_machine_as_test(factory, settings=conf)
    except OutOfTime:
        pass
    except Exception as e:  # noqa: BLE001 - Found (shrunk, kept in rnd.best), or Hypothesis's word on it
        # (out of time while Hypothesis replayed an example, the example stopped short: it calls that flaky)
        if rnd.best is None and not rnd.out_of_time:
            rnd.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
    return rnd


__all__ = ["FATE_WEIGHTS", "STEPS", "Kind", "Round", "fate_class", "fault_kinds", "round_seed", "run_round",
           "signature", "vocabulary", "weight", "weighted"]
