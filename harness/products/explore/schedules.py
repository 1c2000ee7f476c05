"""Schedules: one operation of actor A, one disturbance at one of its request boundaries, actor B around it.

Each schedule is replayed in a world of its own (``world.py``): a prelude
gives both actors the models (A and B run m0; for ``prune``, A has run m1 and
deleted it), A's operation runs with the disturbance at boundary k, B runs its
operation where the disturbance lets it (a freeze, a crash), A pushes once
more (not in quick: its next push deletes the garbage it kept) and B syncs m0
(a full commit writes back whatever a stale view still holds), and the
checker judges the history against the final state.

A schedule holds a single disturbance at a single boundary, so it is its own
shrunk form: its ``steps`` say it in words, e.g. ``A: sync, request 7 of 9
(UpdateItem seal) frozen 7 s``, ``B: sync m0``, ``A resumes``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.core.work import Work
from harness.products.explore.faults import DISTURBANCES, Crash
from harness.products.explore.world import LAYOUTS, LOCK, Lab, Target, World, new_world
from harness.safety.checker import FINDINGS, check
from harness.safety.fresh import with_fresh_reads
from harness.safety.state import snapshot

OPS = ("sync", "model-run", "delete", "prune", "pull")
# what B does while A is frozen or after A crashed: each is a schedule of its own (crash: all of them, in turn)
B_OPS: dict[str, Callable[[Any], None]] = {
    "sync m0": lambda s: s.sync_run("m0", "get_load", 100, []),
    "delete m0, prune": lambda s: (s.delete_model("m0", []), s.prune([])),
    "sync m1": lambda s: s.sync_run("m1", "get_load", 100, []),  # re-creates m1 where A deleted it
}
QUICK_B_OPS = ("sync m0",)
HELD = "sync m0, held at its commit"  # B runs m0 up to its commit during A's freeze, and commits after A's op
FREEZE_S = 2 * LOCK.ttl_s + 1  # past the model lock's and the global lock's TTL


def ops_for(sync: str) -> tuple[str, ...]:
    """``sync`` is the one-lock profile's run, ``model-run`` the two-phase one's."""
    return tuple(o for o in OPS if o != ("model-run" if sync == "one-lock" else "sync"))


def prelude(w: World, op: str) -> None:
    """Both actors know m0; for ``prune``, A ran m1 and deleted it (its data are the orphan)."""
    w.a.sync_run("m0", "get_uptime", 100, [])
    w.b.sync_run("m0", "get_uptime", 100, [])
    if op == "prune":
        w.a.sync_run("m1", "get_uptime", 100, [])
        w.a.delete_model("m1", [])
    w.clock.advance(0.1)


def run_op(w: World, op: str) -> None:
    if op in ("sync", "model-run"):
        w.a.sync_run("m0", "get_memory", 100, [])
    elif op == "delete":
        w.a.delete_model("m0", [])
    elif op == "prune":
        w.a.prune([])
    else:
        w.a.pull(Work())


@dataclass
class Schedule:
    target: Target
    op: str
    boundary: int  # 0-based: before A's request ``boundary`` of its operation
    requests: int
    request: str  # that request, in words
    disturbance: str
    other: str | None  # B's operation (freeze, crash), or None
    steps: list[str] = field(default_factory=list)
    violations: int = 0
    findings: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target.name, "backend": self.target.backend, "sync": self.target.sync,
                "layout": self.target.layout, "fencing": self.target.fencing, "op": self.op,
                "boundary": self.boundary + 1, "requests": self.requests, "request": self.request,
                "disturbance": self.disturbance, "other": self.other, "violations": self.violations,
                "findings": self.findings, "steps": self.steps, "error": self.error}


def learn(target: Target, op: str, lab: Lab) -> list[str]:
    """A's request sequence for ``op`` (after the prelude), undisturbed: one label per request."""
    w = new_world(target, lab)
    tape = lab.tape(target)
    prelude(w, op)
    tape.arm()
    run_op(w, op)
    tape.disarm()
    return tape.seen


READS = ("GetItem", "BatchGetItem", "Query", "Scan", "GetObject", "HeadObject", "ListObjectsV2", "HeadBucket")


def is_read(request: str) -> bool:
    return request.split(" ", 1)[0] in READS


def schedules(target: Target, op: str, seq: list[str], quick: bool) -> Iterator[Schedule]:
    """Every boundary, every disturbance; less what cannot differ.

    A crash before a read is the crash before the next write (a read changes nothing), so crashes go at writes
    only. ``quick`` also keeps only the first of a run of identical requests (a file's chunks, one after
    another), loses answers only of writes (a read sent again reads again), and freezes A during B's ``sync
    m0`` only.
    """
    others = QUICK_B_OPS if quick else (*B_OPS, HELD)
    for k, request in enumerate(seq):
        if quick and k and seq[k - 1] == request:
            continue
        for d in DISTURBANCES:
            if d == "gsi-lag" and not (target.backend == "dynamodb" and request == "Query GSI"):
                continue
            if d == "crash" and is_read(request):
                continue
            if d == "lost-answer" and quick and is_read(request):
                continue
            if d == "freeze":
                for other in others:
                    yield Schedule(target, op, k, len(seq), request, d, other)
            else:
                yield Schedule(target, op, k, len(seq), request, d, "crash" if d == "crash" else None)


class Held:
    """B's sync of m0 in a thread of its own, stopped at its commit (its datastore's pause point) until released:
    the interleaving B pulls, A goes on, B commits (A is frozen meanwhile, so the two never run at once)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.reached, self.go = threading.Event(), threading.Event()
        self.outcome: str | None = None
        self.started = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _pause(self, point: str) -> float:
        self.reached.set()
        self.go.wait(60)
        return 0.0

    def _run(self) -> None:
        self.store.pauses = self._pause
        try:
            self.outcome = _quietly(lambda: B_OPS["sync m0"](self.store))
        finally:
            self.store.pauses = None
            self.reached.set()

    def start(self) -> str:
        self.started = True
        self.thread.start()
        self.reached.wait(60)
        return f" ({self.outcome})" if self.outcome else ""

    def finish(self) -> str:
        self.go.set()
        self.thread.join(60)
        return f" ({self.outcome})" if self.outcome else ""


def _quietly(fn: Callable[[], Any]) -> str | None:
    """Run an actor's step; its failure (a refusal, a timeout) is part of the schedule, not the explorer's."""
    try:
        fn()
    except Crash:
        return "crashed"
    except Exception as e:  # noqa: BLE001 - recorded in the schedule's steps
        return f"{type(e).__name__}: {str(e)[:120]}"
    return None


def replay(s: Schedule, lab: Lab, quick: bool = False) -> Schedule:
    """Run one schedule in a fresh world and check it (``quick``: B's last sync only, not A's next push)."""
    w = new_world(s.target, lab)
    prelude(w, s.op)
    return disturb(w, s, lab, quick)


def disturb(w: World, s: Schedule, lab: Lab, quick: bool = False) -> Schedule:
    """Play schedule ``s`` in world ``w``, where the prelude of ``s.op`` has run, and check it. The world is used
    up: a schedule's disturbance, B's operations and the last syncs change it."""
    tape = lab.tape(s.target)
    where = f"A: {s.op}, request {s.boundary + 1} of {s.requests} ({s.request})"
    b_ops = [s.other] if s.other in B_OPS else list(B_OPS) if s.disturbance == "crash" else []

    held = Held(w.b) if s.other == HELD else None

    def b_runs() -> None:
        w.clock.advance(FREEZE_S)
        if held is not None:
            s.steps.append(f"B: {HELD.split(',')[0]}, up to its commit" + held.start())
            return
        for name in b_ops:
            got = _quietly(lambda name=name: B_OPS[name](w.b))
            s.steps.append(f"B: {name}" + (f" ({got})" if got else ""))

    what = {"freeze": f"frozen {FREEZE_S:g} s", "lost-answer": "lands, its answer lost (botocore retries)",
            "crash": "crashed there for good", "gsi-lag": "misses its newest item"}[s.disturbance]
    s.steps.append(f"{where} {what}")
    tape.arm(s.boundary, s.disturbance, on_freeze=b_runs if s.disturbance == "freeze" else None)
    got = _quietly(lambda: run_op(w, s.op))
    tape.disarm()
    tape.reset()  # (the crashed actor's client serves the next schedule)
    if s.disturbance == "crash":
        b_runs()
    elif s.disturbance == "freeze":
        s.steps.append("A resumes" + (f" ({got})" if got else ""))
    elif got:
        s.steps.append(f"A: {got}")
    if held is not None and held.started:
        s.steps.append("B commits" + held.finish())
    w.clock.advance(0.1)
    if not quick and s.disturbance != "crash":  # A's next push too: garbage it kept may be someone's content now
        _quietly(lambda: w.a.sync_run("m2", "get_uptime", 100, []))
    _quietly(lambda: w.b.sync_run("m0", "get_uptime", 100, []))  # a full commit writes back what a stale view holds
    report = check(w.events, with_fresh_reads(w.backend, w.events, snapshot(w.backend)))
    s.violations = report["violations"]
    s.findings = {k: report[k] for k in FINDINGS if report[k]}
    if s.violations:
        s.steps.append(": ".join(("then", ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.findings.items()))))
    return s


def targets(backend: str | None, sync: str | None, layout: str | None, fencing: bool,
            quick: bool = False, uploads: str = "profile", shards: str = "model") -> list[Target]:
    """What to explore: the asked-for backend, profile and layout, or every one (quick: each backend's first);
    ``uploads`` and ``shards``, the configurations (``world.Target``)."""
    out = []
    for be in ([backend] if backend else ["dynamodb", "s3"]):
        for prof in ([sync] if sync else ["one-lock", "two-phase"]):
            for lay in ([layout] if layout else LAYOUTS[be][:1] if quick else LAYOUTS[be]):
                out.append(Target(be, prof, lay, fencing, uploads, shards if be == "s3" else "model"))
    return out


__all__ = ["OPS", "Schedule", "disturb", "learn", "prelude", "replay", "schedules", "targets"]
