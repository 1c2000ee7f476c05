"""``harness run``: preflight, the embedded moto server, Locust as a child process, checks.

Locust runs as its own process (master + workers with ``--processes``) so its
gevent patching and event loop never mix with this supervisor, which only
watches the run directory for progress, enforces the time bound, and evaluates
the scenario's checks at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.aws.clients import make_clients
from harness.aws.endpoints import Endpoints, any_endpoint_configured
from harness.aws.fidelity.latency import load_profile
from harness.aws.moto_server import DUMMY_CREDENTIALS, EmbeddedMoto
from harness.errors import HarnessError
from harness.load import checks as run_checks
from harness.load import runtime
from harness.load import scenario as scenarios
from harness.record import runinfo
from harness.record.reader import count_rows, read_rows, shard_paths
from harness.safety import run as safety_run

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
EXIT_CHECKS_FAILED = 3
GRACE_S = 60.0  # past the run time, Locust gets this long to stop before it is ended
PROGRESS_EVERY_S = 10.0


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
    quiet: bool = False


@dataclass
class RunResult:
    run_dir: Path
    rows: int
    failed_checks: list[str]
    locust_exit: int
    report: Path | None = None


def _say(opts: RunOptions, msg: str) -> None:
    if not opts.quiet:
        print(msg, flush=True)


def _prepare_run_dir(path: Path) -> Path:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise HarnessError(f"run directory {path} already exists and is not empty: choose another --run-dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _locust_command(opts: RunOptions, sc: scenarios.Scenario, scenario_arg: str, run_dir: Path,
                    run_id: str) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--scenario", scenario_arg,
           "--backend", sc.backend, "--run-dir", str(run_dir), "--run-id", run_id,
           "-u", str(sc.fleet.workers), "-r", f"{sc.fleet.spawn_rate:g}",
           "--csv", str(run_dir / "locust"), "--csv-full-history", "--exit-code-on-error", "0",
           "--logfile", str(run_dir / "locust.log"), "--only-summary"]
    if opts.web:
        cmd += ["--web-host", "127.0.0.1", "--web-port", str(opts.web_port)]
    else:
        cmd += ["--headless", "-t", f"{max(1, int(round(sc.fleet.duration_s)))}s"]
    if opts.processes:
        cmd += ["--processes", str(opts.processes)]
    if opts.latency:
        cmd += ["--latency", opts.latency]
    if opts.table:
        cmd += ["--table", opts.table]
    if opts.bucket:
        cmd += ["--bucket", opts.bucket]
    if opts.allow_foreign:
        cmd += ["--allow-foreign-resources"]
    return cmd


class Progress:
    """Reads new shards every few seconds: iterations, failures and the fleet rate so far."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir, self.seen, self.rows, self.t0 = run_dir, set(), 0, time.monotonic()

    def line(self, duration_s: float) -> str:
        new = [p for p in shard_paths(self.run_dir) if p not in self.seen]
        self.rows += count_rows(new) if new else 0
        self.seen.update(new)
        t = time.monotonic() - self.t0
        return f"[{t:5.0f}s/{duration_s:.0f}s] {self.rows} iterations recorded ({self.rows / max(t, 1):.2f} it/s)"


def run(opts: RunOptions) -> RunResult:
    sc = scenarios.load(opts.scenario).with_overrides(
        backend=opts.backend, workers=opts.workers, duration_s=opts.duration_s, spawn_rate=opts.spawn_rate)
    if opts.latency:
        load_profile(opts.latency)  # a bad profile is a one-line error before anything starts
    scenario_arg = str(scenarios.resolve(opts.scenario))
    if opts.processes < 0:
        raise HarnessError(f"--processes must be 0 or more, got {opts.processes}")
    run_id = runtime.new_run_id(sc.name, sc.backend)
    run_dir = _prepare_run_dir(Path(opts.run_dir or Path("runs") / run_id))
    moto: EmbeddedMoto | None = None
    if opts.aws and any_endpoint_configured():
        raise HarnessError("--aws and an AWS_ENDPOINT_URL* variable disagree: unset the variable or drop --aws")
    try:
        # This process's environment is what Locust inherits and what boto3 reads here.
        if opts.aws:
            os.environ[runtime.TARGET_AWS_ENV] = "1"
        elif not any_endpoint_configured():
            moto = EmbeddedMoto(log_path=str(run_dir / "moto.log")).start()
            os.environ.update(AWS_ENDPOINT_URL=moto.url, **{runtime.ENDPOINT_KIND_ENV: "moto"}, **DUMMY_CREDENTIALS)
            for real in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):  # never sign for moto with real credentials
                os.environ.pop(real, None)
        endpoints = runtime.resolve_endpoints()
        runtime.check_credentials(endpoints)
        env = dict(os.environ)
        if opts.processes:
            env[runtime.CAPACITY_SHARE_ENV] = str(1.0 / opts.processes)
        runtime.check_reachable(endpoints, sc.backend)
        resources = runtime.Resources.for_run(run_id, opts.table, opts.bucket)
        clients = make_clients(endpoints)
        backend = runtime.build_backend(sc, clients, resources, run_id)
        runtime.ensure_owned(clients, backend, opts.allow_foreign)
        seed_dir = _seed(opts, sc, endpoints, resources, run_dir) if opts.seed else None
        where = f"embedded moto at {moto.url}" if moto else (endpoints.dynamodb or endpoints.s3 or "AWS")
        _say(opts, f"harness: {sc.name} on {sc.backend} ({where}), {sc.fleet.workers} workers, "
                   f"{sc.fleet.duration_s:g}s -> {run_dir}")
        if opts.web:
            _say(opts, f"harness: web UI at http://127.0.0.1:{opts.web_port} (start the test there)")
        cmd = _locust_command(opts, sc, scenario_arg, run_dir, run_id)
        if seed_dir:
            cmd += ["--seed-dir", str(seed_dir)]
        if not opts.table:  # the workers use the table the run created (and seeded)
            cmd += ["--table", resources.table]
        background = _background(opts, sc, endpoints, resources, run_dir)
        try:
            exit_code = _supervise(opts, sc, cmd, env, run_dir)
        finally:
            if background:
                background.stop()
        safety_failed = safety_run.after_run(run_dir, backend, sc.checks.safety)  # while the endpoint is up
        if opts.cleanup:
            removed = runtime.delete_owned(clients, backend)
            _say(opts, f"harness: {'removed' if removed else 'left'} {backend.name} resource of this run")
    finally:
        if moto:
            moto.stop()
    if not (run_dir / runinfo.RUN_JSON).exists():
        raise HarnessError(f"Locust did not start the run; see {run_dir / 'locust.log'}")
    runinfo.update(run_dir, scenario=sc.to_dict(), locust_exit=exit_code)
    rows = read_rows(run_dir, ["ts_start", "ts_end", "ok", "error_kind"])
    failed = run_checks.evaluate(rows, sc.checks) + safety_failed
    return RunResult(run_dir, len(rows), failed, exit_code)


def _seed(opts: RunOptions, sc: scenarios.Scenario, endpoints: Endpoints, resources: runtime.Resources,
          run_dir: Path) -> Path:
    """Pre-age the datastore (a paced job) so the load starts where a long run would be after hours."""
    from harness.pacing import commands, jobs
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

        from harness.pacing import commands, jobs
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


def _supervise(opts: RunOptions, sc: scenarios.Scenario, cmd: list[str], env: dict[str, str], run_dir: Path) -> int:
    out = open(run_dir / "locust.out", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    progress = Progress(run_dir)
    limit = None if opts.web else sc.fleet.duration_s + GRACE_S
    start = time.monotonic()
    next_line = start + PROGRESS_EVERY_S
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            elapsed = now - start
            if now >= next_line:
                next_line += PROGRESS_EVERY_S
                _say(opts, progress.line(sc.fleet.duration_s))
            if limit is not None and elapsed > limit:
                _say(opts, "harness: Locust overran the run time; stopping it")
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
    except KeyboardInterrupt:
        _say(opts, "harness: interrupted; stopping Locust (rows recorded so far are kept)")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    finally:
        if proc.poll() is None:
            proc.kill()
        out.close()
    return proc.returncode if proc.returncode is not None else -1
