"""The tests one Locust master (or single process) runs: each one recorded, finalised and reported.

Headless, a run is one test and its run directory is the one given. With the
web UI, a run directory is a *session*: each test started from the UI is a
complete run directory of its own under ``SESSION/tests/NNN/`` (run.json,
iterations/, history/, probes.csv, generator.csv, report/), and the
session's ``run.json`` lists every test.

A test's record is closed only when every Locust process that ran it has
delivered its rows: on a stop, the master asks each worker for its final
report (a custom message carrying the rows it has left and how many it sent)
and waits for it, a bounded time. A worker that never answers (killed, lost)
is named in ``run.json``'s ``incomplete``, and its rows up to its last report
are kept.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gevent
from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner

from harness.aws.fidelity.probe import PROBES_CSV, Probe, Target
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.load.iteration import IterationOutcome
from harness.load.process import (
    FLUSH_MESSAGE,
    HarnessProcess,
    endpoints_from_options,
    load_scenario,
    throttle_count,
)
from harness.load.web import tab
from harness.load.web.live import Live
from harness.record import runinfo
from harness.record.generator import GeneratorLog
from harness.record.writer import HistoryWriter, ShardWriter

log = logging.getLogger("harness")

FINAL_WAIT_S = 20.0  # after a stop, how long the master waits for a worker's final report
GONE_GRACE_S = 2.0  # a worker gone from the master (or missing) for this long has no final report coming
GENERATOR_EVERY_S = 3.0  # generator.csv sampling (Locust's CPU measure is set to the same interval)
WATCH_EVERY_S = 1.0
REPORT_LAG_S = 3.5  # workers report every 3 s: the live window ends this long ago on a master
LIVE_WINDOW_S = 10.0


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


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
    number: int
    dir: Path
    scenario: scenarios.Scenario
    started_at: float
    run_time_s: float | None
    bound_s: float
    options: dict
    writer: ShardWriter
    history: HistoryWriter
    generator: GeneratorLog
    live: Live
    probe: Probe | None = None
    inflows: dict[str, Inflow] = field(default_factory=dict)
    stop_reason: str | None = None
    stopping_at: float | None = None
    spawned: bool = False
    finishing: bool = False
    greenlets: list = field(default_factory=list)
    throttle_marks: list[tuple[float, int]] = field(default_factory=list)


class Session:
    """The master's (or single process's) record of its tests."""

    def __init__(self, process: HarnessProcess) -> None:
        self.process = process
        self.env = process.environment
        self.runner = self.env.runner
        opts = self.env.parsed_options
        self.web = self.env.web_ui is not None
        self.root = Path(opts.run_dir).resolve()
        self.distributed = isinstance(self.runner, MasterRunner)
        self.current: ActiveTest | None = None
        self.closed_tests: dict[int, Path] = {}
        self.pending_form: dict[str, Any] = {}  # what the web form asked for the next test
        self.signal_reason: str | None = None
        self.quitting = False
        self.reports: dict[int, subprocess.Popen] = {}
        self.last_tab: list[dict] = []
        self.headless_run_time: float | None = None  # `--headless -t`: timed here, from the test's start
        self.locust_ready = False  # Locust's own SIGTERM handler is installed (see install_signal_notes)
        self.base = self._base_info()

    # ---- run.json --------------------------------------------------------------------

    def _base_info(self) -> dict:
        opts = self.env.parsed_options
        endpoints = endpoints_from_options(opts)
        resources = runtime.Resources.for_run(opts.run_id, opts.table or None, opts.bucket or None)
        stand_in = self.process.server and runinfo.stand_in(self.process.server)
        if not stand_in and getattr(opts, "stand_in_info", ""):
            stand_in = _parse_stand_in(opts.stand_in_info)
        return {"run_id": opts.run_id, "endpoint": runtime.endpoint_summary(endpoints),
                "endpoint_kind": endpoints.kind, "resources": {"table": resources.table, "bucket": resources.bucket},
                "versions": runinfo.versions(), "host": runinfo.host(), "stand_in": stand_in or None}

    def open(self) -> None:
        """A web session's run.json exists from the start (the tests list fills as tests run)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.web:
            return
        sc = load_scenario(self.env.parsed_options)
        runinfo.write(self.root, {**self.base, "session": True, "status": "open", "scenario": sc.to_dict(),
                                  "scenario_name": sc.name, "backend": sc.backend, "started_at": None,
                                  "ended_at": None, "tests": [], "rows_written": 0,
                                  "fleet": {"workers": self.env.parsed_options.num_users or sc.fleet.workers,
                                            "processes": self._process_count()}})

    def _process_count(self) -> int:
        if self.distributed:
            return len(self.runner.clients) or int(getattr(self.env.parsed_options, "expect_workers", 1) or 1)
        return 1

    def _session_entry(self, t: ActiveTest, info: dict) -> dict:
        return {"number": t.number, "dir": str(t.dir.relative_to(self.root)), "status": info["status"],
                "started_at": info["started_at"], "ended_at": info["ended_at"], "scenario_name": t.scenario.name,
                "scenario_source": t.scenario.source, "users": t.options["users"],
                "spawn_rate": t.options["spawn_rate"], "run_time_s": t.run_time_s, "options": t.options,
                "stop_reason": info.get("stop_reason"), "rows": info.get("rows_written", 0),
                "incomplete": info.get("incomplete", []), "report": info.get("report")}

    def _update_session(self, t: ActiveTest, info: dict) -> None:
        if not self.web:
            return
        s = runinfo.read(self.root)
        entries = [e for e in s["tests"] if e["number"] != t.number] + [self._session_entry(t, info)]
        entries.sort(key=lambda e: e["number"])
        s["tests"] = entries
        s["started_at"] = entries[0]["started_at"]
        s["ended_at"] = entries[-1]["ended_at"]
        s["rows_written"] = sum(e["rows"] or 0 for e in entries)
        runinfo.write(self.root, s)

    def _set_report(self, number: int, test_dir: Path, **fields: Any) -> None:
        info = runinfo.update(test_dir, **fields)
        if self.web:
            s = runinfo.read(self.root)
            for e in s["tests"]:
                if e["number"] == number:
                    e["report"] = info.get("report")
                    e["report_error"] = info.get("report_error")
            runinfo.write(self.root, s)

    # ---- start -------------------------------------------------------------------------

    def start_test(self) -> None:
        """``test_start`` on the master / single process: a new record, then the load may begin."""
        self.locust_ready = True  # a test starts only once Locust's main loop runs, its handlers installed
        if self.current is not None:  # a start request that came before the last test was closed
            log.warning("harness: test %03d was still open when a new test started; closing it first",
                        self.current.number)
            self.finish_test()
        opts = self.env.parsed_options
        form, self.pending_form = self.pending_form, {}
        users = int(opts.num_users or 1)
        rate = float(opts.spawn_rate or users)
        if "run_time_s" in form:
            run_time_s = form["run_time_s"]
        else:
            run_time_s = self.headless_run_time or (float(opts.run_time) if opts.run_time else None)
        sc = load_scenario(opts, users=users, spawn_rate=rate, run_time_s=run_time_s)
        bound = run_time_s or sc.fleet.duration_s
        if self.web:
            number, test_dir = runinfo.new_test_dir(self.root)
        else:
            number, test_dir = 1, self.root
        clients, backend = self.process.build(sc)
        runtime.ensure_owned(clients, backend, opts.allow_foreign_resources)
        participants = self._participants()
        share = 1.0 / max(1, len(participants)) if self.distributed else 1.0
        opts.test_number, opts.capacity_share = number, share  # ride the spawn messages to the workers
        if self.process.sends_load:
            self.process.setup_load(number, sc, clients, backend, share)
        tag = "master" if self.distributed else "local"
        t = ActiveTest(number=number, dir=test_dir, scenario=sc, started_at=time.time(), run_time_s=run_time_s,
                       bound_s=bound, writer=ShardWriter(test_dir, tag=tag), history=HistoryWriter(test_dir, tag=tag),
                       generator=GeneratorLog(test_dir),
                       live=Live(LIVE_WINDOW_S, REPORT_LAG_S if self.distributed else 0.0),
                       options={"scenario": opts.scenario, "backend": sc.backend, "latency": opts.latency or None,
                                "users": users, "spawn_rate": rate, "run_time_s": run_time_s,
                                "run_dir": str(self.root)})
        t.throttle_marks.append((t.started_at, 0))
        for cid in participants:
            t.inflows[cid] = Inflow(process=f"worker-{self.runner.get_worker_index(cid)}")
        self.current = t
        fidelity = sc.fidelity.resolve(endpoints_from_options(opts).kind, share, opts.latency or None)
        info = {**self.base, "scenario": sc.to_dict(), "scenario_name": sc.name, "backend": sc.backend,
                "started_at": _iso(t.started_at), "ended_at": None, "status": "running",
                "fidelity": asdict(fidelity), "fleet": {"workers": users, "spawn_rate": rate,
                                                        "processes": len(participants) or 1},
                "stop_reason": None, "incomplete": [], "rows_written": 0, "options": t.options,
                "test": {"number": number, "session": str(self.root) if self.web else None}}
        runinfo.write(test_dir, info)
        self._update_session(t, info)
        if fidelity.enabled and fidelity.probe_every_s > 0:
            t.probe = self._start_probe(backend, test_dir, fidelity.probe_every_s)
        t.greenlets.append(gevent.spawn(self._sample_generator, t))
        t.greenlets.append(gevent.spawn(self._watch, t))
        why = (f"run time reached ({bound:g} s)" if run_time_s else
               f"the scenario's duration reached ({bound:g} s; no run time was given)")
        t.greenlets.append(gevent.spawn_later(bound, self.stop_test, why))
        limit = f"run time {bound:g} s" + ("" if run_time_s else " (the scenario's duration: none was given)")
        log.info("harness: test %03d started: %s on %s, %d users at %g/s, %s -> %s", number, sc.name, sc.backend,
                 users, rate, limit, test_dir)

    def _participants(self) -> list[str]:
        if not self.distributed:
            return []
        c = self.runner.clients
        return [w.id for w in c.ready + c.running + c.spawning]

    def _start_probe(self, backend: Any, test_dir: Path, every_s: float) -> Probe:
        """The one place the stand-in probe starts (it stops in ``finish_test``).

        It gets primitives, not the backend: a fixed small partition of the run's
        table (its GSI) or a fixed prefix of its bucket.
        """
        endpoints = endpoints_from_options(self.env.parsed_options)
        if backend.name == "dynamodb":
            target = Target("dynamodb", endpoints.dynamodb, backend.table, index="gsi1")
        else:
            target = Target("s3", endpoints.s3, backend.bucket, key=backend.objects.key(".probe"))
        return Probe(target, test_dir, every_s).start()

    # ---- during --------------------------------------------------------------------------

    def record(self, outcome: IterationOutcome) -> None:
        """A single process's own finished iteration."""
        t = self.current
        if t is None:
            return
        t.writer.add([outcome.row])
        t.history.add(outcome.events)
        t.live.add([outcome.row])

    def record_events(self, events: list[dict]) -> None:
        """A single process's history events that came without a row."""
        if self.current is not None:
            self.current.history.add(events)

    def receive(self, client_id: str, payload: dict) -> None:
        """A worker's batch (stats report or final message) on the master."""
        number = payload.get("test")
        t = self.current
        if t is None or t.number != number:
            self._late(number, payload)
            return
        inflow = t.inflows.get(client_id)
        if inflow is None:  # a worker that joined during the test
            inflow = t.inflows[client_id] = Inflow(process=payload.get("process", client_id))
        inflow.process, inflow.pid = payload.get("process", inflow.process), payload.get("pid")
        rows, events = payload.get("rows") or [], payload.get("events") or []
        t.writer.add(rows)
        t.history.add(events)
        t.live.add(rows)
        inflow.rows += len(rows)
        inflow.events += len(events)
        inflow.throttles = int(payload.get("throttles") or 0)
        if payload.get("final"):
            inflow.final = payload

    def _late(self, number: Any, payload: dict) -> None:
        rows = payload.get("rows") or []
        test_dir = self.closed_tests.get(number) if isinstance(number, int) else None
        if not rows and not payload.get("events"):
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
        log.warning("harness: %d rows from %s arrived after test %03d was closed; written to %s (run.json's "
                    "counts do not include them)", len(rows), payload.get("process"), number, test_dir)

    def edited(self, users: int, spawn_rate: float) -> None:
        """The running test's users were changed from the UI: the record says so."""
        t = self.current
        if t is not None:
            t.options.setdefault("changes", []).append(
                {"at": _iso(time.time()), "users": users, "spawn_rate": spawn_rate})
            t.options["users"], t.options["spawn_rate"] = users, spawn_rate

    def spawning_complete(self) -> None:
        if self.current is not None:
            self.current.spawned = True

    def _watch(self, t: ActiveTest) -> None:
        """Stop the test when every user has finished on its own (each reached fleet.max_iterations).

        Only after users were seen running, and (on a master, which learns user
        counts from reports every 3 s) after none was seen for a report's length.
        """
        seen, idle_since = False, None
        settle = REPORT_LAG_S if self.distributed else 0.0
        while self.current is t:
            gevent.sleep(WATCH_EVERY_S)
            count = self.runner.user_count
            seen = seen or count > 0
            if not (seen and t.spawned and self.runner.state == STATE_RUNNING and count == 0):
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                self.stop_test(f"all users finished (each reached fleet.max_iterations = "
                               f"{t.scenario.fleet.max_iterations})")
                return

    def _sample_generator(self, t: ActiveTest) -> None:
        while self.current is t:
            gevent.sleep(GENERATOR_EVERY_S)
            if self.current is not t:
                return
            cpu = {self.process.name: float(self.runner.current_cpu_usage)}
            if self.distributed:
                for cid in t.inflows:
                    node = self.runner.clients.get(cid)
                    if node is not None and node.state != STATE_MISSING:
                        cpu[f"worker-{self.runner.get_worker_index(cid)}"] = float(node.cpu_usage)
            try:
                t.generator.add(time.time(), cpu)
            except OSError:
                log.exception("harness: cannot write %s", t.generator.path)

    # ---- stop ----------------------------------------------------------------------------

    def note_stop(self, reason: str) -> None:
        """Why the current test stops (the first reason given wins)."""
        t = self.current
        if t is not None and t.stop_reason is None:
            t.stop_reason = reason

    def stop_test(self, reason: str) -> None:
        """Stop the current test: the web UI keeps its workers for the next one; headless, Locust quits."""
        if self.current is None:
            return
        self.note_stop(reason)
        log.info("harness: stopping test %03d: %s", self.current.number, reason)
        if self.web:
            self.runner.stop()
        else:
            self.runner.quit()

    def stopping(self) -> None:
        t = self.current
        if t is not None and t.stopping_at is None:
            t.stopping_at = time.time()

    def finish_test(self) -> None:
        """``test_stop``: collect every process's rows, close the record, start the report."""
        t = self.current
        if t is None or t.finishing:
            return
        t.finishing = True
        if t.stopping_at is None:
            t.stopping_at = time.time()
        me = gevent.getcurrent()
        for g in t.greenlets:
            if g is not me:
                g.kill(block=False)
        incomplete = self._collect_finals(t) if self.distributed else []
        self.last_tab = self.tab_rows()
        if self.current is t:
            self.current = None
        self.closed_tests[t.number] = t.dir
        if t.probe is not None:
            t.probe.stop()
        t.writer.flush()
        t.history.flush()
        reason = t.stop_reason or self._inferred_reason(t)
        processes = {i.process: {"pid": i.pid, "rows": i.rows, "events": i.events,
                                 "rows_sent": i.final.get("sent") if i.final else None,
                                 "complete": i.final is not None and i.final.get("sent") == i.rows}
                     for i in t.inflows.values()}
        info = runinfo.update(t.dir, ended_at=_iso(t.stopping_at), status="finished", stop_reason=reason,
                              options=t.options,
                              incomplete=incomplete, rows_written=t.writer.written, events_written=t.history.written,
                              processes=processes, generator_samples=t.generator.samples)
        self._update_session(t, info)
        missing = f"; incomplete: {', '.join(i['process'] for i in incomplete)}" if incomplete else ""
        log.info("harness: test %03d stopped (%s) after %.0f s: %d iterations recorded in %s%s", t.number, reason,
                 t.stopping_at - t.started_at, t.writer.written, t.dir, missing)
        if self.web and not self.quitting and not getattr(self.env.parsed_options, "no_report", False) \
                and t.writer.written:
            self._build_report(t.number, t.dir)

    def _inferred_reason(self, t: ActiveTest) -> str:
        if self.signal_reason:
            return self.signal_reason
        if self.distributed and self.runner.worker_count == 0:
            return "every worker process was lost or quit"
        if self.quitting:
            return "Locust was shut down"
        return "Locust stopped the test (see locust.log)"

    def _collect_finals(self, t: ActiveTest) -> list[dict]:
        """Wait (bounded) for every worker's final report; name those that never came."""
        deadline = time.monotonic() + FINAL_WAIT_S
        asked: set[str] = set()
        lost: dict[str, str] = {}
        while True:
            waiting = []
            for cid, inflow in t.inflows.items():
                if inflow.final is not None or cid in lost:
                    continue
                node = self.runner.clients.get(cid)
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
                    self.runner.send_message(FLUSH_MESSAGE, {"test": t.number}, client_id=cid)
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

    def _build_report(self, number: int, test_dir: Path) -> None:
        """Build the test's report in a child process (matplotlib would stall this event loop)."""
        out = open(test_dir / "report.log", "wb")  # noqa: SIM115 - closed when the child ends
        proc = subprocess.Popen([sys.executable, "-m", "harness", "report", str(test_dir)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.reports[number] = proc

        def wait() -> None:
            while proc.poll() is None:
                gevent.sleep(0.5)
            code = proc.returncode
            out.close()
            self.reports.pop(number, None)
            if code == 0:
                self._set_report(number, test_dir, report="report/index.html", report_error=None)
                log.info("harness: test %03d report %s", number, test_dir / "report" / "index.html")
            elif not self.quitting:
                self._set_report(number, test_dir, report=None, report_error=f"exit {code}; see report.log")
                log.error("harness: test %03d: the report failed (exit %d); see %s", number, code,
                          test_dir / "report.log")

        gevent.spawn(wait)

    # ---- shutdown ----------------------------------------------------------------------

    def close(self) -> None:
        """Locust is quitting: stop and record a running test first, then close the session."""
        self.quitting = True
        deadline = time.monotonic() + FINAL_WAIT_S + 5
        while self.current is not None and self.current.finishing and time.monotonic() < deadline:
            gevent.sleep(0.1)  # a stop is being recorded (its workers' final reports): let it finish
        if self.current is not None:
            self.note_stop(self.signal_reason or "Locust was shut down")
            self.runner.stop()
            if self.current is not None:  # stop() had nothing to stop (state INIT): close the record anyway
                self.finish_test()
        for proc in list(self.reports.values()):
            if proc.poll() is None:
                proc.terminate()
        if self.web and (self.root / runinfo.RUN_JSON).exists():
            runinfo.update(self.root, status="closed")

    def signalled(self, name: str) -> None:
        self.signal_reason = self.signal_reason or name
        self.note_stop(name)

    # ---- the harness tab -------------------------------------------------------------

    def tab_rows(self) -> list[dict]:
        """The harness tab: the running test's numbers, or the last test's final ones."""
        t = self.current
        if t is None:
            return self.last_tab
        now = time.time()
        total = self._throttles(t)
        t.throttle_marks.append((now, total))
        while len(t.throttle_marks) > 2 and t.throttle_marks[1][0] <= now - LIVE_WINDOW_S:
            t.throttle_marks.pop(0)
        t0, n0 = t.throttle_marks[0]
        opts = self.env.parsed_options
        full = t.scenario.fidelity.resolve(endpoints_from_options(opts).kind, 1.0, opts.latency or None)
        has_model = full.enabled
        capacity = tab.modelled_capacity(full)
        span = max(now - t.started_at, 1e-9)
        return tab.table(t.live.window(now, t.started_at), t.live.test(now, t.started_at), capacity=capacity,
                         throttles_now=(total - n0) / max(now - t0, 1e-9) if has_model and now > t0 else None,
                         throttles_test=total / span if has_model else None,
                         probe=tab.probe_view(t.dir / PROBES_CSV))

    def _throttles(self, t: ActiveTest) -> int:
        if self.distributed:
            return sum(i.throttles for i in t.inflows.values())
        return throttle_count(self.process.load.layer if self.process.load else None)

    def status(self) -> dict:
        """For the UI's panel: the session's tests and the running one."""
        tests = []
        if self.web and (self.root / runinfo.RUN_JSON).exists():
            tests = runinfo.read(self.root).get("tests", [])
        elif (self.root / runinfo.RUN_JSON).exists():
            info = runinfo.read(self.root)
            tests = [{"number": 1, "dir": ".", "status": info.get("status"), "scenario_name": info.get("scenario_name"),
                      "stop_reason": info.get("stop_reason"), "rows": info.get("rows_written"),
                      "report": info.get("report"), "started_at": info.get("started_at"),
                      "ended_at": info.get("ended_at"), "incomplete": info.get("incomplete", [])}]
        t = self.current
        running = None
        if t is not None:
            running = {"number": t.number, "scenario_name": t.scenario.name, "elapsed_s": time.time() - t.started_at,
                       "bound_s": t.bound_s, "rows": t.live.whole.iterations, "users": t.options["users"],
                       "spawn_rate": t.options["spawn_rate"]}
        return {"session_dir": str(self.root), "web_session": self.web, "tests": tests, "running": running}


def _parse_stand_in(text: str) -> dict | None:
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def install_signal_notes(session: Session) -> None:
    """Note which signal stopped a test; Locust's own SIGTERM handler then shuts down as usual.

    These handlers are installed during ``init``, before Locust installs its
    SIGTERM handler; until Locust has (``session.locust_ready``), a SIGTERM
    ends the process as it would without them (nothing is recorded yet).
    """
    def on_term() -> None:
        if not session.locust_ready:
            raise SystemExit(128 + signal.SIGTERM)
        session.signalled("SIGTERM")

    def on_hup() -> None:
        session.signalled("SIGHUP")
        os.kill(os.getpid(), signal.SIGTERM)  # Locust has no SIGHUP handler: shut down as on SIGTERM

    gevent.signal_handler(signal.SIGTERM, on_term)
    gevent.signal_handler(signal.SIGHUP, on_hup)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        def on_int(signum: int, frame: Any) -> None:
            session.signalled("SIGINT")
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_int)
    # Locust installs its SIGTERM handler before its main greenlet first waits, except a headless master,
    # which waits for its workers first; there the first test's start marks it (see ``start_test``).
    opts = session.env.parsed_options
    if not (opts.headless and session.distributed):
        gevent.spawn(setattr, session, "locust_ready", True)
