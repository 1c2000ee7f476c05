"""The web UI's start form: which options it shows, which it lets a user change, what it checks.

The scenario is a choice among the known scenarios (plus the file the run was
started with, when that is not one of them). The run directory and the
backend belong to the run's plan (``harness run`` created the table or bucket
for that backend and watches that directory): the form shows them as a
one-value choice and the server refuses a request that changes them, so no
form edit can send rows where nobody is looking. The form's defaults are the
plan's (its scenario, its latency).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import scenario as scenarios
from harness.config.plan import RunPlan
from harness.core.errors import HarnessError

OWNED = ("run_dir", "backend")  # shown in the form, never changed from it
HELP = {
    "scenario": "what each test runs; its description and settings are shown below",
    "run_dir": "set when Locust started: each test is recorded in its own tests/NNN directory under it",
    "backend": "set when Locust started (the table or bucket was made for it); a scenario runs on this backend",
    "latency": "latency profile: local, aws-dynamodb, aws-s3-vpce, aws or a .toml file; empty: the scenario's",
}


def _seconds(x: float) -> str:
    return f"{x / 60:g} min" if x >= 120 and x % 60 == 0 else f"{x:g} s"


def settings(sc: scenarios.Scenario) -> list[str]:
    """The settings that decide what a scenario shows, in a line each."""
    w, d, lk = sc.workload, sc.datastore, sc.lock
    out = [f"backend {sc.backend}",
           f"workload {w.kind}, {w.lifecycle} models" + (f", {w.models_per_worker} per worker"
                                                          if w.lifecycle == "long-lived" else ""),
           f"payloads {', '.join(f'{b:,} B' for b in w.payload_bytes)}"]
    if sc.backend == "dynamodb":
        out.append(f"GSI {d.gsi}")
    else:
        out.append(f"S3 index {d.s3_index}")
    shared_by = f" ({d.workers_per_namespace} workers each)" if d.workers_per_namespace > 1 else ""
    out += [f"lock per {d.lock_scope}, namespaces {d.namespaces}{shared_by}", f"index commit {d.index_commit}"]
    if d.prune_every:
        out.append(f"prune every {d.prune_every} iterations")
    out.append(f"lock ttl {_seconds(lk.ttl_s)}, wait {_seconds(lk.wait_s)}")
    fid = sc.fidelity
    if fid.mode != "off" and fid.config.dynamodb is not None and sc.backend == "dynamodb":
        out.append(f"capacity model {fid.config.dynamodb.mode}, scale {fid.config.dynamodb.scale:g}")
    if fid.config.latency != "local":
        out.append(f"latency {fid.config.latency}")
    return out


def catalogue(plan: RunPlan) -> dict[str, dict[str, Any]]:
    """Every scenario the form offers: name (or path) -> description, settings, file."""
    out: dict[str, dict[str, Any]] = {}
    names = dict(scenarios.available(plan.scenario_dirs))
    value = form_value(plan.scenario.source, plan.scenario_dirs)
    if value not in names:
        names[value] = Path(value)
    for name, path in names.items():
        try:
            sc = scenarios.load(str(path))
        except HarnessError as e:
            out[name] = {"description": f"cannot be loaded: {e}", "settings": [], "source": str(path)}
            continue
        f = sc.fleet
        out[name] = {"description": sc.description, "settings": settings(sc), "source": str(path),
                     "fleet": f"{f.workers} workers at {f.spawn_rate:g}/s for {_seconds(f.duration_s)}"}
    return out


def form_value(scenario_arg: str, dirs: tuple[str, ...] = ()) -> str:
    """A known scenario's name for a path to its file; any other value as it is."""
    try:
        path = scenarios.resolve(scenario_arg, dirs)
    except HarnessError:
        return scenario_arg
    for name, known in scenarios.available(dirs).items():
        if known.resolve() == path.resolve():
            return name
    return str(path)


def shown_owned(plan: RunPlan) -> dict[str, str]:
    """The values the form shows for the options it may not change."""
    return {"run_dir": plan.run_dir, "backend": plan.backend if plan.fixed_backend else "(each scenario's own)"}


def adjust_extra_options(extra: dict[str, dict], plan: RunPlan) -> dict[str, dict]:
    """Locust's ``extra_options`` for the form: scenario first and a choice, owned options as one-value choices."""
    if "scenario" in extra:
        value = form_value(plan.scenario.source, plan.scenario_dirs)
        choices = list(scenarios.available(plan.scenario_dirs))
        if value not in choices:
            choices.append(value)
        extra["scenario"].update(choices=choices, default_value=value, help_text=HELP["scenario"])
    for key, shown in shown_owned(plan).items():
        if key in extra:
            extra[key].update(choices=[shown], default_value=shown, help_text=HELP[key])
    if "latency" in extra:
        extra["latency"].update(default_value=plan.latency or "", help_text=HELP["latency"])
    first = [k for k in ("scenario", "latency", *OWNED) if k in extra]
    return {k: extra[k] for k in first + [k for k in extra if k not in first]}


def check_swarm(form: Any, plan: RunPlan) -> str | None:
    """One line saying why a start request cannot run, or None."""
    for key, shown in shown_owned(plan).items():
        if key in form and form[key] != shown:
            return f"{key.replace('_', ' ')} is {shown} for this Locust process and cannot be changed from the form"
    name = form.get("scenario")
    if not name:
        return None
    try:
        scenarios.resolve(name, plan.scenario_dirs)
        if form_value(name, plan.scenario_dirs) != form_value(plan.scenario.source, plan.scenario_dirs):
            scenarios.load(name, plan.scenario_dirs)  # another scenario: it must load (the run's was checked)
    except HarnessError as e:
        return str(e)
    return None
