"""A finished run's plan, for the commands that come back to it: ``harness check --live``, ``harness jobs cleanup``.

They use the endpoints the run recorded, never new ones from the environment,
and keep the run's promise: nothing goes to AWS unless ``--aws`` says so, and
an embedded stand-in is gone once its run ends. A run directory from before
``plan.json`` existed is read from its ``run.json`` (endpoint, resources,
scenario), which holds the same facts.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.aws.endpoints import endpoint_kind, is_loopback
from harness.config.endpoints import AWS, CHAIN, DUMMY, EMBEDDED, UNUSED, ServiceEndpoint
from harness.config.plan import PLAN_JSON, Connection, LocustPlan, Resources, RunPlan, read_plan
from harness.config.scenario import Scenario, scenario_from_dict
from harness.core.errors import HarnessError

RUN_JSON = "run.json"
LEGACY_EMBEDDED = ("embedded", "moto")  # what older run.json files call the embedded server


def recorded_plan(run_dir: str | Path) -> RunPlan:
    """The run's ``plan.json``, or the plan its ``run.json`` implies; a one-line error for anything else."""
    d = Path(run_dir)
    if (d / PLAN_JSON).is_file():
        return read_plan(d)
    if not (d / RUN_JSON).is_file():
        raise HarnessError(f"{run_dir} is not a run directory (no {RUN_JSON}): give the directory `harness run` made")
    info = json.loads((d / RUN_JSON).read_text())
    if info.get("session"):
        raise HarnessError(f"{run_dir} is a web session from before {PLAN_JSON}: give one of its tests/NNN")
    backend = info.get("backend", "dynamodb")
    endpoint = info.get("endpoint") or {}
    kind = endpoint.get("kind") or info.get("endpoint_kind") or EMBEDDED

    def service(name: str) -> ServiceEndpoint:
        url = endpoint.get(name)
        if kind in LEGACY_EMBEDDED:
            return ServiceEndpoint(url, EMBEDDED, "run.json", DUMMY)
        if kind == AWS and not url:
            return ServiceEndpoint(None, AWS, "run.json")
        if not url:
            return ServiceEndpoint(None, UNUSED, "run.json")
        return ServiceEndpoint(url, endpoint_kind(url), "run.json", DUMMY if is_loopback(url) else CHAIN)

    scenario = info.get("scenario")
    sc = scenario_from_dict(scenario) if scenario else Scenario(name=info.get("scenario_name", "run"))
    res = info.get("resources") or {}
    run_id = info.get("run_id", d.name)
    return RunPlan(run_id=run_id, run_dir=str(d), scenario=sc if sc.backend == backend else _on(sc, backend),
                   connection=Connection(service("dynamodb"), service("s3")),
                   resources=Resources(table=res.get("table") or "unknown-table",
                                       bucket=res.get("bucket") or "unknown-bucket"),
                   locust=LocustPlan(0, 0.0, None))


def _on(sc: Scenario, backend: str) -> Scenario:
    return sc.with_overrides(backend=backend)


def usable_connection(plan: RunPlan, aws: bool, verb: str) -> Connection:
    """The run's connection, if this command may use it now: ``verb`` the run's table or bucket where it is."""
    e = plan.connection.service(plan.backend)
    what = f"the run's {'table' if plan.backend == 'dynamodb' else 'bucket'}"
    if e.kind == EMBEDDED:
        raise HarnessError(f"{what} was on the embedded stand-in, which ended with the run: nothing is left to "
                           f"{verb} there (an endpoint that outlives the run: set "
                           f"AWS_ENDPOINT_URL_{plan.backend.upper()} before `harness run`)")
    if e.kind == AWS and not aws:
        raise HarnessError(f"{what} is on AWS itself: pass --aws to {verb} it there")
    if e.kind != AWS and aws:
        raise HarnessError(f"--aws, but {what} is at {e.where} (as the run recorded it): drop --aws")
    return plan.connection
