"""Collecting a test's rows: what each Locust process delivered, and the wait for every final report.

A test's record is closed only when every Locust process that ran it has
delivered its rows: on a stop, the master asks each worker for its final
report (a custom message carrying the rows it has left and how many it sent)
and waits for it, a bounded time. A worker that never answers (killed, lost)
is named in ``run.json``'s ``incomplete``, and its rows up to its last report
are kept. Rows that arrive for a test already closed are written beside it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
from locust.runners import STATE_MISSING

from harness.aws.fidelity.probe import Probe
from harness.config.plan import RunPlan
from harness.load.process import FLUSH_MESSAGE
from harness.load.web.live import Live
from harness.record.generator import GeneratorLog
from harness.record.keys import KeysLog
from harness.record.spans import SpanWriter
from harness.record.writer import HistoryWriter, ShardWriter

log = logging.getLogger("harness")

FINAL_WAIT_S = 20.0  # after a stop, how long the master waits for a worker's final report
GONE_GRACE_S = 2.0  # a worker gone from the master (or missing) for this long has no final report coming


@dataclass
class Inflow:
    """What one worker process delivered for the current test."""

    process: str
    pid: int | None = None
    rows: int = 0
    events: int = 0
    throttles: int = 0
    final: dict | None = None
    since_gone: float | None = None  # when the master first saw it gone or missing without a final report


@dataclass
class ActiveTest:
    """The running test: its plan, its writers, and what every process delivered so far."""

    number: int
    dir: Path
    plan: RunPlan
    started_at: float
    run_time_s: float | None
    bound_s: float
    options: dict
    writer: ShardWriter
    history: HistoryWriter
    generator: GeneratorLog
    live: Live
    keys: KeysLog
    probe: Probe | None = None
    observer: Any = None  # harness.load.observing.Running: the datastore read from outside (observed.csv)
    inflows: dict[str, Inflow] = field(default_factory=dict)
    stop_reason: str | None = None
    stopping_at: float | None = None
    spawned: bool = False
    finishing: bool = False
    greenlets: list = field(default_factory=list)
    throttle_marks: list[tuple[float, int]] = field(default_factory=list)
    spans: SpanWriter | None = None  # made when the first span comes (a command-driver run)
    gate: Any = None  # the abort thresholds' rows (harness.gates.live.LiveGate), when the scenario has one

    @property
    def scenario(self) -> Any:
        return self.plan.scenario

    def add(self, rows: list[dict], events: list[dict], spans: list[dict] | None = None) -> None:
        self.writer.add(rows)
        self.history.add(events)
        self.add_spans(spans)
        self.live.add(rows)
        self.live.add_events(events)
        if self.gate is not None:
            self.gate.add(rows)

    def add_spans(self, spans: list[dict] | None) -> None:
        if spans:
            if self.spans is None:
                self.spans = SpanWriter(self.dir, tag=self.writer.tag)
            self.spans.add(spans)

    def processes(self) -> dict[str, dict]:
        """run.json's ``processes``: what each worker delivered and said it sent."""
        return {i.process: {"pid": i.pid, "rows": i.rows, "events": i.events,
                            "rows_sent": i.final.get("sent") if i.final else None,
                            "complete": i.final is not None and i.final.get("sent") == i.rows}
                for i in self.inflows.values()}


def receive(t: ActiveTest | None, closed: dict[int, Path], client_id: str, payload: dict) -> None:
    """A worker's batch (stats report or final message) on the master: into the running test, or beside a
    closed one."""
    number = payload.get("test")
    if t is None or t.number != number:
        late(closed, number, payload)
        return
    inflow = t.inflows.get(client_id)
    if inflow is None:  # a worker that joined during the test
        inflow = t.inflows[client_id] = Inflow(process=payload.get("process", client_id))
    inflow.process, inflow.pid = payload.get("process", inflow.process), payload.get("pid")
    rows, events = payload.get("rows") or [], payload.get("events") or []
    t.add(rows, events, payload.get("spans"))
    try:
        t.keys.add(inflow.process, payload.get("keys") or [])
    except OSError:
        log.exception("harness: cannot write %s", t.keys.path)
    inflow.rows += len(rows)
    inflow.events += len(events)
    inflow.throttles = int(payload.get("throttles") or 0)
    if payload.get("final"):
        inflow.final = payload


def late(closed: dict[int, Path], number: Any, payload: dict) -> None:
    rows = payload.get("rows") or []
    test_dir = closed.get(number) if isinstance(number, int) else None
    if not rows and not payload.get("events") and not payload.get("spans"):
        return
    if test_dir is None:
        log.warning("harness: %d rows from %s for unknown test %r dropped", len(rows),
                    payload.get("process"), number)
        return
    w, h = ShardWriter(test_dir, tag="late"), HistoryWriter(test_dir, tag="late")
    w.add(rows)
    w.flush()
    h.add(payload.get("events") or [])
    h.flush()
    if payload.get("spans"):
        sw = SpanWriter(test_dir, tag="late")
        sw.add(payload["spans"])
        sw.flush()
    log.warning("harness: %d rows from %s arrived after test %03d was closed; written to %s (run.json's "
                "counts do not include them)", len(rows), payload.get("process"), number, test_dir)


def collect_finals(t: ActiveTest, runner: Any) -> list[dict]:
    """Wait (bounded) for every worker's final report; name those that never came."""
    deadline = time.monotonic() + FINAL_WAIT_S
    asked: set[str] = set()
    lost: dict[str, str] = {}
    while True:
        waiting = []
        for cid, inflow in t.inflows.items():
            if inflow.final is not None or cid in lost:
                continue
            node = runner.clients.get(cid)
            if node is None or node.state == STATE_MISSING:
                inflow.since_gone = inflow.since_gone or time.monotonic()
                if time.monotonic() - inflow.since_gone >= GONE_GRACE_S:
                    lost[cid] = ("the process stopped answering the master (killed or lost); rows up to its "
                                 "last report are kept" if node is not None else
                                 "the process left the master before its final report; rows up to its last "
                                 "report are kept")
                    continue
            waiting.append(cid)
            if cid not in asked and node is not None:
                runner.send_message(FLUSH_MESSAGE, {"test": t.number}, client_id=cid)
                asked.add(cid)
        if not waiting:
            break
        if time.monotonic() >= deadline:
            for cid in waiting:
                lost[cid] = f"no final report within {FINAL_WAIT_S:g} s of the stop; rows up to its last " \
                            "report are kept"
            break
        gevent.sleep(0.1)
    out = [{"process": t.inflows[cid].process, "reason": why} for cid, why in lost.items()]
    for inflow in t.inflows.values():
        if inflow.final is not None and inflow.final.get("sent") != inflow.rows:
            out.append({"process": inflow.process, "reason": f"it sent {inflow.final.get('sent')} rows and "
                                                             f"{inflow.rows} arrived"})
    for entry in out:
        log.warning("harness: test %03d: %s is incomplete: %s", t.number, entry["process"], entry["reason"])
    return sorted(out, key=lambda e: e["process"])
