"""``harness run``: a plan's run, from its stand-in to its checks.

The command line was planned already (``harness.config.build.plan_run``: every
input error is refused before anything starts). Here: the run directory, the
embedded stand-in (whose URLs complete the plan, written as ``plan.json``),
the endpoint check and the table or bucket (through the plan's ``Factory``),
pre-ageing and the noisy neighbour (``background``), Locust as a child
process given the plan as one option (``supervise``), then the safety check,
cleanup and each test's scenario checks.

``--master`` runs the same supervision around a Locust master whose workers
run elsewhere (``harness worker --master-host H``: compose services,
Kubernetes pods); they receive each test's plan in Locust's spawn message.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.aws.clients import Sessions
from harness.aws.front import launch as front_launch
from harness.config import scenario as scenarios
from harness.config.build import start_stand_in
from harness.config.endpoints import EMBEDDED
from harness.config.factory import Factory
from harness.config.plan import RunPlan
from harness.config.preflight import check_reachable
from harness.core.errors import HarnessError
from harness.gates.columns import check_specs
from harness.jobs.background import background, preage
from harness.load import drivers
from harness.record import runinfo
from harness.record.claim import RunDirClaim
from harness.record.processes import ProcessSampler
from harness.record.reader import read_rows
from harness.report.run import checks as run_checks
from harness.safety import audit
from harness.supervisor import disk, failed_parts
from harness.supervisor.supervise import GRACE_S, Interrupted, Watcher, signals_raise, supervise
from harness.supervisor.watch import Parts
from harness.telemetry.cloudwatch.after_run import after_run

LOCUSTFILE = Path(__file__).parents[1] / "load" / "locustfile.py"
SHAPEFILE = Path(__file__).parents[1] / "load" / "shape.py"  # a scenario's [[fleet.stages]], only when it has them


@dataclass
class RunResult:
    run_dir: Path
    rows: int
    failed_checks: list[str]
    locust_exit: int
    signal: str | None = None  # the signal that ended the run, if one did
    to_report: list[Path] = field(default_factory=list)  # run directories with rows and no report yet
    session: bool = False
    # each test: (number, directory, run.json, its checks' results as dicts), for --junit and --baseline
    checked: list[tuple[int, Path, dict, list[dict]]] = field(default_factory=list)
    safety: list[str] | None = None  # the safety check's failures when the scenario asked for it (None: not asked)
    failed_parts: list[dict] = field(default_factory=list)  # run.json's failed_parts: what died, first first


def run(plan: RunPlan, quiet: bool = False) -> RunResult:
    drivers.check(plan.scenario)  # its [driver] as the driver reads it: one line, before anything starts
    check_specs(plan.scenario.checks.thresholds, f"{plan.scenario.source}: checks.thresholds")  # before anything
    with signals_raise():
        claim = _prepare_run_dir(Path(plan.run_dir), plan.run_id)  # first: the loser of a race starts nothing
        started = _LoadStarted()
        try:
            res = _run(plan, _sayer(quiet), quiet, claim.path, started)
        except BaseException as e:
            if not started and isinstance(e, HarnessError | KeyboardInterrupt):
                claim.refused(str(e))  # refused (or Ctrl-C) before any work: take back what the run made
            else:
                claim.release()  # its record (or, for a bug, what the traceback's reader needs) stays
            raise
        claim.release()
        return res


def _sayer(quiet: bool) -> Callable[[str], None]:
    def say(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    return say


def _prepare_run_dir(path: Path, run_id: str = "") -> RunDirClaim:
    """The run directory, claimed for this run (an exclusive create), or a one-line refusal: not empty, in use
    by another run, unwritable."""
    return RunDirClaim.take(path, run_id)


class _LoadStarted:
    """Whether the run's work (pre-ageing, the load) has started: until then, a refusal takes back what the run
    made in its directory."""

    def __init__(self) -> None:
        self.value = False

    def __bool__(self) -> bool:
        return self.value


def _run(plan: RunPlan, say: Callable[[str], None], quiet: bool, run_dir: Path, started: _LoadStarted
         ) -> RunResult:
    disk.refuse_if_short(plan, run_dir)  # before anything starts: the stand-in's data is kept here too
    uneven = uneven_groups(plan)
    if uneven:
        say(f"harness: warning: {uneven}")
    local: Any = None
    front: front_launch.FrontProcess | None = None
    sampler: ProcessSampler | None = None
    parts: Parts | None = None
    signalled: str | None = None
    notes = RunNotes(run_dir)
    try:
        local, plan = start_stand_in(plan, say, run_dir)
        front = front_launch.for_run(plan, run_dir)
        if front is not None:
            front.start()
        pids = {**(getattr(local, "pids", None) or {}), **(front.pids if front else {})}
        sampler = ProcessSampler(run_dir, pids or None).start()  # this machine's share, each second
        parts = Parts.of_run(run_dir, local, sampler, front)  # watched from here on (supervise), the disk too
        plan_path = plan.write(run_dir)  # complete now: the stand-in's URLs are in it
        sessions = Sessions(plan.connection.region)
        factory = Factory(plan, sessions=sessions)
        check_reachable(plan.connection, plan.backend, sessions)
        clients = factory.clients()
        backend = factory.backend(clients)
        factory.provision(clients, backend, note=notes.add)  # not a problem: the log and run.json, not stderr
        started.value = True  # from here on the run writes what it keeps (pre-ageing's journal, the load)
        if plan.seeding.preage:
            preage(factory, say, quiet)
        say(f"harness: {plan.scenario.name} on {plan.backend} ({_where(plan)}), {plan.locust.users} users, "
            f"{_run_time(plan)} -> {run_dir}")
        _say_distribution(plan, say)
        _say_telemetry(plan, say)
        job = background(factory, say)
        try:
            exit_code, signalled = supervise(locust_command(plan, plan_path), run_dir, _time_limit(plan), say,
                                             parts)
        finally:
            if job:
                job.stop()
        endpoint_up = not any(f.part == "stand-in" for f in parts.failures)
        safety_failed = _check_safety(run_dir, backend) if endpoint_up else []  # while the endpoint is up
        after_run(plan, [d for _, d, _ in Watcher(run_dir, print).tests()], say)  # --aws: what AWS measured
        if plan.resources.cleanup and endpoint_up:
            removed = factory.teardown(clients, backend)
            say(f"harness: {'removed' if removed else 'left'} {backend.name} resource of this run")
    finally:
        _stop_parts(parts, sampler, front, local)
    if not (run_dir / runinfo.RUN_JSON).exists():
        return _not_started(plan, run_dir, parts, exit_code, signalled)
    runinfo.update(run_dir, locust_exit=exit_code, **notes.fields())
    failed = failed_parts.record(run_dir, parts.failures if parts else [], stopped_by_us=bool(parts and parts.stopped))
    res = _results(run_dir, exit_code, signalled, safety_failed, completed=not failed)
    res.failed_parts = failed
    # a story's, a sweep's or a climb's run: what died reads as a failed check there (`harness run` says it alone)
    res.failed_checks[:0] = [f"the run did not complete: {d['line']}" for d in failed]
    return res


def _stop_parts(parts: Parts | None, sampler: ProcessSampler | None, front: front_launch.FrontProcess | None,
                local: Any) -> None:
    """Stop what the run started on this machine, last started first stopped (the reserve given back first)."""
    if parts:
        parts.give_back()
    if sampler:
        sampler.stop()
    if front:
        front.stop()
    if local:
        local.stop()


def _not_started(plan: RunPlan, run_dir: Path, parts: Parts | None, exit_code: int, signalled: str | None
                 ) -> RunResult:
    """No run.json: a part that died first (a result: exit 5), a signal, or why Locust did not start (one line)."""
    if parts and parts.failures:  # a part died before the test started: nothing was recorded
        return RunResult(run_dir, 0, [], exit_code, failed_parts=[f.as_dict() for f in parts.failures])
    if signalled:
        raise Interrupted(signal.Signals[signalled])
    m = plan.locust.master
    if m and _gave_up_on_workers(run_dir):
        raise HarnessError(f"fewer than {m.expect_workers} workers connected within "
                           f"{m.expect_workers_max_wait_s:g} s: start them with `harness worker --master-host "
                           f"HOST --master-port {m.bind_port}`; see {run_dir / 'locust.log'}")
    raise HarnessError(f"Locust did not start the run; see {run_dir / 'locust.log'}")


class RunNotes:
    """What the user need not act on (an endpoint without TTL, ...): kept in the run's files, not printed.

    stderr is for what the user must act on; a note that reads like an error on every default run teaches
    users to ignore stderr. Each note goes to ``RUN_DIR/harness.log`` as it comes and to ``run.json`` ``notes``
    at the end.
    """

    LOG = "harness.log"

    def __init__(self, run_dir: Path) -> None:
        self.path, self.lines = run_dir / self.LOG, []

    def add(self, line: str) -> None:
        self.lines.append(line)
        with self.path.open("a") as f:
            f.write(line + "\n")

    def fields(self) -> dict[str, list[str]]:
        return {"notes": self.lines} if self.lines else {}


def _where(plan: RunPlan) -> str:
    e = plan.connection.service(plan.backend)
    started = plan.stand_in.started or {}
    if e.kind == EMBEDDED:
        return f"embedded {started.get('services', {}).get(plan.backend, started.get('name'))} at {e.url}"
    return e.where


def _say_distribution(plan: RunPlan, say: Callable[[str], None]) -> None:
    m, web = plan.locust.master, plan.locust.web
    if m:
        starts = "" if web else (f"; the test starts once {_workers(m.expect_workers)} connected "
                                 f"(waiting at most {m.expect_workers_max_wait_s:g} s)")
        say(f"harness: Locust master for workers elsewhere (`harness worker --master-host HOST "
            f"--master-port {m.bind_port}`){starts}")
    if web:
        host = "127.0.0.1" if web.host in ("127.0.0.1", "localhost") else web.host
        login = " (login required)" if web.login else ""
        say(f"harness: web UI at http://{host}:{web.port}{login} (start each test there; each is "
            f"recorded under {Path(plan.run_dir) / runinfo.TESTS_DIR}; Ctrl-C ends the session)")


def _say_telemetry(plan: RunPlan, say: Callable[[str], None]) -> None:
    t = plan.telemetry
    if t.otel:
        say(f"harness: OpenTelemetry on (Locust's and the harness's meters): metrics to {t.otel_to}")
    if t.prometheus:
        say(f"harness: Prometheus metrics at {t.prometheus} (served by the Locust master while it runs)")


def _run_time(plan: RunPlan) -> str:
    """The run's bound as the start line says it (web without --duration: each test's, from the form)."""
    if plan.locust.run_time_s:
        return f"{plan.locust.run_time_s:g}s"
    return f"the form's run time (empty: the scenario's {plan.scenario.fleet.duration_s:g}s)"


def _workers(n: int) -> str:
    return f"{n} worker has" if n == 1 else f"{n} workers have"


def _time_limit(plan: RunPlan) -> float | None:
    """Headless: the run time and a grace (and, for a master, the wait for its workers); web: none."""
    if plan.web:
        return None
    limit = plan.scenario.fleet.duration_s + GRACE_S
    if plan.locust.master:
        limit += plan.locust.master.expect_workers_max_wait_s  # the test starts once its workers have connected
    return limit


def locust_command(plan: RunPlan, plan_path: Path) -> list[str]:
    """The Locust command line: the harness's settings as one option (the plan), Locust's own as its own."""
    run_dir, loc = Path(plan.run_dir), plan.locust
    files = f"{LOCUSTFILE},{SHAPEFILE}" if plan.scenario.fleet.stages else str(LOCUSTFILE)
    cmd = [sys.executable, "-m", "locust", "-f", files, "--harness-plan", str(plan_path),
           "-u", str(loc.users), "-r", f"{loc.spawn_rate:g}",
           *(["-t", f"{max(1, int(round(loc.run_time_s)))}s"] if loc.run_time_s else []),  # headless: the bound;
           # web: the form's prefill (none without --duration: the form's run time is then empty)
           "--csv", str(run_dir / "locust"), "--csv-full-history", "--exit-code-on-error", "0",
           "--logfile", str(run_dir / "locust.log"), "--only-summary"]
    if plan.telemetry.otel:  # Locust's own OpenTelemetry set-up; the harness's meters use the same SDK
        cmd += ["--otel"]
    if loc.web:
        cmd += ["--web-host", loc.web.host, "--web-port", str(loc.web.port)]
        if loc.web.login:
            cmd += ["--web-login"]
    else:
        cmd += ["--headless"]
    if loc.master:
        cmd += ["--master", "--master-bind-host", loc.master.bind_host, "--master-bind-port",
                str(loc.master.bind_port)]
        if not loc.web:
            cmd += ["--expect-workers", str(loc.master.expect_workers),
                    "--expect-workers-max-wait", f"{loc.master.expect_workers_max_wait_s:g}"]
    if loc.processes:
        # the master and its workers meet on a free loopback port, not Locust's fixed 5557 on every interface
        port = _free_port()
        cmd += ["--processes", str(loc.processes), "--master-bind-host", "127.0.0.1", "--master-bind-port",
                str(port), "--master-host", "127.0.0.1", "--master-port", str(port)]
    return cmd


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uneven_groups(plan: RunPlan) -> str | None:
    """Namespaces a headless run leaves short of ``workers_per_namespace`` (a web test's users are chosen later)."""
    if plan.web:
        return None
    m = plan.locust.master
    sc = plan.scenario
    return sc.datastore.uneven_groups(sc.fleet.workers, m.expect_workers if m else plan.locust.processes)


def _gave_up_on_workers(run_dir: Path) -> bool:
    for name in ("locust.log", "locust.out"):
        try:
            if "Gave up waiting for workers" in (run_dir / name).read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _check_safety(run_dir: Path, backend: Any) -> list[str]:
    """The safety check of a test whose scenario asks for it: its history against the table's final state.

    A web session's tests all write to one table, so the final state belongs to
    no single test's history: a session with more than one test is not checked
    (and says so), rather than reporting the other tests' writes as violations.
    """
    tests = Watcher(run_dir, print).tests()
    wanted = [d for _, d, info in tests if info.get("scenario", {}).get("checks", {}).get("safety")]
    if not wanted:
        return []
    if len(tests) > 1:
        return [f"safety: could not check: the session's {len(tests)} tests share one table (run one test per "
                "session, or headless, to check it)"]
    lost = [x.get("process", "?") for x in tests[0][2].get("incomplete") or []]
    if lost:  # their acknowledged commits are in the table but not in the history: they would read as phantom
        return [f"safety: could not check: the history is incomplete ({', '.join(lost)} lost before its last "
                "report)"]
    return audit.after_run(wanted[0], backend, True)


def _results(run_dir: Path, exit_code: int, signalled: str | None, safety_failed: list[str] = (),
             completed: bool = True) -> RunResult:
    """Rows and checks of every test, each with the checks of the scenario it actually ran (``completed``: no
    part died, so a session that ran no test and a failed exit is Locust's own failure)."""
    watcher = Watcher(run_dir, print)
    session = watcher.session
    tests = watcher.tests()
    if session and not tests and exit_code != 0 and not signalled and completed:
        raise HarnessError(f"Locust stopped (exit {exit_code}) before any test ran; see {run_dir / 'locust.log'}")
    total, failed, to_report, checked = 0, [], [], []
    for number, d, info in tests:
        checks = scenarios.Checks(**info["scenario"]["checks"])
        rows = read_rows(d, run_checks.columns(checks))
        total += len(rows)
        prefix = f"test {number:03d}: " if session else ""
        results = run_checks.results(rows, checks, info, run_checks.run_locks(d, info))
        checked.append((number, d, info, [r.as_dict() for r in results]))
        failed += [prefix + r.line for r in results if not r.passed]
        if len(rows) and not info.get("report"):
            to_report.append(d)
    failed += list(safety_failed)
    asked = any(info.get("scenario", {}).get("checks", {}).get("safety") for _, _, info in tests)
    return RunResult(run_dir, total, failed, exit_code, signal=signalled, to_report=to_report, session=session,
                     checked=checked, safety=list(safety_failed) if asked else None)
