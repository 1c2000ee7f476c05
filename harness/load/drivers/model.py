"""The model driver: one swamp worker's iteration of the swamp loop on the harness's own model, and its row.

No Locust here: a ``SwampWorker`` (one of the "workers" the spec documents
describe: a swamp process syncing its datastore; Locust runs each as one user)
runs iterations through ``harness.datastore`` and returns an
``IterationOutcome`` (the row plus the steps); the Locust user turns that into
events. That keeps the workload testable without a runner.

Two things are called "worker" in this project: a Locust worker *process*
(the row's ``worker`` column: ``local`` or ``worker-N``; ``process`` in code)
and the swamp worker, one Locust user (the row's ``user`` column;
``SwampWorker`` in code). "Seed" means only pre-ageing a datastore
(``harness jobs pre-age``), and a random generator's seed is ``rng_seed``.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from harness.config.factory import sync_config
from harness.config.scenario import Scenario, Workload
from harness.core.clock import Clock, SystemClock
from harness.core.errors import HarnessError
from harness.core.work import Work
from harness.datastore.backends.base import Backend
from harness.datastore.catalog import Catalog
from harness.datastore.errors import error_kind
from harness.datastore.model import MODEL_TYPE
from harness.datastore.seed_state import load_state
from harness.datastore.sync import Datastore, Step
from harness.load.drivers.base import DriverContext, IterationOutcome
from harness.record.schema import QUERY_COLUMNS, SIZE_ITEMS, STEP_COLUMNS, STEP_REQUEST_COLUMNS

classify = error_kind  # the kinds the reports and Locust's failure table use


log = logging.getLogger("harness")


def summarize(steps: list[Step]) -> dict[str, Any]:
    """Per-step milliseconds and summed work counts: the row's measurement columns."""
    out: dict[str, Any] = {c: 0.0 for c in STEP_COLUMNS.values()}
    out.update({c: 0 for c in QUERY_COLUMNS})
    for n, ms in STEP_REQUEST_COLUMNS.values():
        out[n], out[ms] = 0, 0.0
    total = Work()
    pull_reads = 0
    for s in steps:
        step = s.name if s.name in STEP_COLUMNS else "release"
        out[STEP_COLUMNS[step]] += s.ms
        n, ms = STEP_REQUEST_COLUMNS[step]
        out[n] += s.work.total_requests
        out[ms] += s.work.request_ms
        total.add(s.work)
        if s.name == "pull":
            pull_reads += s.work.items_read
            out["pull_queries"] += s.work.queries
    out.update(
        files_pushed=total.files_pushed, files_pulled=total.files_pulled, items_read=total.items_read,
        pull_items_read=pull_reads, index_entries_written=total.index_entries_written,
        **{col: total.item_bytes.get(item, 0) for col, item in SIZE_ITEMS.items()},
        requests=total.total_requests, lock_attempts=total.lock_attempts, bytes_sent=total.bytes_sent,
        bytes_received=total.bytes_received, read_units=total.read_units, write_units=total.write_units,
        write_requests=total.write_requests, fencing_requests=total.fencing_requests,
        fencing_write_units=total.fencing_write_units,
    )
    return out


def iteration_plan(w: Workload, user: str, i: int) -> tuple[str, str, int]:
    """(model id, method, payload bytes) of worker ``user``'s iteration ``i``, by worker kind and lifecycle
    (the spec's ``INSTANCE="w${WORKER_ID}-i${ITERATION}"`` for disposable models): every driver names them alike."""
    method = w.methods[i % len(w.methods)]
    payload = w.payload_bytes[i % len(w.payload_bytes)]
    if w.lifecycle == "disposable":  # shared: a namespace's workers re-create each other's models by name
        model = f"shared-d{i % w.models_per_worker}" if w.shared_models else f"{user}-i{i}"
    elif w.shared_models:  # every worker cycles through the same models: their paths collide
        model = f"shared-m{i % w.models_per_worker}"
    elif w.kind == "write-stress":
        model = f"{user}-stress"
    else:
        model = f"{user}-m{i % w.models_per_worker}"
    return model, method, payload


def check(scenario: Scenario) -> None:
    """The model driver takes no options of its own."""
    extra = sorted(scenario.driver.options)
    if extra:
        raise HarnessError(f"{scenario.source or scenario.name}: [driver] {extra[0]} is a command driver's key: "
                           "set kind = \"command\" (the model driver takes none)")


def make(ctx: DriverContext) -> SwampWorker:
    """A swamp worker on the process's backend; a seeded run's worker starts where the seed left its namespace."""
    sw = SwampWorker(ctx.plan.scenario, ctx.backend, process=ctx.process, user=ctx.user, rng_seed=ctx.rng_seed,
                     namespace=ctx.namespace)
    state_dir = ctx.plan.seeding.state_dir
    if state_dir and not load_state(state_dir, sw.store):
        # the seed covered other namespaces (another fleet size or process count): say so, start empty
        log.warning("harness: %s: no seeded state for namespace %s in %s; it starts empty", sw.user,
                    sw.store.ns or "(shared)", state_dir)
    return sw


class SwampWorker:
    """One swamp 'worker' (one Locust user): its own datastore view, catalog and model plan.

    ``process`` names the Locust process it runs in (the row's ``worker``
    column); ``user`` names the seed worker itself (the row's ``user`` column).
    """

    def __init__(self, scenario: Scenario, backend: Backend, *, process: str, user: str,
                 clock: Clock | None = None, rng_seed: int | None = None, namespace: str | None = "") -> None:
        self.scenario, self.backend, self.process, self.user = scenario, backend, process, user
        built, wanted = backend.variant, scenario.datastore.variant
        if (built.fenced, built.bookkeeping) != (wanted.fenced, wanted.bookkeeping):
            raise HarnessError(f"the backend was built for another system (fencing = {str(built.fenced).lower()}, "
                               f"bookkeeping = {built.bookkeeping}) than the scenario's (fencing = "
                               f"{str(wanted.fenced).lower()}, bookkeeping = {wanted.bookkeeping}): build it "
                               "from the scenario (config.factory.Factory.backend)")
        if namespace == "":  # not given: the worker's own (per-worker), or the shared one
            namespace = user if scenario.datastore.namespaces == "per-worker" else None
        cfg = sync_config(scenario, namespace)
        self.rng = random.Random(rng_seed)
        self.pause_rng = random.Random(f"{rng_seed}-pauses") if rng_seed is not None else random.Random()
        self.events: list[dict] = []
        pauses = scenario.fidelity.pauses
        self.store = Datastore(backend, Catalog(), cfg, clock=clock or SystemClock(), holder=user, rng=self.rng,
                               recorder=self._record, pauses=self._pause_for if pauses.probability > 0 else None)
        self.iteration = 0

    def _record(self, event: dict) -> None:
        """The datastore's history events, tagged with who made them (the heartbeat's come from its thread)."""
        self.events.append({**event, "worker": self.process, "user": self.user, "iteration": self.iteration - 1})

    def _pause_for(self, point: str) -> float:
        """The scenario's injected stop-the-world pause: seconds to stall at ``point`` (mostly 0)."""
        p = self.scenario.fidelity.pauses
        return p.duration_s if point == "commit" and self.pause_rng.random() < p.probability else 0.0

    def plan(self, i: int) -> tuple[str, str, int]:
        """(model id, method, payload bytes) for iteration ``i``, by worker kind and lifecycle."""
        return iteration_plan(self.scenario.workload, self.user, i)

    def stop(self) -> tuple[list[dict], list[dict]]:
        """An iteration cut short by the end of the test: its history still counts."""
        events, self.events = self.events, []
        return events, []

    def run_once(self, intended: float | None = None) -> IterationOutcome:
        """One iteration; ``intended``: an open fleet's arrival, its intended start (epoch seconds)."""
        i = self.iteration
        self.iteration += 1
        model, method, payload = self.plan(i)
        steps: list[Step] = []
        error: BaseException | None = None
        t_start = time.time()
        t0 = time.perf_counter()
        failures: list[tuple[str, BaseException]] = []
        try:
            self.store.sync_run(model, method, payload, steps)
        except Exception as e:  # noqa: BLE001 - every failure is classified and recorded
            failures.append(("", e))
        # The cleanups run after a failed sync too: a disposable model must not outlive its iteration (a model
        # left in the catalog is never orphaned, so never pruned); a failed cleanup says so in the row.
        if self.scenario.workload.lifecycle == "disposable" and self.store.catalog.has_model(
                self.store.ns, MODEL_TYPE, model):
            try:
                self.store.delete_model(model, steps)
            except Exception as e:  # noqa: BLE001
                failures.append(("delete skipped", e))
        every = self.scenario.datastore.prune_every
        if every and (i + 1) % every == 0:
            try:
                self.store.prune(steps)
            except Exception as e:  # noqa: BLE001
                failures.append(("prune skipped", e))
        total_ms = (time.perf_counter() - t0) * 1000
        error = failures[0][1] if failures else None
        message = "; ".join(f"{what}: {classify(e)}: {e}" if what else str(e) for what, e in failures)
        row: dict[str, Any] = {
            "ts_start": t_start, "ts_end": t_start + total_ms / 1000, "worker": self.process,
            "user": self.user, "scenario": self.scenario.name, "backend": self.backend.name, "iteration": i,
            "model_id": model, "ok": error is None, "error_kind": classify(error) if error else "",
            "error": message[:500], "total_ms": total_ms,
            "ts_intended": t_start if intended is None else intended,
            "wait_ms": total_ms if intended is None else (t_start - intended) * 1000 + total_ms,
        }
        row.update(summarize(steps))
        row["catalog_rows"] = self.store.catalog.rows(self.store.ns)
        events, self.events = self.events, []
        return IterationOutcome(row, steps, error, events)
