"""A suite's scenarios, one sync operation per trial, on one client: setup (untimed), the timed operation, records.

Why not Locust: a suite is one client doing one operation at a time, and what
it measures is the operation's phases, not a rate; Locust's users, spawning
and gevent loop would add nothing but a scheduler between the timer and the
request. The runner drives the datastore's public steps directly
(``stage``, ``locked``, ``pull``, ``prepare``, ``commit``) as swamp's
benchmark drives its sync service.

Per scenario and layout a fresh table or bucket (``fresh = "trial"``: one per
trial), seeded by a writer when the scenario says so; the writer's local view
is the warm cache of the push scenarios, a reader that pulled once is the
warm cache of the pull scenarios, and a new ``Datastore`` is a cold cache
(empty local view and cursor). Before each trial, untimed: the dirty paths are
staged (pushes) or another writer commits its changes (pulls); then the
operation is timed, phase by phase (``phases``). A failed scenario is recorded
with its error and the suite goes on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from harness.core.clock import Clock, SystemClock
from harness.core.work import Work
from harness.datastore.backends.base import Backend
from harness.datastore.catalog import Catalog
from harness.datastore.lock import LockConfig
from harness.datastore.sync import Datastore, Step, SyncConfig
from harness.products.suite import tree
from harness.products.suite.phases import (
    COMMIT,
    COMMIT_PULL,
    HELD,
    LOCK,
    PREPARE_UPLOAD,
    PUSH_PULL,
    PUSH_UPLOAD,
    PUSH_WRITEBACK,
    RELEASE,
    Phase,
    PhaseProbe,
    split_pull,
)
from harness.products.suite.spec import PUSHES, Suite, SuiteScenario


class Datastores(Protocol):
    """Where a scenario's tables and buckets come from (the command builds them through the plan's factory)."""

    def make(self, layout: str, name: str) -> Backend:
        """A new, empty, provisioned table or bucket ``name`` with ``layout``'s index."""

    def drop(self, backend: Backend) -> None:
        """Delete it (and everything in it)."""


@dataclass
class Trial:
    number: int
    scenario: str
    layout: str
    trial: int
    total_ms: float
    phases: list[Phase]

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "scenario": self.scenario, "layout": self.layout, "trial": self.trial,
                "total_ms": round(self.total_ms, 4), "phases": [p.to_dict() for p in self.phases]}


@dataclass
class Outcome:
    """One scenario on one layout: its trials, or why it did not run (not applicable) or stopped (error)."""

    scenario: SuiteScenario
    layout: str
    trials: list[Trial] = field(default_factory=list)
    error: str | None = None
    not_applicable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.scenario.number, "scenario": self.scenario.name, "layout": self.layout,
                "trials": len(self.trials), "error": self.error, "not_applicable": self.not_applicable}


class _Timed:
    """Times one step into a phase (``fn(work)``)."""

    def __init__(self, timer: Callable[[], float]) -> None:
        self.timer = timer

    def __call__(self, name: str, fn: Callable[[Work], Any], detail: Callable[[Work], str] | None = None) -> Phase:
        w = Work()
        t0 = self.timer()
        fn(w)
        return Phase(name, (self.timer() - t0) * 1000, w, detail(w) if detail else "")


class Runner:
    """Runs a suite's scenarios on the layouts asked for, the trials of every scenario interleaved.

    Every scenario's datastore is set up first; then each round runs one trial of every scenario, in an order
    shuffled per round (``seed``). So a burst of load on the machine (another process, a compaction) lands in
    one trial of many scenarios rather than in every trial of one, and the trials of a scenario sample the
    whole run: what the compare's intervals assume. ``on_trial`` sees each trial as it ends, ``say`` one line
    per setup and per round, ``on_outcome`` each scenario and layout at the end.
    """

    def __init__(self, suite: Suite, datastores: Datastores, *, tag: str, clock: Clock | None = None,
                 timer: Callable[[], float] = time.perf_counter, seed: int = 0,
                 on_trial: Callable[[Trial], None] | None = None,
                 on_outcome: Callable[[Outcome], None] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.suite, self.datastores, self.tag = suite, datastores, tag
        self.clock = clock or SystemClock()
        self.timer = timer
        self.timed = _Timed(timer)
        self.rng = random.Random(seed)
        self.on_trial = on_trial or (lambda _t: None)
        self.on_outcome = on_outcome or (lambda _o: None)
        self.say = say or (lambda _line: None)
        self.cfg = SyncConfig(namespace=None, lock_scope="datastore", index_commit="delta", lock=LockConfig(),
                              heartbeat=suite.datastore.heartbeat)  # fenced or not: the backend's (its plan's)

    # ---- the suite ------------------------------------------------------------------
    def run(self, layouts: tuple[str, ...]) -> list[Outcome]:
        outcomes = []
        for sc in self.suite.scenarios:
            for layout in layouts:
                why = None if sc.applies(layout) else sc.not_applicable.get(layout, "not listed in its layouts")
                outcomes.append(Outcome(sc, layout, not_applicable=why))
        cells = [_Cell(o) for o in outcomes if not o.not_applicable]
        try:
            for i, cell in enumerate(cells):
                t0 = self.timer()
                self._guard(cell, lambda c=cell: self._open(c))
                if cell.outcome.error is None:
                    self.say(f"harness: [{i + 1}/{len(cells)}] set up {self._label(cell)} "
                             f"({self.timer() - t0:.1f} s)")
            for trial in range(self.suite.trials):
                order = [c for c in cells if c.outcome.error is None]
                self.rng.shuffle(order)
                t0 = self.timer()
                for cell in order:
                    self._guard(cell, lambda c=cell, t=trial: self._one(c, t))
                self.say(f"harness: trial {trial + 1}/{self.suite.trials} of {len(order)} scenario runs "
                         f"({self.timer() - t0:.1f} s)")
        finally:
            for cell in cells:
                self._close(cell)
        for o in outcomes:
            self.on_outcome(o)
        return outcomes

    @staticmethod
    def _label(cell: _Cell) -> str:
        return f"{cell.outcome.scenario.number:>2} {cell.outcome.scenario.name} [{cell.outcome.layout}]"

    def _guard(self, cell: _Cell, step: Callable[[], None]) -> None:
        """Run one step of a scenario; a failure is its outcome's error (and its datastore goes), not the suite's."""
        try:
            step()
        except Exception as e:  # noqa: BLE001 - recorded with the scenario; the suite goes on with the others
            cell.outcome.error = f"{type(e).__name__}: {e}"[:500]
            self.say(f"harness: {self._label(cell)} FAILED: {cell.outcome.error}")
            self._close(cell)

    def _open(self, cell: _Cell) -> None:
        sc, layout = cell.outcome.scenario, cell.outcome.layout
        if sc.fresh == "scenario":
            cell.backend = self.datastores.make(layout, self._name(sc, layout))
            cell.state = self._setup(sc, cell.backend)

    def _one(self, cell: _Cell, trial: int) -> None:
        sc, layout = cell.outcome.scenario, cell.outcome.layout
        trial_backend = None
        try:
            if sc.fresh == "trial":
                trial_backend = self.datastores.make(layout, self._name(sc, layout, trial))
                cell.state = self._setup(sc, trial_backend)
            total, phases = self._trial(sc, cell.state, trial)
        finally:
            if trial_backend is not None:
                self.datastores.drop(trial_backend)
        t = Trial(sc.number, sc.name, layout, trial, total, phases)
        cell.outcome.trials.append(t)
        self.on_trial(t)

    def _close(self, cell: _Cell) -> None:
        backend, cell.backend = cell.backend, None
        if backend is None:
            return
        try:
            self.datastores.drop(backend)
        except Exception as e:  # noqa: BLE001 - a table left behind is named in the outcome, not fatal
            cell.outcome.error = cell.outcome.error or f"could not delete its datastore: {type(e).__name__}: {e}"[:500]

    def _name(self, sc: SuiteScenario, layout: str, trial: int | None = None) -> str:
        return f"suite-{self.tag}-{sc.number:02d}-{layout}" + (f"-t{trial + 1}" if trial is not None else "")

    # ---- state ----------------------------------------------------------------------
    def _store(self, probe: PhaseProbe, holder: str) -> Datastore:
        return Datastore(probe, Catalog(), self.cfg, clock=self.clock, holder=holder)  # type: ignore[arg-type]

    def _stamp(self) -> str:
        return datetime.fromtimestamp(self.clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def _setup(self, sc: SuiteScenario, backend: Backend) -> _State:
        """The untimed state a scenario's trials start from: the seeding writer, the warm reader."""
        probe = PhaseProbe(backend, self.timer)
        st = _State(probe=probe)
        if sc.seeded:
            st.writer = self._store(probe, "suite-writer")
            for m, f in tree.files(self.suite.shape):
                st.writer.stage(tree.path(m, f), tree.content(self.suite.shape, m, f, self._stamp()))
            self._push(st.writer, probe, two_phase=False)
        if sc.op not in PUSHES and sc.cache == "warm":
            st.reader = self._store(probe, "suite-reader")
            st.reader.pull(Work())
        return st

    def _trial(self, sc: SuiteScenario, st: _State, trial: int) -> tuple[float, list[Phase]]:
        shape = self.suite.shape
        assert st.probe is not None
        if sc.op in PUSHES:
            actor = st.writer if sc.cache == "warm" else self._store(st.probe, f"suite-cold-{trial + 1}")
            assert actor is not None
            if sc.dirty is None:
                for m, f in tree.files(shape):
                    actor.stage(tree.path(m, f), tree.content(shape, m, f, self._stamp()))
            else:
                for m, f in tree.spread(shape, sc.dirty):
                    actor.stage(tree.path(m, f), tree.changed(m, f, trial, self._stamp()))
            return self._push(actor, st.probe, two_phase=sc.op == "two-phase-push")
        if sc.remote_changes:
            assert st.writer is not None
            for m, f in tree.spread(shape, sc.remote_changes):
                st.writer.stage(tree.path(m, f), tree.changed(m, f, trial, self._stamp()))
            self._push(st.writer, st.probe, two_phase=False)
        reader = st.reader if sc.cache == "warm" else self._store(st.probe, f"suite-cold-{trial + 1}")
        assert reader is not None
        scope = [tree.partition(m) for m in range(sc.scope_models)] if sc.op == "scoped-pull" else None
        return self._pull(reader, st.probe, scope)

    # ---- the timed operations -----------------------------------------------------------
    def _push(self, store: Datastore, probe: PhaseProbe, *, two_phase: bool) -> tuple[float, list[Phase]]:
        """Push the staged paths: one lock around pull, upload and commit (swamp's pushChanged), or the
        upload first, outside the lock (preparePush), then the lock around pull and commit (commitPush)."""
        steps: list[Step] = []
        inside: list[Phase] = []
        before: list[Phase] = []

        def pushed(w: Work) -> str:
            return f"pushed={w.files_pushed}"

        def entries(w: Work) -> str:
            return f"entries={w.index_entries_written}"

        t0 = self.timer()
        if two_phase:
            before.append(self.timed(PREPARE_UPLOAD, store.prepare, pushed))
        with store.locked(steps) as grant:
            h0 = self.timer()
            inside.append(self.timed(COMMIT_PULL if two_phase else PUSH_PULL, lambda w: store.pull(w)))
            if not two_phase:
                inside.append(self.timed(PUSH_UPLOAD, store.prepare, pushed))
            inside.append(self.timed(COMMIT if two_phase else PUSH_WRITEBACK,
                                     lambda w: store.commit(grant, w), entries))
            held = (self.timer() - h0) * 1000
        total = (self.timer() - t0) * 1000
        probe.take()  # the pull's own calls: not split inside a push
        lock = next(s for s in steps if s.name == "lock")
        release = next(s for s in steps if s.name == "release")
        return total, [*before, Phase(LOCK, lock.ms, lock.work, f"attempts={lock.work.lock_attempts}"), *inside,
                       Phase(RELEASE, release.ms, release.work), Phase(HELD, held)]

    def _pull(self, store: Datastore, probe: PhaseProbe, scope: list[str] | None) -> tuple[float, list[Phase]]:
        probe.take()
        w = Work()
        t0 = self.timer()
        store.pull(w, scope)
        total = (self.timer() - t0) * 1000
        return total, split_pull(total, probe.take())


@dataclass
class _State:
    probe: PhaseProbe | None = None
    writer: Datastore | None = None
    reader: Datastore | None = None


@dataclass
class _Cell:
    """One scenario on one layout while the suite runs: its outcome, its datastore, the state its trials share."""

    outcome: Outcome
    backend: Backend | None = None
    state: _State = field(default_factory=_State)
