"""The run plan: built once from a command line, a JSON round trip, a schema version, no secrets; a test's plan."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.config import scenario as scenarios
from harness.config.build import RunOptions, plan_run, start_stand_in
from harness.config.plan import SCHEMA, PreAge, RunPlan, plan_option, read_plan
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from tests.support.plans import make_plan

SHAPES = [dict(), dict(web=True, workers=3, duration_s=45.0), dict(processes=2, workers=6, latency="aws-dynamodb"),
          dict(master=True, aws=True, expect_workers=3), dict(backend="s3", bucket="b-1", allow_foreign=True),
          dict(preage=PreAge(5, 2, 1), table="t-1", cleanup=True)]


@pytest.mark.parametrize("name", sorted(scenarios.available()))
@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_every_plan_survives_its_json_exactly(name, shape):
    opts = SHAPES[shape]
    if opts.get("preage") and scenarios.load(name).backend != "dynamodb":
        opts = {**opts, "backend": "dynamodb"}
    if opts.get("preage") and scenarios.load(name).datastore.swamp_own:  # pre-ageing is refused there
        opts = {k: v for k, v in opts.items() if k != "preage"}
    plan = make_plan(name, **opts)
    text = plan.to_json()
    assert RunPlan.from_json(text) == plan  # every field, the scenario's nested tuples and floats included
    assert json.loads(text)["schema"] == SCHEMA


def test_the_plan_file_and_the_option_read_the_same_plan(tmp_path):
    plan = replace(make_plan(run_dir=str(tmp_path)), stand_in=replace(make_plan().stand_in, started={
        "name": "dynalite", "version": "4.0.0", "services": {"dynamodb": "dynalite 4.0.0", "s3": "moto 5"}}))
    path = plan.write()
    assert path == tmp_path / "plan.json"
    assert read_plan(tmp_path) == plan_option(str(path)) == plan_option(plan.to_json()) == plan


def test_a_plan_of_another_schema_or_a_broken_file_is_one_line(tmp_path):
    doc = json.loads(make_plan().to_json())
    (tmp_path / "plan.json").write_text(json.dumps({**doc, "schema": SCHEMA + 1}))
    with pytest.raises(HarnessError, match=f"schema {SCHEMA + 1}; this harness reads schema {SCHEMA}"):
        read_plan(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps({k: v for k, v in doc.items() if k != "resources"}))
    with pytest.raises(HarnessError, match="incomplete or malformed") as e:
        read_plan(tmp_path)
    assert "\n" not in str(e.value)
    with pytest.raises(HarnessError, match="has no plan.json"):
        read_plan(tmp_path / "elsewhere")


def test_the_plan_names_where_credentials_come_from_never_their_values(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret-value")
    monkeypatch.setenv("HARNESS_WEB_PASSWORD", "a-web-password-of-some-length")
    env = UserEnvironment.read()
    plan = plan_run(RunOptions(scenario="namespaced", aws=True, web=True, web_login=True), env,
                    password="a-web-password-of-some-length")
    text = plan.to_json()
    for secret in ("AKIAEXAMPLEKEYID", "wJalrXUtnFEMI-secret-value", "a-web-password-of-some-length"):
        assert secret not in text
    assert plan.connection.credentials_from == "AWS_ACCESS_KEY_ID"  # the variable's name
    assert plan.locust.web.password_env == "HARNESS_WEB_PASSWORD"


def test_headless_overrides_are_applied_once_and_web_ones_are_the_forms_prefill():
    headless = make_plan("namespaced", workers=3, duration_s=20.0, spawn_rate=1.5, backend="s3")
    assert (headless.scenario.backend, headless.scenario.fleet.workers, headless.scenario.fleet.duration_s,
            headless.scenario.fleet.spawn_rate) == ("s3", 3, 20.0, 1.5)
    assert (headless.locust.users, headless.locust.run_time_s) == (3, 20.0)
    web = make_plan("namespaced", web=True, workers=3, duration_s=20.0, backend="s3")
    own = scenarios.load("namespaced")
    assert web.scenario.backend == "s3" and web.scenario.fleet == own.fleet  # the form decides each test's fleet
    assert (web.locust.users, web.locust.run_time_s) == (3, 20.0)  # ... and these prefill it


def test_a_web_test_derives_its_plan_from_the_sessions():
    session = make_plan("namespaced", web=True, processes=2, latency="aws-dynamodb")
    t = session.for_test(2, users=6, spawn_rate=3.0, run_time_s=None, latency="aws-dynamodb", capacity_share=0.5)
    assert t.test.number == 2 and (t.scenario.fleet.workers, t.scenario.fleet.spawn_rate) == (6, 3.0)
    assert t.scenario.fleet.duration_s == 60.0  # no run time in the form: the scenario's own duration
    assert (t.run_id, t.resources, t.connection, t.locust) == (session.run_id, session.resources,
                                                               session.connection, session.locust)
    assert t.fidelity().dynamodb.scale == pytest.approx(0.5 * session.fidelity().dynamodb.scale)  # its share
    assert t.fidelity(1.0) == session.fidelity() and t.fidelity().latency == "aws-dynamodb"
    cleared = session.for_test(3, users=1, spawn_rate=1.0, run_time_s=5.0, latency="")
    assert cleared.latency is None and cleared.fidelity().latency == "local"  # the form cleared it: the scenario's
    other = scenarios.load("pruning").with_overrides(backend=session.backend)
    assert session.for_test(4, 2, 2.0, 9.0, latency=None, scenario=other).scenario.name == "pruning"


def test_bad_input_is_refused_while_planning_before_anything_exists(tmp_path):
    run_dir = tmp_path / "never"
    cases = [(dict(processes=-1), "--processes must be 0 or more, got -1"),
             (dict(latency="warp"), "unknown latency profile 'warp'"),
             (dict(stand_in="dynamo"), "unknown stand-in 'dynamo'"),
             (dict(aws=True, stand_in="moto"), "--dynamodb-stand-in starts a local server"),
             (dict(backend="s3", preage=PreAge(2, 2)), "--pre-age-models pre-ages DynamoDB items")]
    for opts, message in cases:
        with pytest.raises(HarnessError, match=message):
            make_plan(run_dir=str(run_dir), **opts)
    with pytest.raises(HarnessError, match="disagree"):
        make_plan(aws=True, endpoints={"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"})
    assert not run_dir.exists()


def test_the_stand_in_fills_in_the_services_it_serves(monkeypatch):
    """Its URLs are the one thing a plan cannot know in advance; the services a variable names keep theirs."""
    from harness.aws import standin

    started = []

    class Fake:
        name, version = "dynalite", "4.0.0"
        urls = {"dynamodb": "http://127.0.0.1:1111", "s3": "http://127.0.0.1:2222"}
        services = {"dynamodb": "dynalite 4.0.0", "s3": "moto 5"}

    monkeypatch.setattr(standin, "start", lambda name, *a, **k: started.append(name) or Fake())
    monkeypatch.setattr(standin, "start_s3", lambda s3, *a, **k: started.append(f"s3:{s3}") or Fake())
    plan = make_plan(endpoints={"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"})
    server, filled = start_stand_in(plan, note=print)
    assert started == [None]  # the default (dynalite, or moto with a note when node is missing)
    assert filled.connection.dynamodb.url == "http://127.0.0.1:1111" and filled.endpoint_kind == "embedded"
    assert filled.connection.s3.url == "http://127.0.0.1:9000" and filled.connection.s3.kind == "other"
    assert filled.stand_in.started["name"] == "dynalite"
    none, same = start_stand_in(make_plan(endpoints={"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}), note=print)
    assert none is None and same.stand_in.started is None and started == [None]  # nothing to serve: none started
    _, s3 = start_stand_in(make_plan(backend="s3", endpoints={"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9"}),
                           note=print)
    assert started[-1] == "s3:None" and s3.connection.s3.url == "http://127.0.0.1:2222"  # S3's stand-in only
