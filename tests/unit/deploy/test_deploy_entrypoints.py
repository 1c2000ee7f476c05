"""`harness run --master`, `harness worker`, `harness standin` and the web login: what they refuse, and why."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.config.build import RunOptions, check_distribution, plan_run
from harness.config.plan import WebPlan
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.load.web import login
from harness.supervisor import run as launcher
from harness.supervisor.distributed import LOCUSTFILE, worker_command
from tests.support.plans import make_plan


def test_credentials_need_a_password_of_twelve_characters(monkeypatch):
    monkeypatch.delenv("HARNESS_WEB_PASSWORD", raising=False)
    with pytest.raises(HarnessError, match="set HARNESS_WEB_PASSWORD"):
        login.credentials(WebPlan())
    monkeypatch.setenv("HARNESS_WEB_PASSWORD", "x" * 11)
    with pytest.raises(HarnessError, match="is 11 characters long: use at least 12"):
        login.credentials(WebPlan())
    monkeypatch.setenv("HARNESS_WEB_PASSWORD", "p" * 12)
    assert login.credentials(WebPlan()) == ("harness", "p" * 12)
    # the user name is read at the command line's edge into the plan; the password only where the login is made
    plan = plan_run(RunOptions(scenario="namespaced", web=True, web_login=True),
                    UserEnvironment.read({"HARNESS_WEB_USERNAME": "ops"}), password="p" * 12)
    assert login.credentials(plan.locust.web) == ("ops", "p" * 12) and "p" * 12 not in plan.to_json()


def test_matches_needs_both_fields():
    assert login.matches("ops", "secret-secret", "ops", "secret-secret")
    assert not login.matches("ops", "secret-secreT", "ops", "secret-secret")
    assert not login.matches("opz", "secret-secret", "ops", "secret-secret")
    assert not login.matches("", "", "ops", "secret-secret")


def opts(**kw) -> RunOptions:
    return RunOptions(scenario="namespaced", **kw)


def test_a_web_ui_beyond_loopback_needs_the_login():
    check_distribution(opts(web=True))  # 127.0.0.1: fine without
    check_distribution(opts(web=True, web_host="localhost"))
    check_distribution(opts(web=True, web_host="::1"))
    for host in ("0.0.0.0", "*", "10.1.2.3", "::"):
        with pytest.raises(HarnessError, match=re.escape(f"the web UI on {host} would be open to anyone")):
            check_distribution(opts(web=True, web_host=host))
    with pytest.raises(HarnessError, match="set HARNESS_WEB_PASSWORD"):
        check_distribution(opts(web=True, web_host="0.0.0.0", web_login=True))
    check_distribution(opts(web=True, web_host="0.0.0.0", web_login=True), "a-long-enough-one")


def test_master_needs_an_endpoint_every_worker_reaches():
    with pytest.raises(HarnessError, match="cannot reach an embedded stand-in on this machine's loopback"):
        make_plan(master=True)
    with pytest.raises(HarnessError, match="set AWS_ENDPOINT_URL_DYNAMODB .or AWS_ENDPOINT_URL. to a stand-in"):
        make_plan(master=True, endpoints={"AWS_ENDPOINT_URL_S3": "http://s3:7070"})  # S3 named, DynamoDB not
    assert make_plan(master=True, aws=True).connection.dynamodb.kind == "aws"
    named = make_plan(master=True, endpoints={"AWS_ENDPOINT_URL_DYNAMODB": "http://standin:8000"})
    assert named.connection.dynamodb.url == "http://standin:8000" and named.connection.s3.kind == "unused"
    with pytest.raises(HarnessError, match="--master runs no workers of its own"):
        check_distribution(opts(master=True, processes=2))
    with pytest.raises(HarnessError, match="--expect-workers must be at least 1, got 0"):
        check_distribution(opts(master=True, expect_workers=0))


def test_the_master_command_line():
    plan = make_plan(master=True, expect_workers=3, expect_workers_max_wait_s=90, master_bind_port=6000, aws=True)
    cmd = launcher.locust_command(plan, launcher.Path("/r/plan.json"))
    joined = " ".join(cmd)
    assert "--harness-plan /r/plan.json" in joined  # the harness's settings: one option
    assert "--master --master-bind-host * --master-bind-port 6000" in joined
    assert "--expect-workers 3 --expect-workers-max-wait 90" in joined and "--headless" in cmd
    assert "--processes" not in cmd
    web = launcher.locust_command(make_plan(master=True, web=True, web_host="0.0.0.0", web_login=True, aws=True,
                                            password="p" * 12),
                                  launcher.Path("/r/plan.json"))
    assert "--web-host 0.0.0.0 --web-port 8089 --web-login" in " ".join(web)
    assert "--expect-workers" not in web and "--headless" not in web  # tests start from the UI


def test_worker_command_and_its_bad_input():
    cmd = worker_command("harness-master", 5557)
    assert cmd[1:] == ["-m", "locust", "-f", str(LOCUSTFILE), "--worker", "--master-host", "harness-master",
                       "--master-port", "5557"]
    assert worker_command("m", 5557, 4)[-2:] == ["--processes", "4"]
    for args, msg in ((("", 5557), "--master-host is empty"), (("m", 0), "--master-port must be 1-65535"),
                      (("m", 5557, 0), "--processes must be at least 1")):
        with pytest.raises(HarnessError, match=msg):
            worker_command(*args)


def one_line(args: list[str], env_extra: dict[str, str] | None = None) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT", "HARNESS_WEB"))}
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    assert "--master: workers elsewhere cannot reach" in one_line(
        ["run", "namespaced", "--master", "--run-dir", str(tmp_path / "a")])
    assert "would be open to anyone" in one_line(
        ["run", "namespaced", "--web", "--web-host", "0.0.0.0", "--run-dir", str(tmp_path / "b")])
    assert "is 5 characters long" in one_line(
        ["run", "namespaced", "--web", "--web-login", "--run-dir", str(tmp_path / "c")],
        {"HARNESS_WEB_PASSWORD": "short"})
    assert "--master-port must be 1-65535, got 70000" in one_line(["worker", "--master-port", "70000"])
    assert not (tmp_path / "a").exists()  # refused before anything was created
