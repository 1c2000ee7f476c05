"""``harness run``: preflight, the embedded moto server, Locust as a child process, checks.

Locust runs as its own process (master + workers with ``--processes``) so its
gevent patching and event loop never mix with this supervisor, which only
watches the run directory (progress while a test runs, each test's stop and
report), enforces the time bound, and evaluates the checks of each test's
scenario at the end.

Signals: SIGTERM, SIGHUP and SIGINT to ``harness run`` are passed to the
Locust master, which stops the running test, collects every worker's rows,
records them and quits; then the supervisor ends whatever is left of Locust's
process group and stops the embedded server. Nothing outlives the command.

``--master`` runs the same supervision around a Locust master whose workers
run elsewhere (``harness worker --master-host H``: compose services,
Kubernetes pods). Its endpoint must be one every worker reaches, so it never
starts the loopback-only embedded stand-in. A UI published beyond loopback
(``--web-host 0.0.0.0``) needs ``--web-login``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.aws import standin
from harness.aws.clients import make_clients
from harness.aws.endpoints import Endpoints, any_endpoint_configured
from harness.aws.fidelity.latency import load_profile
from harness.aws.moto_server import DUMMY_CREDENTIALS
from harness.errors import HarnessError
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.record import runinfo
from harness.record.reader import count_rows, read_rows, shard_paths
from harness.safety import run as safety_run
from reports import checks as run_checks

LOCUSTFILE = Path(__file__).parents[1] / "load" / "locustfile.py"
EXIT_CHECKS_FAILED = 3
GRACE_S = 60.0  # past the run time, Locust gets this long to stop before it is ended
PROGRESS_EVERY_S = 10.0
STOP_WAIT_S = 45.0  # after a signal: Locust records the running test, collects its workers' rows, then exits
MASTER_PORT = 5557  # Locust's own default: workers of a --master run connect here
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A signal to ``harness run`` (SIGTERM, SIGHUP or SIGINT), raised where the supervisor is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


@dataclass
class RunOptions:
    scenario: str
    backend: str | None = None
    workers: int | None = None
    duration_s: float | None = None
    spawn_rate: float | None = None
    processes: int = 0
    run_dir: str | None = None
    web: bool = False
    web_port: int = 8089
    report: bool = True
    aws: bool = False
    table: str | None = None
    bucket: str | None = None
    allow_foreign: bool = False
    cleanup: bool = False
    latency: str | None = None
    seed: tuple[int, int, int] | None = None  # models, versions, orphans: pre-age before the load
    seed_dir: str | None = None  # or start from an earlier `harness seed` (its catalogs; with --table)
    quiet: bool = False
    stand_in: str | None = None  # the embedded stand-in (default: standin.DEFAULT)
    s3_stand_in: str | None = None  # S3's embedded stand-in (default: standin.S3_DEFAULT; moto with --stand-in moto)
    web_host: str = "127.0.0.1"
    web_login: bool = False  # Locust's --web-login, one account from HARNESS_WEB_USERNAME / HARNESS_WEB_PASSWORD
    master: bool = False  # a Locust master for workers started elsewhere (`harness worker`)
    expect_workers: int = 1  # headless --master: start when this many workers are connected ...
    expect_workers_max_wait_s: float = 600.0  # ... or give up after this long
    master_bind_host: str = "*"
    master_bind_port: int = MASTER_PORT


@dataclass
class RunResult:
    run_dir: Path
    rows: int
    failed_checks: list[str]
    locust_exit: int
    report: Path | None = None
    signal: str | None = None  # the signal that ended the run, if one did
    to_report: list[Path] = field(default_factory=list)  # run directories with rows and no report yet
    session: bool = False


def _say(opts: RunOptions, msg: str) -> None:
    if not opts.quiet:
        print(msg, flush=True)


def _prepare_run_dir(path: Path) -> Path:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise HarnessError(f"run directory {path} already exists and is not empty: choose another --run-dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _locust_command(opts: RunOptions, sc: scenarios.Scenario, scenario_arg: str, run_dir: Path,
                    run_id: str, endpoint_kind: str, stand_in: dict | None) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--scenario", scenario_arg,
           "--backend", sc.backend, "--run-dir", str(run_dir), "--run-id", run_id,
           "-u", str(sc.fleet.workers), "-r", f"{sc.fleet.spawn_rate:g}",
           "-t", f"{max(1, int(round(sc.fleet.duration_s)))}s",  # headless: the bound; web: the form's prefill
           "--csv", str(run_dir / "locust"), "--csv-full-history", "--exit-code-on-error", "0",
           "--logfile", str(run_dir / "locust.log"), "--only-summary", "--endpoint-kind", endpoint_kind]
    if opts.web:
        cmd += ["--web-host", opts.web_host, "--web-port", str(opts.web_port)]
        if opts.web_login:
            cmd += ["--web-login"]
        if not opts.report:
            cmd += ["--no-report"]
    else:
        cmd += ["--headless"]
    if opts.master:
        cmd += ["--master", "--master-bind-host", opts.master_bind_host, "--master-bind-port",
                str(opts.master_bind_port)]
        if not opts.web:
            cmd += ["--expect-workers", str(opts.expect_workers),
                    "--expect-workers-max-wait", f"{opts.expect_workers_max_wait_s:g}"]
    if stand_in:
        cmd += ["--stand-in-info", json.dumps(stand_in)]
    if opts.aws:
        cmd += ["--target-aws"]
    if opts.processes:
        # the master and its workers meet on a free loopback port, not Locust's fixed 5557 on every interface
        port = _free_port()
        cmd += ["--processes", str(opts.processes), "--master-bind-host", "127.0.0.1", "--master-bind-port",
                str(port), "--master-host", "127.0.0.1", "--master-port", str(port)]
    if opts.latency:
        cmd += ["--latency", opts.latency]
    if opts.table:
        cmd += ["--table", opts.table]
    if opts.bucket:
        cmd += ["--bucket", opts.bucket]
    if opts.allow_foreign:
        cmd += ["--allow-foreign-resources"]
    return cmd


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_distribution(opts: RunOptions) -> None:
    """What ``--master`` and a published web UI need before anything starts (one line each)."""
    from harness.load.web import login

    if opts.web and opts.web_login:
        login.credentials()
    if opts.web and not opts.web_login and not _loopback(opts.web_host):
        raise HarnessError(f"the web UI on {opts.web_host} would be open to anyone who reaches it: add --web-login "
                           f"(one account from {login.USERNAME_ENV} / {login.PASSWORD_ENV}) or use "
                           "--web-host 127.0.0.1")
    if not opts.master:
        return
    if opts.processes:
        raise HarnessError("--master runs no workers of its own: drop --processes and start `harness worker "
                           "--master-host HOST` where the workers run")
    if opts.expect_workers < 1:
        raise HarnessError(f"--expect-workers must be at least 1, got {opts.expect_workers}")
    if not opts.aws and not any_endpoint_configured():
        raise HarnessError("--master: workers elsewhere cannot reach an embedded stand-in on this machine's "
                           "loopback; set AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_S3) "
                           "to a stand-in every worker reaches, or pass --aws")


def _workers(n: int) -> str:
    return f"{n} worker has" if n == 1 else f"{n} workers have"


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # "*", a host name: every interface, or one we cannot vouch for


def _iso_to_epoch(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


class Watcher:
    """Reads run.json files to tell the user what happens: progress while a test runs, its stop, its report.

    A headless run is one test in the run directory; a web session lists its
    tests (each a run directory under ``tests/``) in its own run.json.
    """

    def __init__(self, run_dir: Path, say) -> None:
        self.run_dir, self.say = run_dir, say
        self.seen: dict[Path, set[Path]] = {}
        self.rows: dict[Path, int] = {}
        self.stopped: set[Path] = set()
        self.reported: set[Path] = set()
        self.next_progress = time.monotonic() + PROGRESS_EVERY_S

    def tests(self) -> list[tuple[int, Path, dict]]:
        """(number, directory, run.json) of every test so far."""
        try:
            info = runinfo.read(self.run_dir)
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        if not info.get("session"):
            return [(1, self.run_dir, info)]
        out = []
        for entry in info.get("tests", []):
            d = self.run_dir / entry["dir"]
            try:
                out.append((entry["number"], d, runinfo.read(d)))
            except (FileNotFoundError, json.JSONDecodeError):
                continue
        return out

    @property
    def session(self) -> bool:
        return runinfo.is_session(self.run_dir)

    def _count(self, d: Path) -> int:
        seen = self.seen.setdefault(d, set())
        new = [p for p in shard_paths(d) if p not in seen]
        self.rows[d] = self.rows.get(d, 0) + (count_rows(new) if new else 0)
        seen.update(new)
        return self.rows[d]

    def poll(self, final: bool = False) -> None:
        progress = time.monotonic() >= self.next_progress
        if progress:
            self.next_progress += PROGRESS_EVERY_S
        session = self.session
        for number, d, info in self.tests():
            label = f"test {number:03d}" if session else ""
            if info.get("status") == "running" and progress and not final:
                rows = self._count(d)
                started = _iso_to_epoch(info.get("started_at")) or time.time()
                elapsed = max(time.time() - started, 0.0)
                bound = info.get("options", {}).get("run_time_s") or info["scenario"]["fleet"]["duration_s"]
                self.say(f"[{label}{' ' if label else ''}{elapsed:5.0f}s/{bound:.0f}s] {rows} iterations recorded "
                         f"({rows / max(elapsed, 1.0):.2f} it/s)")
            if info.get("status") == "finished" and d not in self.stopped:
                self.stopped.add(d)
                if session:
                    self.say(f"harness: {label} ({info.get('scenario_name')}) stopped: {info.get('stop_reason')}; "
                             f"{info.get('rows_written', 0)} iterations recorded in {d}")
                for gap in info.get("incomplete") or []:
                    self.say(f"harness: warning: {label + ': ' if label else ''}{gap['process']} is incomplete "
                             f"({gap['reason']}); the rows are a lower bound")
            if info.get("report") and d not in self.reported:
                self.reported.add(d)
                self.say(f"harness: {label + ' ' if label else ''}report {d / info['report']}")


@contextmanager
def _signals_raise() -> Iterator[None]:
    """Turn SIGTERM / SIGHUP / SIGINT into ``Interrupted`` in this (main) thread, for the run's length."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in FORWARDED}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run(opts: RunOptions) -> RunResult:
    with _signals_raise():
        return _run(opts)


def _run(opts: RunOptions) -> RunResult:
    sc = scenarios.load(opts.scenario).with_overrides(
        backend=opts.backend, workers=opts.workers, duration_s=opts.duration_s, spawn_rate=opts.spawn_rate)
    if opts.latency:
        load_profile(opts.latency)  # a bad profile is a one-line error before anything starts
    scenario_arg = str(scenarios.resolve(opts.scenario))
    if opts.processes < 0:
        raise HarnessError(f"--processes must be 0 or more, got {opts.processes}")
    _check_distribution(opts)
    run_id = runtime.new_run_id(sc.name, sc.backend)
    # input errors are refused before the run directory exists: a refused run leaves nothing behind
    if opts.stand_in:
        standin.check_name(opts.stand_in)
    if opts.s3_stand_in:
        standin.check_s3_name(opts.s3_stand_in)
    for flag, given in (("--stand-in", opts.stand_in), ("--s3-stand-in", opts.s3_stand_in)):
        if given and (opts.aws or any_endpoint_configured()):
            raise HarnessError(f"{flag} starts a local server, but the run targets a configured endpoint or AWS: "
                               f"unset AWS_ENDPOINT_URL* / drop --aws, or drop {flag}")
    if opts.aws and any_endpoint_configured():
        raise HarnessError("--aws and an AWS_ENDPOINT_URL* variable disagree: unset the variable or drop --aws")
    run_dir = _prepare_run_dir(Path(opts.run_dir or Path("runs") / run_id))
    uneven = uneven_groups(opts, sc)
    if uneven:
        _say(opts, f"harness: warning: {uneven}")
    local: standin.StandIn | None = None
    signalled: str | None = None
    try:
        # This process's environment is what Locust inherits and what boto3 reads here.
        kind_env: dict[str, str] = {}
        if opts.aws:
            kind_env[runtime.TARGET_AWS_ENV] = "1"
        elif not any_endpoint_configured():
            local = standin.start(opts.stand_in, run_dir, note=lambda m: _say(opts, m), s3=opts.s3_stand_in)
            os.environ.update(standin.endpoint_env(local), **DUMMY_CREDENTIALS)
            kind_env[runtime.ENDPOINT_KIND_ENV] = standin.ENDPOINT_KIND
            for real in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):  # never sign for moto with real credentials
                os.environ.pop(real, None)
        endpoints = runtime.resolve_endpoints({**os.environ, **kind_env})
        runtime.check_credentials(endpoints)
        env = {k: v for k, v in os.environ.items()
               if k not in (runtime.ENDPOINT_KIND_ENV, runtime.TARGET_AWS_ENV, runtime.CAPACITY_SHARE_ENV)}
        runtime.check_reachable(endpoints, sc.backend)
        resources = runtime.Resources.for_run(run_id, opts.table, opts.bucket)
        clients = make_clients(endpoints)
        backend = runtime.build_backend(sc, clients, resources, run_id)
        runtime.ensure_owned(clients, backend, opts.allow_foreign)
        seed_dir = _seed(opts, sc, endpoints, resources, run_dir) if opts.seed else opts.seed_dir
        where = (f"embedded {local.services[sc.backend]} at {local.urls[sc.backend]}" if local
                 else (endpoints.dynamodb or endpoints.s3 or "AWS"))
        _say(opts, f"harness: {sc.name} on {sc.backend} ({where}), {sc.fleet.workers} workers, "
                   f"{sc.fleet.duration_s:g}s -> {run_dir}")
        if opts.master:
            port, wait = opts.master_bind_port, opts.expect_workers_max_wait_s
            starts = "" if opts.web else (f"; the test starts once {_workers(opts.expect_workers)} connected "
                                          f"(waiting at most {wait:g} s)")
            _say(opts, f"harness: Locust master for workers elsewhere (`harness worker --master-host HOST "
                       f"--master-port {port}`){starts}")
        if opts.web:
            host = "127.0.0.1" if opts.web_host in ("127.0.0.1", "localhost") else opts.web_host
            login = " (login required)" if opts.web_login else ""
            _say(opts, f"harness: web UI at http://{host}:{opts.web_port}{login} (start each test there; each is "
                       f"recorded under {run_dir / runinfo.TESTS_DIR}; Ctrl-C ends the session)")
        cmd = _locust_command(opts, sc, scenario_arg, run_dir, run_id, endpoints.kind,
                              standin.describe(local) if local else None)
        if seed_dir:
            cmd += ["--seed-dir", str(seed_dir)]
        if not opts.table:  # the workers use the table the run created (and seeded)
            cmd += ["--table", resources.table]
        background = _background(opts, sc, endpoints, resources, run_dir)
        try:
            exit_code, signalled = _supervise(opts, sc, cmd, env, run_dir)
        finally:
            if background:
                background.stop()
        safety_failed = _check_safety(run_dir, backend)  # while the endpoint is up
        if opts.cleanup:
            removed = runtime.delete_owned(clients, backend)
            _say(opts, f"harness: {'removed' if removed else 'left'} {backend.name} resource of this run")
    finally:
        if local:
            local.stop()
    if not (run_dir / runinfo.RUN_JSON).exists():
        if signalled:
            raise Interrupted(signal.Signals[signalled])
        if opts.master and _gave_up_on_workers(run_dir):
            raise HarnessError(f"fewer than {opts.expect_workers} workers connected within "
                               f"{opts.expect_workers_max_wait_s:g} s: start them with `harness worker --master-host "
                               f"HOST --master-port {opts.master_bind_port}`; see {run_dir / 'locust.log'}")
        raise HarnessError(f"Locust did not start the run; see {run_dir / 'locust.log'}")
    runinfo.update(run_dir, locust_exit=exit_code)
    return _results(run_dir, exit_code, signalled, safety_failed)


def uneven_groups(opts: RunOptions, sc: scenarios.Scenario) -> str | None:
    """Namespaces a headless run leaves short of ``workers_per_namespace`` (a web test's users are chosen later)."""
    if opts.web:
        return None
    return sc.datastore.uneven_groups(sc.fleet.workers, opts.expect_workers if opts.master else opts.processes)


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
    return safety_run.after_run(wanted[0], backend, True)


def _results(run_dir: Path, exit_code: int, signalled: str | None, safety_failed: list[str] = ()) -> RunResult:
    """Rows and checks of every test, each with the checks of the scenario it actually ran."""
    watcher = Watcher(run_dir, print)
    session = watcher.session
    tests = watcher.tests()
    if session and not tests and exit_code != 0 and not signalled:
        raise HarnessError(f"Locust stopped (exit {exit_code}) before any test ran; see {run_dir / 'locust.log'}")
    total, failed, to_report = 0, [], []
    for number, d, info in tests:
        rows = read_rows(d, run_checks.COLUMNS)
        total += len(rows)
        checks = scenarios.Checks(**info["scenario"]["checks"])
        prefix = f"test {number:03d}: " if session else ""
        failed += [prefix + line for line in run_checks.evaluate(rows, checks, info)]
        if len(rows) and not info.get("report"):
            to_report.append(d)
    failed += list(safety_failed)
    return RunResult(run_dir, total, failed, exit_code, signal=signalled, to_report=to_report, session=session)


def _seed(opts: RunOptions, sc: scenarios.Scenario, endpoints: Endpoints, resources: runtime.Resources,
          run_dir: Path) -> Path:
    """Pre-age the datastore (a paced job) so the load starts where a long run would be after hours."""
    from harness.commands import bulk as commands
    from harness.pacing import jobs
    from harness.pacing.journal import Journal

    if sc.backend != "dynamodb":
        raise HarnessError("--seed-models seeds DynamoDB items: run the scenario with --backend dynamodb")
    assert opts.seed is not None
    models, versions, orphans = opts.seed
    state_dir = run_dir / "seed-state"
    params = commands.seed_params(sc, resources.table, models, versions, orphans, sc.fleet.workers, state_dir,
                                  opts.processes)
    clients = commands.paced_clients(endpoints, sc)
    source = commands.seed_factory(params, clients)
    _say(opts, f"harness: seeding {source.files():,} files in {len(params['namespaces'])} namespace(s)")
    console = commands.Console(opts.quiet)
    state = jobs.run_job(jobs.new_job_id("seed"), "seed", params, source, clients, Journal(run_dir / "jobs.db"),
                         on_progress=console.on_progress, on_start=console.on_start)
    if state != "done":
        raise HarnessError(f"seeding stopped ({state}); see `harness jobs --journal {run_dir / 'jobs.db'}`")
    source.finish()
    return state_dir


class _BackgroundJob:
    """The scenario's noisy neighbour: a paced fill job on the workers' table for the length of the run."""

    def __init__(self, opts: RunOptions, sc: scenarios.Scenario, endpoints: Endpoints, table: str,
                 run_dir: Path) -> None:
        import threading

        from harness.commands import bulk as commands
        from harness.pacing import jobs
        from harness.pacing.journal import Journal
        from harness.pacing.sources import FillSource

        clients = commands.paced_clients(endpoints, sc)
        self.opts = opts
        params = {"table": table, "items": sc.background.items, "item_bytes": sc.background.item_bytes,
                  "prefix": "BG"}
        source = FillSource(clients.dynamodb, table, sc.background.items, sc.background.item_bytes, prefix="BG")
        self.job = None
        self.state = "starting"

        def started(job: object) -> None:
            self.job = job

        def run() -> None:
            self.state = jobs.run_job(jobs.new_job_id("background"), "fill", params, source, clients,
                                      Journal(run_dir / "jobs.db"), on_start=started)

        self.thread = threading.Thread(target=run, daemon=True, name="harness-background")
        self.thread.start()

    def stop(self) -> None:
        if self.job is not None:
            self.job.request_pause("Paused: the run ended")
        self.thread.join(30)
        _say(self.opts, f"harness: background job {self.state}")


def _background(opts: RunOptions, sc: scenarios.Scenario, endpoints: Endpoints, resources: runtime.Resources,
                run_dir: Path) -> _BackgroundJob | None:
    if not sc.background.items:
        return None
    if sc.backend != "dynamodb":
        raise HarnessError("a [background] job writes DynamoDB items: run the scenario with --backend dynamodb")
    _say(opts, f"harness: background job: {sc.background.items:,} items of {sc.background.item_bytes} B, paced")
    return _BackgroundJob(opts, sc, endpoints, resources.table, run_dir)


def _supervise(opts: RunOptions, sc: scenarios.Scenario, cmd: list[str], env: dict[str, str],
               run_dir: Path) -> tuple[int, str | None]:
    """Run Locust to its end; on a signal, let it record the running test, then end its whole process group."""
    out = open(run_dir / "locust.out", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    watcher = Watcher(run_dir, lambda msg: _say(opts, msg))
    limit = None if opts.web else sc.fleet.duration_s + GRACE_S
    if limit is not None and opts.master:
        limit += opts.expect_workers_max_wait_s  # the test starts once its workers have connected
    start = time.monotonic()
    received: str | None = None
    try:
        try:
            while proc.poll() is None:
                try:
                    proc.wait(0.5)  # returns as Locust exits (a sleep made every run end up to 0.5 s later)
                except subprocess.TimeoutExpired:
                    pass
                watcher.poll()
                if limit is not None and time.monotonic() - start > limit:
                    _say(opts, "harness: Locust overran the run time; stopping it")
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(30)
        except Interrupted as e:
            received = e.name
            hurry = _hold_signals()
            _say(opts, f"harness: {received}: stopping Locust (the running test is recorded first)")
            _forward(proc, e.signum)
            _wait(proc, STOP_WAIT_S, hurry, opts)
    finally:
        if proc.poll() is None:
            _end_group(proc.pid)
            proc.wait(10)
        _end_group(proc.pid)  # workers or report builders Locust left behind
        out.close()
        watcher.poll(final=True)
    return (proc.returncode if proc.returncode is not None else -1), received


def _forward(proc: subprocess.Popen, signum: int) -> None:
    try:
        proc.send_signal(signum)
    except ProcessLookupError:
        pass


def _hold_signals() -> threading.Event:
    """From the first signal on, later ones only hurry the shutdown (they must not break its cleanup)."""
    hurry = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for s in FORWARDED:
            signal.signal(s, lambda *_: hurry.set())
    return hurry


def _wait(proc: subprocess.Popen, seconds: float, hurry: threading.Event, opts: RunOptions) -> None:
    """Wait for Locust to finish recording; a second signal ends it at once."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        if hurry.wait(0.2):
            _say(opts, "harness: a second signal: ending Locust now")
            return
    if proc.poll() is None:
        _say(opts, f"harness: Locust did not stop within {seconds:g} s; ending it")


def _group_members(pgid: int) -> list[int]:
    """Live processes of a process group (zombies waiting for their parent do not count)."""
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                out.append(p.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def _end_group(pgid: int, wait_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, whatever is left of Locust's process group (its own session: nothing else is in it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_members(pgid):
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _group_members(pgid):
            time.sleep(0.1)
