"""The tests one Locust master (or single process) runs: each started from its plan, stopped, reported.

Each test gets its own plan, derived from the run's (``RunPlan.for_test``):
headless, the command's fleet; from the web UI, the form's users, spawn rate,
run time, scenario and latency. On a master the test's plan rides Locust's
spawn message to every worker (the ``--harness-plan`` option among its parsed
options), so a worker knows what the test is before its first user starts.
Around the test: its record (``runrecord``), the rows every process delivers
(``collect``), the stand-in probe, the generator's CPU, the stop (run time,
every user finished, the UI, a signal) and, in a web session, its report.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gevent
from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner

from harness.aws.fidelity.probe import PROBES_CSV, Probe, Target
from harness.config import scenario as scenarios
from harness.config.plan import RunPlan
from harness.core.errors import HarnessError
from harness.gates.live import live_gate
from harness.load import collect, drivers, observing
from harness.load.children import watch_probe
from harness.load.collect import ActiveTest, Inflow
from harness.load.drivers.base import IterationOutcome
from harness.load.process import HarnessProcess, throttle_count
from harness.load.runrecord import RunRecord, now_iso
from harness.load.web import tab
from harness.load.web.live import Live
from harness.record import runinfo
from harness.record.generator import GeneratorLog
from harness.record.keys import KeysLog
from harness.record.processes import ProcessesTail, worker_pid_names
from harness.record.writer import HistoryWriter, ShardWriter

log = logging.getLogger("harness")

GENERATOR_EVERY_S = 3.0  # generator.csv sampling (Locust's CPU measure is set to the same interval)
WATCH_EVERY_S = 1.0
REPORT_LAG_S = 3.5  # workers report every 3 s: the live window ends this long ago on a master
LIVE_WINDOW_S = 10.0


class Session:
    """The master's (or single process's) tests: start, stop, record, report."""

    def __init__(self, process: HarnessProcess, plan: RunPlan) -> None:
        self.process = process
        self.plan = plan
        self.env = process.environment
        self.runner = self.env.runner
        self.web = self.env.web_ui is not None
        self.root = Path(plan.run_dir).resolve()
        self.processes_tail = ProcessesTail(self.root)
        self.distributed = isinstance(self.runner, MasterRunner)
        self.record_files = RunRecord(plan, self.web)
        self.current: ActiveTest | None = None
        self.closed_tests: dict[int, Path] = {}
        self.pending_form: dict[str, Any] = {}  # what the web form asked for the next test
        self.signal_reason: str | None = None
        self.quitting = False
        self.reports: dict[int, subprocess.Popen] = {}
        self.last_tab: list[dict] = []
        self.headless_run_time: float | None = None  # `--headless -t`: timed here, from the test's start
        self.locust_ready = False  # Locust's own SIGTERM handler is installed (see install_signal_notes)

    def open(self) -> None:
        """A web session's run.json exists from the start (the tests list fills as tests run)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.web:
            opts = self.env.parsed_options
            self.record_files.open_session(int(opts.num_users or self.plan.scenario.fleet.workers),
                                           self._process_count())

    def _process_count(self) -> int:
        if self.distributed:
            return len(self.runner.clients) or int(getattr(self.env.parsed_options, "expect_workers", 1) or 1)
        return 1

    # ---- start -------------------------------------------------------------------------

    def test_plan(self, number: int, users: int, rate: float, run_time_s: float | None, share: float,
                  form: dict[str, Any]) -> RunPlan:
        """The test's plan: the run's, with the form's scenario and latency when it was started from the UI."""
        plan, scenario = self.plan, None
        chosen = form.get("scenario")
        if chosen and scenarios.resolve(chosen, plan.scenario_dirs) != Path(plan.scenario.source):
            scenario = scenarios.load(chosen, plan.scenario_dirs)  # another scenario: its file, parsed now
            drivers.check(scenario)  # its [driver] as its driver reads it (a test that cannot run is not started)
            if plan.fixed_backend:
                scenario = scenario.with_overrides(backend=plan.backend)
        latency = form["latency"] if "latency" in form else plan.latency
        return plan.for_test(number, users, rate, run_time_s, latency=latency, scenario=scenario,
                             capacity_share=share)

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
        if self.web:
            number, test_dir = runinfo.new_test_dir(self.root)
        else:
            number, test_dir = 1, self.root
        participants = self._participants()
        share = 1.0 / max(1, len(participants)) if self.distributed else 1.0
        plan = self.test_plan(number, users, rate, run_time_s, share, form)
        sc = plan.scenario
        bound = run_time_s or sc.fleet.duration_s
        clients, backend = self.process.build(plan)
        self.process.factory(plan).provision(clients, backend)
        opts.harness_plan = plan.to_json()  # rides the spawn messages to the workers
        if self.process.sends_load:
            self.process.setup_load(plan, clients, backend)
        tag = "master" if self.distributed else "local"
        t = ActiveTest(number=number, dir=test_dir, plan=plan, started_at=time.time(), run_time_s=run_time_s,
                       bound_s=bound, writer=ShardWriter(test_dir, tag=tag), history=HistoryWriter(test_dir, tag=tag),
                       generator=GeneratorLog(test_dir), keys=KeysLog(test_dir),
                       live=Live(LIVE_WINDOW_S, REPORT_LAG_S if self.distributed else 0.0),
                       options={"scenario": form.get("scenario") or sc.source, "backend": sc.backend,
                                "latency": plan.latency, "users": users, "spawn_rate": rate,
                                "run_time_s": run_time_s, "run_dir": str(self.root)})
        t.throttle_marks.append((t.started_at, 0))
        for cid in participants:
            t.inflows[cid] = Inflow(process=f"worker-{self.runner.get_worker_index(cid)}")
        if self.process.meters is not None:  # --otel / --prometheus: the test's rows feed the live meters too
            self.process.meters.watch(t)
        self.current = t
        if self.web:  # each test's directory is a run directory of its own: its plan beside its run.json
            plan.write(test_dir)
        self.record_files.test_started(t, len(participants) or 1)
        fidelity = plan.fidelity()
        if fidelity.enabled and fidelity.probe_every_s > 0:
            t.probe = self._start_probe(plan, backend, test_dir, fidelity.probe_every_s)
            t.greenlets.append(gevent.spawn(watch_probe, t))  # its death stops the test (the supervisor's)
        t.observer = observing.start(plan, backend, test_dir, self.process.sessions,
                                     [self.runner.get_worker_index(c) for c in participants] or [0])
        t.greenlets.append(gevent.spawn(self._sample_generator, t))
        t.greenlets.append(gevent.spawn(self._watch, t))
        t.gate = live_gate(sc.checks, t.started_at, users / max(rate, 1e-9), t.live.lag_s)
        if t.gate is not None:  # `abort = true` thresholds: judged every window
            t.greenlets.append(gevent.spawn(self._judge, t))
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

    def _start_probe(self, plan: RunPlan, backend: Any, test_dir: Path, every_s: float) -> Probe:
        """The one place the stand-in probe starts (told to finish in ``stopping``, waited for in ``finish_test``).

        It gets primitives, not the backend: a fixed small partition of the run's
        table (its GSI) or a fixed prefix of its bucket, at the plan's endpoint.
        """
        c = plan.connection
        e = c.service(backend.name)
        if backend.name == "dynamodb":
            target = Target("dynamodb", e.url, backend.table, index="gsi1", region=c.region,
                            credentials=e.credentials)
        else:
            target = Target("s3", e.url, backend.bucket, key=backend.objects.key(".probe"), region=c.region,
                            credentials=e.credentials)
        return Probe(target, test_dir, every_s).start()

    # ---- during --------------------------------------------------------------------------

    def record(self, outcome: IterationOutcome) -> None:
        """A single process's own finished iteration."""
        if self.current is not None:
            self.current.add([outcome.row], outcome.events, outcome.spans)

    def record_events(self, events: list[dict], spans: list[dict] | None = None) -> None:
        """A single process's history events (and spans) that came without a row."""
        if self.current is not None:
            self.current.history.add(events)
            self.current.add_spans(spans)
            self.current.live.add_events(events)

    def receive(self, client_id: str, payload: dict) -> None:
        """A worker's batch (stats report or final message) on the master."""
        collect.receive(self.current, self.closed_tests, client_id, payload)

    def edited(self, users: int, spawn_rate: float) -> None:
        """The running test's users were changed from the UI: the record says so."""
        t = self.current
        if t is not None:
            t.options.setdefault("changes", []).append({"at": now_iso(), "users": users, "spawn_rate": spawn_rate})
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

    def _judge(self, t: ActiveTest) -> None:
        """Stop the test once an abort threshold is credibly breached, through the run time's own stop (every
        worker's rows collected, the report built), with run.json's ``aborted`` saying which, when and why."""
        while self.current is t:
            gevent.sleep(LIVE_WINDOW_S)
            if self.current is not t or t.stopping_at is not None:
                return
            try:
                hit = t.gate.judge(time.time(), t.live)
            except Exception:  # a bug in a gate must not end the test silently: logged, the test runs on
                log.exception("harness: test %03d: the abort thresholds could not be judged", t.number)
                return
            if hit is not None:
                runinfo.update(t.dir, aborted=hit)
                self.stop_test(f"aborted at {hit['at_s']:.0f} s by the threshold {hit['check']!r}: {hit['line']}")
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
            t.live.add_generator(time.time(), cpu)
            t.live.worker_names = worker_pid_names(t.processes())  # a worker by its index, as generator.csv has it
            t.live.add_processes(self.processes_tail.read())  # the harness's sampler: the machine, each second
            if self.process.sends_load:  # this process's own per-key units (a master's arrive with reports)
                try:
                    t.keys.add(self.process.name, self.process.keys())
                except OSError:
                    log.exception("harness: cannot write %s", t.keys.path)

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
            if t.probe is not None:
                t.probe.finish()  # the probe samples the stand-in while the load runs, not after it

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
        incomplete = collect.collect_finals(t, self.runner) if self.distributed else []
        observing.finish(t.observer)  # every user has stopped: its last sample is the datastore at the end
        self.last_tab = self.tab_rows()
        if self.current is t:
            self.current = None
        self.closed_tests[t.number] = t.dir
        if t.probe is not None:
            t.probe.stop()
        for writer in (t.writer, t.history, t.spans):  # a full disk: the rows kept so far stay, the record closes
            if writer is None:
                continue
            try:
                writer.flush()
            except OSError:
                log.exception("harness: test %03d: cannot write %s", t.number, writer.dir)
        if self.process.sends_load:  # the last interval of this process's own per-key units
            self.process.note_gsi_lag()
            try:
                t.keys.add(self.process.name, self.process.keys())
            except OSError:
                log.exception("harness: cannot write %s", t.keys.path)
        reason = t.stop_reason or self._inferred_reason()
        self.record_files.test_finished(t, reason, incomplete)
        missing = f"; incomplete: {', '.join(i['process'] for i in incomplete)}" if incomplete else ""
        log.info("harness: test %03d stopped (%s) after %.0f s: %d iterations recorded in %s%s", t.number, reason,
                 t.stopping_at - t.started_at, t.writer.written, t.dir, missing)
        web = self.plan.locust.web
        if self.web and not self.quitting and (web is None or web.report_each_test) and t.writer.written:
            self._build_report(t.number, t.dir)

    def _inferred_reason(self) -> str:
        if self.signal_reason:
            return self.signal_reason
        if self.distributed and self.runner.worker_count == 0:
            return "every worker process was lost or quit"
        if self.quitting:
            return "Locust was shut down"
        return "Locust stopped the test (see locust.log)"

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
                self.record_files.set_report(number, test_dir, report="report/index.html", report_error=None)
                log.info("harness: test %03d report %s", number, test_dir / "report" / "index.html")
            elif not self.quitting:
                self.record_files.set_report(number, test_dir, report=None,
                                             report_error=f"exit {code}; see report.log")
                log.error("harness: test %03d: the report failed (exit %d); see %s", number, code,
                          test_dir / "report.log")

        gevent.spawn(wait)

    # ---- shutdown ----------------------------------------------------------------------

    def close(self) -> None:
        """Locust is quitting: stop and record a running test first, then close the session."""
        self.quitting = True
        deadline = time.monotonic() + collect.FINAL_WAIT_S + 5
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
        self.record_files.close_session()

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
        full = t.plan.fidelity(1.0)  # the whole table's modelled capacity, whatever this process's share
        has_model = full.enabled
        capacity = tab.modelled_capacity(full)
        span = max(now - t.started_at, 1e-9)
        rows = tab.table(t.live.window(now, t.started_at), t.live.test(now, t.started_at), capacity=capacity,
                         throttles_now=(total - n0) / max(now - t0, 1e-9) if has_model and now > t0 else None,
                         throttles_test=total / span if has_model else None,
                         probe=tab.probe_view(t.dir / PROBES_CSV))
        # once stopping, nothing is "now": Locust may answer "stopped" (its UI's last poll) before test_stop ends
        return tab.stopped(rows) if t.stopping_at is not None else rows

    def _throttles(self, t: ActiveTest) -> int:
        if self.distributed:
            return sum(i.throttles for i in t.inflows.values())
        return throttle_count(self.process.load.layer if self.process.load else None)

    def status(self) -> dict:
        """For the UI's panel: the session's tests and the running one."""
        t = self.current
        running = None
        if t is not None:
            running = {"number": t.number, "scenario_name": t.scenario.name, "elapsed_s": time.time() - t.started_at,
                       "bound_s": t.bound_s, "rows": t.live.whole.iterations, "users": t.options["users"],
                       "spawn_rate": t.options["spawn_rate"]}
        return {"session_dir": str(self.root), "web_session": self.web, "tests": self.record_files.tests(),
                "running": running, "metrics": self.plan.telemetry.prometheus}


def start_test_safely(session: Session) -> None:
    """A test that cannot start (say, a foreign table) is one line in the log, and stopped."""
    try:
        session.start_test()
    except HarnessError as e:
        log.error("harness: test not started: %s", e)
        gevent.spawn(session.runner.stop if session.web else session.runner.quit)


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
