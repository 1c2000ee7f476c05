"""The command lines of docker-compose.yml and deploy/k8s, run as local processes (no engine runs here).

Each test takes the stand-in, master and worker commands (and their environment) from the file as its
engine would see them (compose interpolation; `kubectl kustomize`, then the kubelet's `$(VAR)`
expansion over the ConfigMaps and the Secrets a user creates), and changes only what a container gives
for free: service host names become 127.0.0.1, fixed ports become free ones, `0.0.0.0` becomes
127.0.0.1, `harness` is this checkout's. The S3 endpoint goes to the harness's stand-in too (versitygw
is an image; it cannot run here). Then: a run directory per run, rows from the worker process, a report,
and for the web UI the login in front of everything.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pytest

from tests.e2e.conftest import clean_env
from tests.support.deploy_files import (
    COMPOSE,
    COMPOSE_HEADLESS,
    K8S,
    KUBECTL,
    container_env,
    expand,
    find,
    interpolate,
    kustomize,
    load_compose,
    pod_spec,
)
from tests.support.web_session import assert_contiguous, free_port, wait_for

pytestmark = pytest.mark.e2e
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl (with its bundled kustomize) is not installed")

PASSWORD = "correct-horse-battery-9"
AWS_SECRET = {"AWS_ACCESS_KEY_ID": "harness-test", "AWS_SECRET_ACCESS_KEY": "harness-test-secret",
              "AWS_DEFAULT_REGION": "us-east-1"}
SECRETS = {"harness-aws": AWS_SECRET, "harness-web-login": {"username": "harness", "password": PASSWORD}}
RUN_TIME = "6s"


class Cluster:
    """The three processes of a distributed run, started from a file's command lines, on loopback."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen] = {}
        self.standin_url = ""
        self.master_port = free_port()
        self.web_port = free_port()

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        assert argv[0] == "harness", argv
        log = (self.tmp / f"{name}.log").open("w")
        full = {**clean_env(), **env}  # the scenarios ship in the package, as in the image
        proc = subprocess.Popen([sys.executable, "-m", "harness", *argv[1:]], cwd=self.tmp, env=full,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def start_standin(self, argv: list[str]) -> None:
        port = free_port()
        self.start("standin", localize(argv, {"--port": str(port)}), {})
        self.standin_url = f"http://127.0.0.1:{port}"
        wait_for("the stand-in", lambda: f"serving DynamoDB and S3 at {self.standin_url}" in self.log("standin"),
                 60)

    def endpoints(self, env: dict[str, str]) -> dict[str, str]:
        """The file's endpoint variables, each pointed at the local stand-in (the host names only exist there)."""
        out = dict(env)
        for var in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"):
            assert urlparse(env[var]).hostname not in (None, "127.0.0.1", "localhost"), env[var]
            out[var] = self.standin_url
        return out

    def start_master(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        argv = localize(argv, {"--web-port": str(self.web_port)})
        argv += ["--master-bind-host", "127.0.0.1", "--master-bind-port", str(self.master_port)]
        if "--web" in argv:
            argv += ["--web-port", str(self.web_port)]
        return self.start("master", argv, self.endpoints(env))

    def start_worker(self, argv: list[str], env: dict[str, str], master_host: str) -> subprocess.Popen:
        assert argv[argv.index("--master-host") + 1] == master_host
        argv = localize(argv, {"--master-host": "127.0.0.1", "--master-port": str(self.master_port)})
        if "--master-port" not in argv:
            argv += ["--master-port", str(self.master_port)]
        return self.start("worker", argv, self.endpoints(env))

    def stop_all(self) -> None:
        """After a failure: every process a test started, and theirs (Locust runs in a session of its own)."""
        import psutil

        for proc in self.procs.values():
            if proc.poll() is not None:
                continue
            try:
                family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            except psutil.NoSuchProcess:
                family = []
            for p in family:
                try:
                    p.kill()
                except psutil.NoSuchProcess:
                    pass
            proc.wait(10)

    def the_run(self) -> Path:
        runs = [d for d in (self.tmp / "runs").iterdir() if d.is_dir()]
        assert len(runs) == 1, runs  # one run id of its own, under runs/ of the working directory
        return runs[0]


def localize(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace the value after each flag in ``values``; bind to loopback instead of every interface."""
    out = list(argv)
    for flag, value in values.items():
        if flag in out:
            out[out.index(flag) + 1] = value
    return ["127.0.0.1" if a == "0.0.0.0" else a for a in out]


def check_headless_run(cluster: Cluster) -> None:
    master, worker = cluster.procs["master"], cluster.procs["worker"]
    master.wait(240)
    assert master.returncode == 0, cluster.log("master")[-3000:]
    run = cluster.the_run()
    info = json.loads((run / "run.json").read_text())
    assert info["stop_reason"] == f"run time reached ({RUN_TIME[:-1]} s)" and info["incomplete"] == []
    assert info["endpoint_kind"] == "other" and info["fleet"]["processes"] == 1
    rows = pd.read_parquet(run / "iterations")
    assert len(rows) >= 2 and rows["ok"].all() and set(rows["worker"]) == {"worker-0"}
    assert_contiguous(rows)
    assert info["processes"]["worker-0"]["rows_sent"] == len(rows)
    assert (run / "report" / "index.html").is_file() and (run / "report" / "summary.json").is_file()
    assert f"harness: report {run.relative_to(cluster.tmp)}/report/index.html" in cluster.log("master")
    worker.wait(60)  # a worker ends with its master
    assert worker.returncode == 0, cluster.log("worker")[-2000:]


class Browser:
    """An HTTP client with cookies that shows redirects instead of following them."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
                return None

        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)

    def request(self, path: str, form: dict | None = None) -> tuple[int, str, bytes]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with self.opener.open(urllib.request.Request(self.base + path, data=data), timeout=60) as r:
                return r.status, r.headers.get("Location", ""), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Location", ""), e.read()

    def json(self, path: str, form: dict | None = None) -> dict:
        status, location, body = self.request(path, form)
        assert status == 200, (path, status, location)
        return json.loads(body)


def check_web_session(cluster: Cluster) -> None:
    master, worker = cluster.procs["master"], cluster.procs["worker"]
    outsider = Browser(f"http://127.0.0.1:{cluster.web_port}")
    wait_for("the login page", lambda: master.poll() is None and outsider.request("/login")[0] == 200, 90)
    # nothing without the login: pages, the API, the harness's own routes, starting a test
    for path in ("/", "/stats/requests", "/harness/status"):
        status, location, _ = outsider.request(path)
        assert status == 302 and "/login" in location, (path, status, location)
    status, location, _ = outsider.request("/swarm", {"user_count": 2, "spawn_rate": 2, "host": ""})
    assert status == 302 and "/login" in location
    status, location, _ = outsider.request("/harness/login", {"username": "harness", "password": "wrong-password"})
    assert status == 302 and location.endswith("/login")
    assert outsider.request("/")[0] == 302
    session = cluster.tmp / "runs"
    assert not list(session.glob("*/tests/*")), "a test started without the login"

    user = Browser(outsider.base)
    status, location, _ = user.request("/harness/login", {"username": "harness", "password": PASSWORD})
    assert status == 302 and not location.endswith("/login")
    assert user.request("/")[0] == 200
    wait_for("the worker", lambda: user.json("/stats/requests").get("worker_count") == 1, 90)
    started = user.json("/swarm", {"user_count": 2, "spawn_rate": 2, "host": "", "run_time": RUN_TIME})
    assert started["success"], started

    def reported() -> dict | None:
        tests = user.json("/harness/status")["tests"]
        return tests[0] if tests and tests[0].get("report") else None

    entry = wait_for("test 001's report", reported, 150)
    assert entry["stop_reason"] == f"run time reached ({RUN_TIME[:-1]} s)" and entry["incomplete"] == []
    run = cluster.the_run()
    test_dir = run / entry["dir"]
    rows = pd.read_parquet(test_dir / "iterations")
    assert len(rows) == entry["rows"] >= 2 and rows["ok"].all() and set(rows["worker"]) == {"worker-0"}
    assert (test_dir / "report" / "index.html").is_file()
    assert user.request("/harness/tests/1/report/index.html")[0] == 200
    assert outsider.request("/harness/tests/1/report/index.html")[0] == 302  # reports are behind the login too
    os.kill(master.pid, signal.SIGTERM)  # `docker compose down` / a pod's deletion
    assert master.wait(90) == 128 + signal.SIGTERM
    assert json.loads((run / "run.json").read_text())["status"] == "closed"
    worker.wait(60)
    assert worker.returncode == 0, cluster.log("worker")[-2000:]


# ---- compose ------------------------------------------------------------------------------------


def compose_services(*files: Path, **variables: str) -> dict:
    env = {"HARNESS_WEB_PASSWORD": PASSWORD, **variables}
    return interpolate(load_compose(*files), env)["services"]


def run_compose(tmp_path: Path, services: dict, check) -> None:
    cluster = Cluster(tmp_path)
    try:
        cluster.start_standin(services["standin"]["command"])
        cluster.start_master(services["master"]["command"], services["master"]["environment"])
        cluster.start_worker(services["worker"]["command"], services["worker"]["environment"], "master")
        check(cluster)
    finally:
        cluster.stop_all()
    stop_standin(cluster)


def stop_standin(cluster: Cluster) -> None:
    proc = cluster.procs["standin"]
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 0


def test_compose_web_session_behind_the_login(tmp_path):
    services = compose_services(COMPOSE)
    assert services["master"]["environment"]["HARNESS_WEB_PASSWORD"] == PASSWORD
    run_compose(tmp_path, services, check_web_session)


def test_compose_headless_run_ends_with_its_report(tmp_path):
    services = compose_services(COMPOSE, COMPOSE_HEADLESS, WORKERS="1", DURATION=RUN_TIME)
    run_compose(tmp_path, services, check_headless_run)


# ---- kubernetes ---------------------------------------------------------------------------------


def run_kubernetes(tmp_path: Path, overlay: Path, check, **run: str) -> None:
    docs = kustomize(overlay)
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("harness-run"))
    config["data"].update(run)  # what a user sets in the overlay's harness-run literals

    def command(workload: dict) -> tuple[list[str], dict[str, str]]:
        container = pod_spec(workload)["containers"][0]
        env = container_env(docs, container, SECRETS)
        return [expand(a, env) for a in container["command"] + container["args"]], env

    master = next(d for d in docs if d["kind"] in ("Deployment", "Job")
                  and d["metadata"]["labels"]["app.kubernetes.io/component"] == "master")
    cluster = Cluster(tmp_path)
    try:
        standin_argv, _ = command(find(docs, "Deployment", "harness-standin"))
        cluster.start_standin(standin_argv)
        argv, env = command(master)
        assert not [a for a in argv if "$(" in a], argv  # every $(VAR) had a value
        cluster.start_master(argv, env)
        argv, env = command(find(docs, "Deployment", "harness-worker"))
        cluster.start_worker(argv, env, "harness-master")
        check(cluster)
    finally:
        cluster.stop_all()
    stop_standin(cluster)


@needs_kubectl
def test_kubernetes_web_session_behind_the_login(tmp_path):
    run_kubernetes(tmp_path, K8S / "overlays" / "standins", check_web_session)


@needs_kubectl
def test_kubernetes_headless_job_ends_with_its_report(tmp_path):
    run_kubernetes(tmp_path, K8S / "overlays" / "standins-headless", check_headless_run, WORKERS="1",
                   DURATION=RUN_TIME)


def test_a_master_whose_workers_never_come_says_so_in_one_line(tmp_path):
    from harness.aws.moto_server import EmbeddedMoto

    with EmbeddedMoto() as moto:
        env = clean_env(AWS_ENDPOINT_URL=moto.url, **AWS_SECRET)
        p = subprocess.run([sys.executable, "-m", "harness", "run", "namespaced", "--master", "--expect-workers",
                            "2", "--expect-workers-max-wait", "3s", "--master-bind-host", "127.0.0.1",
                            "--master-bind-port", str(free_port()), "--run-dir", str(tmp_path / "r")],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines == [f"harness: fewer than 2 workers connected within 3 s: start them with `harness worker "
                     f"--master-host HOST --master-port {p.args[p.args.index('--master-bind-port') + 1]}`; see "
                     f"{tmp_path / 'r' / 'locust.log'}"], p.stderr
