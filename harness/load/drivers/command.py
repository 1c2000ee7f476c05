"""The command driver: a datastore's own command line, one process per step, each timed by its own spans.

An iteration runs the scenario's argv templates in order, one process each, as the spec's shell loop did
(``swamp model @webframp/system method run "$METHOD" "$INSTANCE" ... --json``, then ``swamp model delete
"$INSTANCE" --force`` for disposable models, ``swamp data prune --force`` every ``prune_every``), in the
worker's own working directory (``RUN_DIR/workdirs/<worker>``, made by the optional ``setup`` command once).
Each command is given ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (this Locust process's receiver) and a fresh
``TRACEPARENT`` (flags 01: swamp's sampler is parent-based) whose trace id names the iteration and the step,
so its spans join the iteration here; the row's columns are the spans' (``harness.record.otlp.mapping``), null
where no span says. A non-zero exit or a timeout fails the iteration, classified from the command's own
signals (exit 75, its ``--json`` error ``code``, then its stderr), the error its message. Every span, and
one ``harness.command <step>`` span per process (spawn to exit, the parent of what the command sent), goes
to the run's ``spans`` table.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gevent
from gevent.event import Event
from gevent.lock import Semaphore

from harness.aws.front.seat import Seat
from harness.aws.front.seat import fill as fill_from_wire
from harness.config.endpoints import EMBEDDED, OTHER, SERVICES
from harness.config.plan import RunPlan
from harness.config.scenario import Scenario
from harness.core.environment import child_environment
from harness.core.work import Work
from harness.datastore.sync import Step
from harness.load.drivers import _spawn
from harness.load.drivers._command_options import HISTORY_ENV, CommandOptions, fill, parse, resolve_executable
from harness.load.drivers._command_options import check as check_options
from harness.load.drivers._freeze import Freezer
from harness.load.drivers.base import DriverContext, IterationOutcome
from harness.load.drivers.model import iteration_plan
from harness.record.otlp.decode import Span
from harness.record.otlp.mapping import row_values
from harness.record.otlp.receiver import Receiver, Server, Trace, TraceBook
from harness.record.schema import ERROR_KINDS, STEP_COLUMNS

log = logging.getLogger("harness")

STEP_CODES = {"setup": 0, "run": 1, "delete": 2, "prune": 3, "create": 4, "sync": 5}  # the trace id's last 8 hex digits
EXIT_TEMPFAIL = 75  # swamp's exit code for lock_timeout (EX_TEMPFAIL, error_output.ts)
WORKDIRS = "workdirs"
QUIET_S = 0.05  # after the exit, an incomplete trace is taken as whole once no span came for this long
DUMMY_ENV = {"AWS_ACCESS_KEY_ID": "harnesslocal", "AWS_SECRET_ACCESS_KEY": "harnesslocal"}  # the stand-in's keys


def check(scenario: Scenario) -> None:
    check_options(scenario)


def make(ctx: DriverContext) -> CommandDriver:
    return CommandDriver(ctx, parse(ctx.plan.scenario), otlp_of(ctx))


def otlp_of(ctx: DriverContext) -> Otlp:
    """The process's one receiver (made by the first driver; the others wait for it: a first import can yield
    to another user's greenlet, which must not make a second)."""
    lock = ctx.shared.setdefault("otlp_lock", Semaphore())
    with lock:
        if "otlp" not in ctx.shared:
            ctx.shared["otlp"] = Otlp()
    return ctx.shared["otlp"]


class Otlp:
    """This Locust process's receiver and its traces (one for all its users)."""

    def __init__(self) -> None:
        self.book = TraceBook()
        self.server = Server(Receiver(self.book))
        log.info("harness: OTLP receiver at %s", self.server.url)

    def close(self) -> None:
        self.server.stop()


@dataclass
class Ran:
    """One command of an iteration: how it ended, its trace, and what the row says of it."""

    step: str
    exit: _spawn.Exit
    trace: Trace
    kind: str  # "" when it succeeded, else an error kind
    message: str
    after_exit_ms: float = 0.0  # the driver's own time after the exit (waiting for spans), never the command's
    frozen_s: float = 0.0  # how long the driver kept its processes stopped (SIGSTOP .. SIGCONT)

    def own_span(self) -> Span:
        """The process itself, spawn to exit: the parent every span the command sent hangs under."""
        e = self.exit
        return Span(self.trace.trace_id, self.trace.parent_id, "", f"harness.command {self.step}", e.start_ns, e.end_ns,
                    status="ok" if not self.kind else "error", status_message=self.message,
                    attributes={"process.executable.name": Path(e.argv[0]).name, "process.exit.code": e.code,
                                "process.pid": e.pid, "harness.timed_out": e.timed_out,
                                **({"harness.frozen_s": self.frozen_s} if self.frozen_s else {})})


def classify(e: _spawn.Exit, timeout_s: float) -> tuple[str, str]:
    """(error kind, message) from the command's own signals: exit 75 or its ``--json`` error ``code`` first,
    then its output's words (an AWS throttle's code or reason, a lock timeout, ...); ("", "") when it succeeded.
    The message is the ``--json`` error's, else the line naming the error, else the last line that says
    anything (never the closing brace of a pretty-printed blob)."""
    if e.error:
        return "other", f"could not start: {e.error}"
    if e.timed_out:
        return "timeout", f"timed out after {timeout_s:g} s; its process group was killed"
    if e.code == 0:
        return "", ""
    stderr, stdout = _plain(e.stderr), _plain(e.stdout)
    error, code = _json_error(stderr) or _json_error(stdout) or ("", "")
    text = f"{code} {error} {stderr}".lower()  # not stdout: a method's own output may say anything
    if e.code == EXIT_TEMPFAIL or code == "lock_timeout":
        kind = "lock_timeout"
    elif code in ERROR_KINDS:
        kind = code
    else:
        kind = next((k for k, words in TEXT_KINDS if any(w in text for w in words)), "other")
    message = error or _telling_line(stderr, TEXT_KINDS_OF.get(kind, ())) or _telling_line(stdout, ())
    status = f"killed by signal {-e.code}" if e.code is not None and e.code < 0 else f"exit {e.code}"
    return kind, f"{status}: {message}" if message else status


# What a failed command's words say of its kind, first match wins (lower case). The throttles are every way
# AWS and the front say one: DynamoDB's codes and ThrottlingReasons ("...KeyRangeThroughputExceeded"), its
# message ("Throughput exceeds the current capacity"), S3's SlowDown and its 503.
TEXT_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lock_timeout", ("lock_timeout", "lock timeout")),
    ("throttled", ("throttl", "throughputexceeded", "throughput exceeds", "slowdown", "slow down",
                   "reduce your request rate", "requestlimitexceeded", "toomanyrequests", "status code: 503",
                   "httpstatuscode\": 503", "503 service unavailable", "serviceunavailable")),
    ("fenced", ("fenced",)),
    ("conflict", ("conflict", "conditionalcheckfailed")),
)
TEXT_KINDS_OF = dict(TEXT_KINDS)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SAYS = re.compile(r"[A-Za-z0-9]")


def _plain(text: str) -> str:
    """The text without its terminal colours (swamp's log lines carry them)."""
    return _ANSI.sub("", text or "")


def _telling_line(text: str, words: tuple[str, ...]) -> str:
    """The first line naming one of ``words``, else the last line with a letter or digit in it ("" if none)."""
    lines = [ln.strip() for ln in text.splitlines() if _SAYS.search(ln)]
    named = next((ln for ln in lines if any(w in ln.lower() for w in words)), "")
    return named or (lines[-1] if lines else "")


def _json_error(text: str) -> tuple[str, str] | None:
    """swamp's ``--json`` failure: ``{"error": ..., "code": ...}`` on one line or pretty-printed over several,
    after any log lines (the last such object wins)."""
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"^[ \t]*\{", text, re.MULTILINE)]
    for start in reversed(starts):
        try:
            doc, _ = decoder.raw_decode(text[start:].lstrip())
        except ValueError:
            continue
        if isinstance(doc, dict) and "error" in doc:
            return str(doc["error"]), str(doc.get("code") or "")
    return None


def span_record(s: Span, meta: dict[str, Any], column: str | None, late: bool = False) -> dict[str, Any]:
    """One row of the spans table (``harness.record.spans``)."""
    return {"start": s.start_ns / 1e9, "duration_ms": s.duration_ms, "worker": meta.get("worker"),
            "user": meta.get("user"), "iteration": meta.get("iteration"), "step": meta.get("step"), "name": s.name,
            "trace_id": s.trace_id, "span_id": s.span_id, "parent": s.parent_id or None, "status": s.status,
            "status_message": s.status_message or None,
            "attributes": json.dumps(s.attributes, sort_keys=True, default=str),
            "events": json.dumps(s.events) if s.events else None, "column": column, "late": late}


def workdirs_root(plan: RunPlan) -> Path:
    """``RUN_DIR/workdirs``: where each worker's working directory is (a temporary one where the run directory
    is not this machine's: a worker process elsewhere)."""
    root = Path(plan.run_dir) / WORKDIRS
    try:
        root.mkdir(parents=True, exist_ok=True)
        return root
    except OSError:
        return Path(tempfile.mkdtemp(prefix="harness-workdirs-"))


def command_environment(plan: RunPlan) -> dict[str, str]:
    """What every command is told of the run's endpoints: the AWS SDKs' own variables (a stand-in's URL and
    its local keys; nothing for AWS itself, whose credentials come from the user's chain as they are)."""
    env: dict[str, str] = {}
    c = plan.connection
    for service in SERVICES:
        e = c.service(service)
        if e.kind in (EMBEDDED, OTHER) and e.url:
            env[f"AWS_ENDPOINT_URL_{service.upper()}"] = e.url
            if e.credentials == "dummy":
                env.update(DUMMY_ENV)
    env.setdefault("AWS_REGION", c.region)
    return env


def await_spans(trace: Trace, cap_s: float, quiet_s: float = QUIET_S,
                clock: Callable[[], float] = time.monotonic) -> None:
    """After the exit: a trace complete at the exit (swamp with ``OTEL_BSP_USE=1`` exports before it exits) is
    taken at once; any other (swamp's default processor loses what is in flight at exit; a failed command
    sends nothing; a detached exporter still sending) once its exporter has gone quiet: no span for
    ``quiet_s`` since the exit or the last arrival, ``cap_s`` at most while spans keep coming. Never a fixed
    wait for spans that will not come."""
    if trace.complete():
        return
    trace.wake = Event()
    start = clock()
    gevent.sleep(0)  # let the receiver read what the command wrote just before it exited
    try:
        while True:  # complete or not, what was not here at the exit is taken once its exporter pauses
            now = clock()
            quiet_left = max(start, trace.last_at or 0.0) + quiet_s - now
            cap_left = start + cap_s - now
            if quiet_left <= 0 or cap_left <= 0:
                return
            trace.wake.clear()
            trace.wake.wait(min(quiet_left, cap_left))
    finally:
        trace.wake = None


def _process_columns(measured: list[Ran]) -> dict[str, Any]:
    """The row's columns of the processes themselves (null when none ran): spans joined, wall time spawn to
    exit, and the driver's own time after the exits."""
    if not measured:
        return {"spans": None, "command_ms": None, "after_exit_ms": None}
    return {"spans": sum(len(r.trace.spans) for r in measured), "command_ms": sum(r.exit.wall_ms for r in measured),
            "after_exit_ms": sum(r.after_exit_ms for r in measured)}


class CommandDriver:
    """One swamp worker (one Locust user) running the datastore's own command line."""

    def __init__(self, ctx: DriverContext, opts: CommandOptions, otlp: Otlp) -> None:
        self.ctx, self.opts, self.otlp = ctx, opts, otlp
        self.plan = plan = ctx.plan
        self.scenario = sc = plan.scenario
        self.iteration = 0
        self.prefix = secrets.token_hex(8)  # the first half of every trace id this worker hands out
        root = workdirs_root(plan)
        self.workdir = root / ctx.user
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ready = not opts.setup
        self.history = self.workdir / "history.jsonl" if opts.history else None
        self.history_at = self.history.stat().st_size if self.history and self.history.exists() else 0
        plan_file = root / f"plan-{plan.test.number if plan.test else 1:03d}.json"
        if not plan_file.exists():  # the test's plan, for a setup that configures the datastore from it
            tmp = plan_file.with_name(f"{plan_file.name}.{secrets.token_hex(3)}.tmp")
            tmp.write_text(plan.to_json())
            tmp.replace(plan_file)
        e = plan.connection.service(sc.backend)
        self.values = {"worker": ctx.user, "namespace": ctx.namespace or "", "plan": str(plan_file),
                       "workdir": str(self.workdir), "table": plan.resources.table, "bucket": plan.resources.bucket,
                       "backend": sc.backend, "region": plan.connection.region, "endpoint": e.url or "",
                       "python": sys.executable}
        self.env = command_environment(plan)
        self.env.update({k: fill(v, self.values) for k, v in opts.env.items()})
        if self.history is not None:
            self.env[HISTORY_ENV] = str(self.history)
        p = sc.fidelity.pauses
        self.freezer = Freezer(p.probability, p.at_s, p.duration_s)  # SIGSTOP / SIGCONT of a run command
        self.seat = Seat.of_run(plan.run_dir, ctx.user)  # the run's front, if it has one
        if self.seat is not None:  # every way a command learns its endpoint names the worker's seat
            self.env.update(self.seat.env())
            self.values["endpoint"] = self.seat.url  # {endpoint} in a template; the swamp driver's .swamp.yaml

    # ---- one command ---------------------------------------------------------------------------

    def _argv(self, template: tuple[str, ...], values: dict[str, str]) -> list[str]:
        argv = [fill(a, values) for a in template]
        argv[0] = resolve_executable(argv[0]) or argv[0]
        return argv

    def _command(self, step: str, template: tuple[str, ...], values: dict[str, str], i: int) -> Ran:
        book = self.otlp.book
        trace_id = f"{self.prefix}{i & 0xFFFFFFFF:08x}{STEP_CODES[step]:08x}"
        parent = secrets.token_hex(8)
        trace = book.expect(trace_id, parent, {"worker": self.ctx.process, "user": self.ctx.user, "iteration": i,
                                               "step": step})
        unset = tuple(k for k, v in self.env.items() if v == "")  # [driver] env NAME = "": not in its environment
        env = child_environment({**{k: v for k, v in self.env.items() if v != ""},
                                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{self.otlp.server.url}?cmd={trace_id}",
                                 "TRACEPARENT": f"00-{trace_id}-{parent}-01"}, drop=("TRACESTATE", *unset))
        freeze = self.freezer.arm() if step == "run" else None
        ex = _spawn.run(self._argv(template, values), cwd=str(self.workdir), env=env, timeout_s=self.opts.timeout_s,
                        nice=self.opts.nice, on_start=freeze)
        exited = time.monotonic()
        frozen_s = self.freezer.disarm() if freeze else 0.0
        await_spans(trace, self.opts.late_wait_s, self.opts.quiet_s)
        book.close(trace)
        kind, message = classify(ex, self.opts.timeout_s)
        return self._judge(Ran(step, ex, trace, kind, message, (time.monotonic() - exited) * 1000, frozen_s))

    def _judge(self, r: Ran) -> Ran:
        """A driver's own reading of a command that ended (the swamp driver fails a run with an error span)."""
        return r

    def _setup(self, values: dict[str, str], i: int) -> list[Ran]:
        """The worker's setup, once before its first iteration (the scenario's ``setup`` command)."""
        return [self._command("setup", self.opts.setup, values, i)]

    def _before_run(self, values: dict[str, str], i: int) -> list[Ran]:
        """Commands before an iteration's ``run`` that are not part of its measured steps (none here)."""
        return []

    def _after_run(self, step: str, values: dict[str, str]) -> None:
        """What a driver remembers of a command that ran (nothing here)."""

    def _new_events(self, i: int) -> list[dict]:
        """The checker's history the commands appended since the last look ([driver] history = true)."""
        if self.history is None or not self.history.exists():
            return []
        with self.history.open("rb") as f:
            f.seek(self.history_at)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.history_at += end
        out = []
        for line in data[:end].splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                log.warning("harness: %s: a history line is not JSON; skipped", self.ctx.user)
                continue
            if isinstance(ev, dict):
                out.append({**ev, "worker": self.ctx.process, "user": self.ctx.user, "iteration": i})
        return out

    # ---- one iteration -------------------------------------------------------------------------

    def _iteration(self, values: dict[str, str], i: int) -> list[Ran]:
        """The iteration's measured commands: run, then delete (disposable models), prune (every prune_every)."""
        sc = self.scenario
        ran = [self._command("run", self.opts.run, values, i)]
        if self.opts.delete and sc.workload.lifecycle == "disposable":
            ran.append(self._command("delete", self.opts.delete, values, i))
        every = sc.datastore.prune_every
        if self.opts.prune and every and (i + 1) % every == 0:
            ran.append(self._command("prune", self.opts.prune, values, i))
        for r in ran:
            if not r.kind:
                self._after_run(r.step, values)
        return ran

    def run_once(self, intended: float | None = None) -> IterationOutcome:
        i = self.iteration
        self.iteration += 1
        sc = self.scenario
        model, method, _ = iteration_plan(sc.workload, self.ctx.user, i)
        values = {**self.values, "iteration": str(i), "instance": model, "method": method}
        records, ran = self._prepare(values, i)
        t_start = time.time()
        t0 = time.perf_counter()
        wire = self.seat.counts() if self.seat is not None else None
        if self.ready and not ran:
            ran += self._iteration(values, i)
        total_ms = (time.perf_counter() - t0) * 1000
        measured = [r for r in ran if r.step not in ("setup", "create")]
        spans = [s for r in measured for s in (r.own_span(), *r.trace.spans)]
        mapped = row_values(spans, self.opts.mapping)
        for r in measured:  # a setup or a creation is recorded where it ran
            records += self._records(r, mapped.column_of)
        failed = [r for r in ran if r.kind]
        message = "; ".join(r.message if r.step == "run" else f"{r.step}: {r.kind}: {r.message}" for r in failed)
        row: dict[str, Any] = {
            "ts_start": t_start, "ts_end": t_start + total_ms / 1000, "worker": self.ctx.process,
            "user": self.ctx.user, "scenario": sc.name, "backend": sc.backend, "iteration": i, "model_id": model,
            "ok": not failed, "error_kind": failed[0].kind if failed else "", "error": message[:500],
            "total_ms": total_ms, "ts_intended": t_start if intended is None else intended,
            "wait_ms": total_ms if intended is None else (t_start - intended) * 1000 + total_ms,
            **mapped.values, **_process_columns(measured), "spans_rejected": sum(r.trace.rejected for r in ran),
        }
        if wire is not None and measured:  # what the commands sent, from the wire, where their spans are silent
            fill_from_wire(row, self.seat.counts().since(wire))
        records += self._strays()
        steps = [Step(step, row[col], Work()) for step, col in STEP_COLUMNS.items() if row.get(col) is not None]
        error = RuntimeError(message) if failed else None
        return IterationOutcome(row, steps, error, self._new_events(i), records)

    def _prepare(self, values: dict[str, str], i: int) -> tuple[list[dict], list[Ran]]:
        """The user's setup (once) and what comes before a run (a model's creation): recorded in the spans
        table, never timed into the row; those that failed (the iteration then runs nothing)."""
        records: list[dict] = []
        failed: list[Ran] = []
        if not self.ready:
            for setup in self._setup(values, i):
                records += self._records(setup, {})
                if setup.kind:
                    failed.append(setup)
            self.ready = not failed
        if self.ready:
            for pre in self._before_run(values, i):
                records += self._records(pre, {})
                if pre.kind:
                    failed.append(pre)
        return records, failed

    def _records(self, r: Ran, column_of: dict[str, str]) -> list[dict]:
        meta = r.trace.meta
        own = r.own_span()
        return [span_record(own, meta, column_of.get(own.span_id)),
                *(span_record(s, meta, column_of.get(s.span_id)) for s in r.trace.spans)]

    def _strays(self) -> list[dict]:
        """Spans that came after their row (late) or for no trace this process handed out (unjoined)."""
        late, unjoined = self.otlp.book.take_strays()
        out = [span_record(s, t.meta, None, late=True) for t, s in late]
        out += [span_record(s, {"worker": self.ctx.process}, None) for s in unjoined]
        return out

    def stop(self) -> tuple[list[dict], list[dict]]:
        return self._new_events(self.iteration - 1), self._strays()
