"""Run plans for tests, made by the same builder `harness run` uses (no environment read, nothing started)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.config.build import RunOptions, plan_run
from harness.config.endpoints import ServiceEndpoint, endpoint_kind
from harness.config.plan import Connection, RunPlan
from harness.core.environment import UserEnvironment


def make_plan(scenario: str = "namespaced", *, endpoints: dict[str, str] | None = None, password: str = "",
              **opts: Any) -> RunPlan:
    """``harness run SCENARIO`` with these options, as if the user had set ``endpoints`` (AWS_ENDPOINT_URL*)
    and the web login's ``password``."""
    return plan_run(RunOptions(scenario=scenario, **opts), UserEnvironment(endpoints=dict(endpoints or {})),
                    password=password)


def at(plan: RunPlan, dynamodb: str | None = None, s3: str | None = None, credentials: str = "dummy") -> RunPlan:
    """The plan with its services at these URLs (None: AWS itself)."""
    def svc(url: str | None) -> ServiceEndpoint:
        return ServiceEndpoint(url, endpoint_kind(url), "AWS_ENDPOINT_URL" if url else "--aws",
                               credentials if url else "chain")

    return replace(plan, connection=Connection(svc(dynamodb), svc(s3), plan.connection.region))
