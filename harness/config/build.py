"""Building a run plan from a command line and the user's environment: every check before anything starts.

``plan_run`` is ``harness run``'s planning; ``plan_locust`` is a plain
``locust -f locustfile.py`` run's (its ``init``); ``job_connection`` is the
bulk jobs'. Bad input is a one-line ``HarnessError`` raised here, before a run
directory exists, so a refused run leaves nothing behind. The stand-in is the
one thing a plan cannot know in advance (its ports): ``start_stand_in``
starts it and returns the plan with its URLs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError

from harness.aws import standin
from harness.aws.clients import DEFAULT_REGION, new_session
from harness.aws.fidelity.latency import load_profile
from harness.config import endpoints as ep
from harness.config import scenario as scenarios
from harness.config.plan import (
    Connection,
    LocustPlan,
    MasterPlan,
    PreAge,
    Resources,
    RunPlan,
    Seeding,
    StandInPlan,
    WebPlan,
    new_run_id,
)
from harness.config.telemetry import CLOUDWATCH_WAIT_S, telemetry_plan
from harness.core.environment import WEB_PASSWORD_ENV, WEB_USERNAME_ENV, UserEnvironment
from harness.core.errors import HarnessError

MASTER_PORT = 5557  # Locust's own default: workers of a --master run connect here
MIN_PASSWORD = 12  # the web login's password, at least this long


@dataclass(frozen=True)
class RunOptions:
    """What ``harness run``'s command line asked for (the plan is what it resolves to)."""

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
    preage: PreAge | None = None  # --pre-age-models: pre-age before the load
    seed_dir: str | None = None  # or start from an earlier `harness jobs pre-age` (its catalogs; with --table)
    stand_in: str | None = None  # the embedded stand-in (default: standin.DEFAULT)
    s3_stand_in: str | None = None  # S3's (default seaweedfs; moto with --dynamodb-stand-in moto|moto-indexed)
    web_host: str = "127.0.0.1"
    web_login: bool = False  # Locust's --web-login, one account from HARNESS_WEB_USERNAME / HARNESS_WEB_PASSWORD
    master: bool = False  # a Locust master for workers started elsewhere (`harness worker`)
    expect_workers: int = 1  # headless --master: start when this many workers are connected ...
    expect_workers_max_wait_s: float = 600.0  # ... or give up after this long
    master_bind_host: str = "*"
    master_bind_port: int = MASTER_PORT
    rate_per_s: float | None = None  # --rate: open arrivals, whatever the scenario's fleet
    checks: dict[str, float | None] = field(default_factory=dict)  # --max-p99-wait, ...: the scenario's [checks]
    otel: bool = False  # --otel (or the scenario's [observe] otel)
    prometheus: str | None = None  # --prometheus HOST:PORT
    cloudwatch_wait_s: float = CLOUDWATCH_WAIT_S  # --cloudwatch-wait: an --aws run's wait for CloudWatch's data
    driver: str | None = None  # --driver KIND: the scenario's twin on that driver ([driver] twin), if not its own
    swamp: str | None = None  # --swamp PATH: the swamp driver's executable ([driver] swamp)
    swamp_repo: str | None = None  # --swamp-repo DIR: the swamp driver's repository template ([driver] swamp_repo)
    front: bool = False  # --front: the scenario's [fidelity] front = true


def plan_run(opts: RunOptions, env: UserEnvironment, *, password: str = "",
             scenario: scenarios.Scenario | None = None) -> RunPlan:
    """``harness run``'s plan, or the first thing wrong with the command line, as one line.

    ``scenario``: one already parsed (a story chapter's, its overrides applied), instead of loading
    ``opts.scenario``.
    """
    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    sc, fleet = _scenario(opts, extra, scenario)
    if opts.processes < 0:
        raise HarnessError(f"--processes must be 0 or more, got {opts.processes}")
    check_distribution(opts, password)
    stand_in = stand_in_plan(opts.stand_in or env.stand_in, opts.s3_stand_in or env.s3_stand_in, env)
    connection = resolve_connection(env, aws=opts.aws, needed=[sc.backend])
    _check_stand_in_flags(opts, sc, connection)
    if opts.master and connection.stand_in_services:
        raise HarnessError("--master: workers elsewhere cannot reach an embedded stand-in on this machine's "
                           f"loopback; set {ep.variables_for(connection.stand_in_services)} to a stand-in every "
                           "worker reaches, or pass --aws")
    check_front(sc, connection, opts.master)
    run_id = new_run_id(sc.name, sc.backend)
    run_dir = Path(opts.run_dir or Path("runs") / run_id)  # as given: messages name it the way the user did
    _check_preage(opts, sc)
    seeding = Seeding(opts.preage, str((run_dir / "seed-state").resolve()) if opts.preage else
                      (str(Path(opts.seed_dir).resolve()) if opts.seed_dir else None))
    web = WebPlan(host=opts.web_host, port=opts.web_port, login=opts.web_login,
                  username=env.web_username or WebPlan.username, report_each_test=opts.report) if opts.web else None
    master = MasterPlan(opts.master_bind_host, opts.master_bind_port, opts.expect_workers,
                        opts.expect_workers_max_wait_s) if opts.master else None
    return RunPlan(
        run_id=run_id, run_dir=str(run_dir), scenario=sc, connection=connection,
        resources=Resources.for_run(run_id, opts.table, opts.bucket, allow_foreign=opts.allow_foreign,
                                    cleanup=opts.cleanup),
        locust=LocustPlan(users=fleet.peak_workers, spawn_rate=fleet.spawn_rate, run_time_s=_run_time_s(opts, fleet),
                          processes=opts.processes, web=web, master=master, report=opts.report),
        stand_in=stand_in, seeding=seeding, latency=opts.latency or None, scenario_dirs=extra,
        telemetry=telemetry_plan(otel=opts.otel or sc.observe.otel, prometheus=opts.prometheus,
                                 cloudwatch_wait_s=opts.cloudwatch_wait_s, otel_variables=env.otel))


def _scenario(opts: RunOptions, extra: tuple[str, ...],
              scenario: scenarios.Scenario | None) -> tuple[scenarios.Scenario, scenarios.Fleet]:
    """The run's scenario with every command-line override, and its fleet (under --web, the form's prefill)."""
    sc = scenario if scenario is not None else scenarios.load(opts.scenario, extra)
    if opts.driver:
        sc = scenarios.twin_for(sc, opts.driver, extra)
    sc = scenarios.with_swamp(sc, opts.swamp, opts.swamp_repo)
    sc = sc.with_overrides(rate_per_s=opts.rate_per_s).with_checks(**opts.checks)
    if opts.web:  # the fleet options are the form's prefill; each test's plan applies what the form asked
        sc = sc.with_overrides(backend=opts.backend)
        fleet = sc.with_overrides(workers=opts.workers, duration_s=opts.duration_s, spawn_rate=opts.spawn_rate).fleet
    else:
        sc = sc.with_overrides(backend=opts.backend, workers=opts.workers, duration_s=opts.duration_s,
                               spawn_rate=opts.spawn_rate)
        fleet = sc.fleet
    if opts.latency:
        load_profile(opts.latency)  # a bad profile is a one-line error before anything starts
    if opts.front:
        sc = replace(sc, fidelity=replace(sc.fidelity, front=True))
    return sc, fleet


def _check_stand_in_flags(opts: RunOptions, sc: scenarios.Scenario, connection: Connection) -> None:
    """A stand-in named for a service whose endpoint a variable (or --aws) already names: one line."""
    for flag, given, service in (("--dynamodb-stand-in", opts.stand_in, sc.backend),
                                 ("--s3-stand-in", opts.s3_stand_in, "s3")):
        # a DynamoDB run uses no S3: --s3-stand-in (as a suite or a script passes it to every run) has nothing to do
        if given and service not in connection.stand_in_services and connection.service(service).used:
            named = connection.service(service).source  # the variable (or --aws) that named the endpoint
            target = "--aws targets AWS itself: drop --aws" if named == "--aws" else \
                f"{named} names {service}'s endpoint: unset {named}"
            raise HarnessError(f"{flag} starts a local server, but {target}, or drop {flag}")


def _check_preage(opts: RunOptions, sc: scenarios.Scenario) -> None:
    """Pre-ageing and a [background] job write DynamoDB items the harness's own way: refused where unread. A
    pre-age in swamp's own layout writes its backend's (``swamp-s3@...``: the S3 extension's objects)."""
    layout_backend = opts.preage.backend if opts.preage else "dynamodb"
    if opts.preage and sc.backend != layout_backend:
        what = f"{opts.preage.layout}'s S3 objects" if layout_backend == "s3" else "DynamoDB items"
        raise HarnessError(f"--pre-age-models pre-ages {what}: run the scenario with --backend {layout_backend}")
    if opts.preage and opts.preage.layout:  # swamp's own items (harness.jobs.pacing.swamp_layout): the real swamp's
        if sc.driver.kind != "swamp":
            raise HarnessError(f"a pre-age in {opts.preage.layout}'s layout is for the real swamp to read: run the "
                               "scenario with --driver swamp")
        if opts.preage.orphans:
            raise HarnessError("a pre-age in swamp's layout takes no orphans (swamp's delete leaves a model's files "
                               "live, so an orphan's items are a live model's)")
        return _check_background(sc)
    if opts.preage and sc.datastore.swamp_own:
        raise HarnessError("--pre-age-models writes the harness's fenced items, which a run that is swamp's own "
                           "(fencing = false with bookkeeping = \"swamp\") does not read: run a copy of the scenario "
                           "with fencing = true, or drop --pre-age-models")
    _check_background(sc)


def _check_background(sc: scenarios.Scenario) -> None:
    if sc.background.items and sc.backend != "dynamodb":
        raise HarnessError("a [background] job writes DynamoDB items: run the scenario with --backend dynamodb")


def _run_time_s(opts: RunOptions, fleet: scenarios.Fleet) -> float | None:
    """Locust's run time: headless, the bound (the fleet's duration); web, the form's prefill, which is
    --duration's and empty without it, as docs/web-ui.md says (each test then runs the scenario's duration)."""
    return opts.duration_s if opts.web else fleet.duration_s


def plan_locust(opts: Any, env: UserEnvironment, *, role: str, web: bool) -> RunPlan:
    """A plain ``locust -f locustfile.py`` run's plan, from Locust's parsed options (``role``: local|master)."""
    extra = (env.scenarios_dir,) if env.scenarios_dir else ()
    sc = scenarios.load(opts.scenario, extra).with_overrides(backend=opts.backend or None)
    if opts.latency:
        load_profile(opts.latency)
    connection = resolve_connection(env, aws=False, needed=[sc.backend])
    if role != "local" and connection.stand_in_services:
        raise HarnessError("a Locust master starts no embedded stand-in (its workers could not reach it): set "
                           f"{ep.variables_for(connection.stand_in_services)} to an endpoint every worker reaches")
    run_id = new_run_id(sc.name, sc.backend)
    run_dir = Path(opts.run_dir or Path("runs") / run_id)
    users = int(opts.num_users or sc.fleet.workers)
    run_time = float(opts.run_time) if getattr(opts, "run_time", None) else None
    return RunPlan(
        run_id=run_id, run_dir=str(run_dir), scenario=sc, connection=connection,
        resources=Resources.for_run(run_id),
        locust=LocustPlan(users=users, spawn_rate=float(opts.spawn_rate or users), run_time_s=run_time,
                          web=WebPlan(username=env.web_username or WebPlan.username) if web else None),
        stand_in=stand_in_plan(opts.stand_in or env.stand_in, getattr(opts, "s3_stand_in", "") or env.s3_stand_in,
                               env), latency=opts.latency or None,
        scenario_dirs=extra, fixed_backend=bool(opts.backend),
        telemetry=telemetry_plan(otel=bool(getattr(opts, "otel", False)) or sc.observe.otel,
                                 prometheus=getattr(opts, "prometheus", "") or None, cloudwatch_wait_s=0.0,
                                 otel_variables=env.otel))


def stand_in_plan(name: str | None, s3: str | None, env: UserEnvironment) -> StandInPlan:
    """The stand-in per service: ``name`` serves DynamoDB (dynalite by default), ``s3`` S3 (SeaweedFS by default;
    moto when moto was named for DynamoDB)."""
    if name:
        standin.check_name(name)
    if s3:
        standin.check_s3_name(s3)
    return StandInPlan(dynamodb=name or standin.DEFAULT, s3=s3 or standin.s3_default_for(name), named=bool(name),
                       s3_named=bool(s3), node_modules=env.node_modules, weed=env.weed)


def resolve_connection(env: UserEnvironment, *, aws: bool, needed: Iterable[str]) -> Connection:
    """Each service's endpoint and credentials (see ``harness.config.endpoints``), and the region."""
    services = ep.resolve(env.endpoints, aws=aws, needed=needed)
    real = [e for e in services.values() if e.kind in (ep.AWS, ep.OTHER)]
    found, source = chain_credentials(env) if real else (False, "")
    services = ep.with_credentials(services, found)
    region = _region("chain" if found else "dummy")
    return Connection(services["dynamodb"], services["s3"], region, source, services["cloudwatch"])


def job_connection(env: UserEnvironment, *, aws: bool) -> Connection:
    """The bulk jobs' DynamoDB endpoint: one that outlives them (a variable, or --aws), never a stand-in."""
    connection = resolve_connection(env, aws=aws, needed=["dynamodb"])
    if connection.stand_in_services:
        raise HarnessError("jobs need an endpoint that outlives them: set AWS_ENDPOINT_URL_DYNAMODB (or "
                           "AWS_ENDPOINT_URL: DynamoDB Local, a moto server, ...) or pass --aws; "
                           "`harness run --pre-age-models` pre-ages the embedded one")
    return connection


def chain_credentials(env: UserEnvironment) -> tuple[bool, str]:
    """Whether boto3's chain finds credentials, and where from (a variable or profile name, never a value)."""
    try:
        creds = new_session("chain").get_credentials()
    except BotoCoreError as e:
        raise HarnessError(f"cannot read AWS credentials: {e}") from None
    if creds is None:
        return False, ""
    if "AWS_ACCESS_KEY_ID" in env.credential_vars:
        return True, "AWS_ACCESS_KEY_ID"
    if env.profile:
        return True, f"profile {env.profile}"
    return True, getattr(creds, "method", "") or "boto3's credential chain"


def _region(credentials: str) -> str:
    try:
        return new_session(credentials).region_name or DEFAULT_REGION
    except BotoCoreError:
        return DEFAULT_REGION


def check_password(password: str) -> str:
    """The web login's password as given, or a one-line error saying what to set."""
    if not password:
        raise HarnessError(f"the web login needs a password: set {WEB_PASSWORD_ENV} (for example "
                           f"`export {WEB_PASSWORD_ENV}=$(openssl rand -base64 18)`), or bind the UI to 127.0.0.1")
    if len(password) < MIN_PASSWORD:
        raise HarnessError(f"{WEB_PASSWORD_ENV} is {len(password)} characters long: use at least {MIN_PASSWORD}")
    return password


def check_front(sc: scenarios.Scenario, connection: Any, master: bool) -> None:
    """The front serves the command driver's processes on this machine's loopback, in front of a local
    endpoint: anything else is a one-line error before anything starts."""
    if not sc.fidelity.front:
        return
    if sc.driver.kind == "model":
        raise HarnessError("--front / [fidelity] front: the front serves a command's processes; the model driver's "
                           "own clients have the fidelity layer already: run with --driver command (or drop --front)")
    if master:
        raise HarnessError("--front: the front listens on this machine's loopback, which workers elsewhere cannot "
                           "reach: drop --master or --front")
    if connection.service(sc.backend).kind == "aws":
        raise HarnessError("--front: the front forwards to a local endpoint (a stand-in, or AWS_ENDPOINT_URL_*), "
                           "not to AWS itself: drop --aws or --front")


def check_distribution(opts: RunOptions, password: str = "") -> None:
    """What ``--master`` and a published web UI need before anything starts (one line each)."""
    if opts.web and opts.web_login:
        check_password(password)
    if opts.web and not opts.web_login and not loopback(opts.web_host):
        raise HarnessError(f"the web UI on {opts.web_host} would be open to anyone who reaches it: add --web-login "
                           f"(one account from {WEB_USERNAME_ENV} / {WEB_PASSWORD_ENV}) or use --web-host 127.0.0.1")
    if not opts.master:
        return
    if opts.processes:
        raise HarnessError("--master runs no workers of its own: drop --processes and start `harness worker "
                           "--master-host HOST` where the workers run")
    if opts.expect_workers < 1:
        raise HarnessError(f"--expect-workers must be at least 1, got {opts.expect_workers}")


def loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # "*", a host name: every interface, or one we cannot vouch for


def start_stand_in(plan: RunPlan, note: Callable[[str], Any], log_dir: str | Path | None = None
                   ) -> tuple[standin.StandIn | None, RunPlan]:
    """Start the embedded stand-in for the services the plan has it serve; the plan with its URLs."""
    services = plan.connection.stand_in_services
    if not services:
        return None, plan
    s = plan.stand_in
    s3 = s.s3 if s.s3_named else None  # unnamed, a default falls back to moto if it must
    if "dynamodb" in services:
        server = standin.start(s.dynamodb if s.named else None, log_dir, note=note, node_modules=s.node_modules,
                               s3=s3, services=services, weed=s.weed)
    else:
        server = standin.start_s3(s3, log_dir, note=note, weed=s.weed)
    c = plan.connection
    filled = {svc: replace(c.service(svc), url=server.urls[svc]) for svc in services}
    connection = replace(c, **filled)
    return server, replace(plan, connection=connection, stand_in=replace(s, started=standin.describe(server)))
