"""Nothing is sent to AWS unless ``--aws``: every combination of the endpoint variables, with and without it.

A stub in botocore's HTTP layer records the URL of every request any client sends and answers none (a
connection error), so every stage runs up to the network and no further: the run's endpoint check, each
client its factory makes, the table or bucket's provisioning, a worker's clients from the test's plan, the
jobs' clients, and the commands that come back to a run (``cleanup``, ``check --live``) or to a table
(``fill``, ``seed``, ``cleanup TABLE``). The embedded stand-in is a fake with loopback URLs.
"""

from __future__ import annotations

import itertools
import json
from urllib.parse import urlparse

import botocore.httpsession
import botocore.retries.standard
import pytest
from botocore.exceptions import EndpointConnectionError

import harness.aws.clients
import harness.config.build
from harness.aws import standin
from harness.aws.endpoints import is_loopback
from harness.cli.main import main
from harness.config import endpoints as ep
from harness.config.build import start_stand_in
from harness.config.factory import Factory
from harness.config.plan import plan_option
from harness.config.preflight import check_reachable
from harness.core.errors import HarnessError
from harness.jobs import bulk
from harness.load.process import HarnessProcess
from tests.support.plans import make_plan

URLS = {"AWS_ENDPOINT_URL": "http://localhost:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://localhost:8000",
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}
COMBOS = [dict(c) for n in range(4) for c in itertools.combinations(URLS.items(), n)]  # all 8 subsets
NEW_SESSION = harness.aws.clients.new_session
IDS = ["+".join(v.replace("AWS_ENDPOINT_URL", "") or "BASE" for v in c) or "none" for c in COMBOS]


class FakeStandIn:
    name, version = "dynalite", "4.0.0"
    urls = {"dynamodb": "http://127.0.0.1:1111", "s3": "http://127.0.0.1:2222"}
    services = {"dynamodb": "dynalite 4.0.0", "s3": "moto 5"}

    def stop(self) -> None:
        pass


_SESSIONS: dict = {}


def _kept_session(credentials: str = "chain", region: str | None = None):  # noqa: ANN202 - a boto3 session
    """One session per kind for the whole module (a new one loads botocore's models again: ~0.3 s each)."""
    if (credentials, region) not in _SESSIONS:
        _SESSIONS[credentials, region] = NEW_SESSION(credentials, region)
    return _SESSIONS[credentials, region]


@pytest.fixture
def sent(monkeypatch):
    """The URL of every request sent from this process; none is answered."""
    urls: list[str] = []
    monkeypatch.setattr(harness.aws.clients, "new_session", _kept_session)
    monkeypatch.setattr(harness.config.build, "new_session", _kept_session)

    def send(self, request):  # noqa: ANN001, ANN202 - botocore's URLLib3Session.send
        urls.append(request.url)
        raise EndpointConnectionError(endpoint_url=request.url)

    monkeypatch.setattr(botocore.httpsession.URLLib3Session, "send", send)
    monkeypatch.setattr(botocore.retries.standard.ExponentialBackoff, "delay_amount", lambda *a: 0.0)  # retry now
    monkeypatch.setattr(standin, "start", lambda *a, **k: FakeStandIn())
    monkeypatch.setattr(standin, "start_s3", lambda *a, **k: FakeStandIn())
    for var in URLS:
        monkeypatch.delenv(var, raising=False)
    return urls


def _to_aws(urls: list[str]) -> list[str]:
    return [u for u in urls if (urlparse(u).hostname or "").endswith(".amazonaws.com")]


def _everything_a_run_sends(plan) -> None:  # noqa: ANN001
    """Each stage of a run that makes a client, from the plan, each up to its first request."""
    def attempt(call) -> None:  # noqa: ANN001
        try:
            call()
        except (HarnessError, EndpointConnectionError, Exception):  # noqa: BLE001 - the stub answers nothing
            pass

    factory = Factory(plan)
    attempt(lambda: check_reachable(plan.connection, plan.backend, factory.sessions))
    clients = factory.clients()
    attempt(lambda: clients.dynamodb and clients.dynamodb.list_tables(Limit=1))
    attempt(lambda: clients.s3 and clients.s3.list_buckets())
    attempt(lambda: factory.provision(clients, factory.backend(clients)))
    jobs = bulk.paced_clients(factory)  # pre-ageing and the noisy neighbour
    attempt(lambda: jobs.dynamodb and jobs.dynamodb.describe_table(TableName=plan.resources.table))
    test = plan_option(plan.for_test(1, 2, 2.0, 5.0, latency=None, capacity_share=0.5).to_json())
    worker_clients, worker_backend = HarnessProcess(None, "worker", make_clients=bulk_make_clients()).build(test)
    attempt(worker_backend.ensure)
    attempt(lambda: worker_clients.s3 and worker_clients.s3.list_buckets())


def bulk_make_clients():  # noqa: ANN201
    from harness.aws.clients import make_clients

    return make_clients


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
@pytest.mark.parametrize("aws", [False, True], ids=["no-aws", "aws"])
@pytest.mark.parametrize("variables", COMBOS, ids=IDS)
def test_a_run_sends_nothing_to_aws_unless_asked(sent, variables, aws, backend):
    if aws and variables:
        with pytest.raises(HarnessError, match="disagree"):
            make_plan(backend=backend, aws=aws, endpoints=variables)
        assert sent == []
        return
    plan = make_plan(backend=backend, aws=aws, endpoints=variables)
    _, plan = start_stand_in(plan, note=print)
    _everything_a_run_sends(plan)
    assert sent, "the stub saw no request: the test could not fail"
    if aws:
        assert _to_aws(sent) == sent  # asked for: AWS itself, and only AWS
    else:
        assert _to_aws(sent) == [] and all(is_loopback(u) for u in sent), sent
        own = "AWS_ENDPOINT_URL_" + backend.upper()
        expected = variables.get(own) or variables.get("AWS_ENDPOINT_URL") or FakeStandIn.urls[backend]
        assert plan.connection.service(backend).url == expected  # the variable named it, else the stand-in


@pytest.mark.parametrize("variables", COMBOS, ids=IDS)
def test_the_services_a_run_does_not_need_get_no_client(variables):
    """Only AWS_ENDPOINT_URL_S3 set, a DynamoDB run: DynamoDB is the embedded stand-in's, S3 the variable's.
    An unnamed service the run does not need is unused: no client, and no stand-in serves it (a DynamoDB run
    on the embedded default starts no S3 server)."""
    plan = make_plan("namespaced", endpoints=variables)
    ddb, s3 = plan.connection.dynamodb, plan.connection.s3
    named_ddb = "AWS_ENDPOINT_URL_DYNAMODB" in variables or "AWS_ENDPOINT_URL" in variables
    named_s3 = "AWS_ENDPOINT_URL_S3" in variables or "AWS_ENDPOINT_URL" in variables
    assert ddb.kind == ("other" if named_ddb else "embedded")
    assert s3.kind == ("other" if named_s3 else "unused")
    assert plan.connection.stand_in_services == ([] if named_ddb else ["dynamodb"])
    clients = Factory(plan).clients()
    assert (clients.s3 is None) == (s3.kind == "unused") and clients.dynamodb is not None


@pytest.mark.parametrize("aws", [False, True], ids=["no-aws", "aws"])
@pytest.mark.parametrize("variables", COMBOS, ids=IDS)
def test_the_jobs_send_nothing_to_aws_unless_asked(sent, monkeypatch, tmp_path, variables, aws):
    """`harness jobs fill`, `pre-age` and `cleanup TABLE` on the DynamoDB endpoint the variables name (or --aws)."""
    for var, url in variables.items():
        monkeypatch.setenv(var, url)
    flag = ["--aws"] if aws else []
    journal = ["--journal", str(tmp_path / "jobs.db")]
    codes = [main(["jobs", "fill", "t-1", "--items", "1", *journal, *flag]),
             main(["jobs", "pre-age", "namespaced", "--models", "1", "--versions", "1", "--table", "t-1", *journal,
                   *flag]),
             main(["jobs", "cleanup", "t-1", *journal, *flag])]
    assert codes == [2, 2, 2]  # nothing answers: one line each
    named = "AWS_ENDPOINT_URL_DYNAMODB" in variables or "AWS_ENDPOINT_URL" in variables
    if aws and variables:
        assert sent == []  # refused: --aws and a variable disagree
    elif aws:
        assert sent and _to_aws(sent) == sent
    elif named:
        assert sent and all(is_loopback(u) for u in sent) and _to_aws(sent) == []
    else:
        assert sent == []  # no DynamoDB endpoint named: refused (jobs never use a stand-in, nor AWS unasked)


@pytest.mark.parametrize("aws", [False, True], ids=["no-aws", "aws"])
@pytest.mark.parametrize("variables", COMBOS, ids=IDS)
@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
def test_cleanup_and_check_use_the_endpoints_the_run_recorded(sent, monkeypatch, tmp_path, variables, aws, backend):
    """A finished run's `harness jobs cleanup RUN_DIR` / `harness check RUN_DIR --live`: its plan's endpoints, whatever
    the environment says now; the embedded stand-in is gone; AWS only when the run was there and --aws says so."""
    ran_on_aws = aws and not variables
    if aws and variables:
        return  # no such run (refused when planned)
    plan = make_plan(backend=backend, aws=ran_on_aws, endpoints=variables, run_dir=str(tmp_path / "run"))
    _, plan = start_stand_in(plan, note=print)
    (tmp_path / "run").mkdir()
    plan.write()
    (tmp_path / "run" / "run.json").write_text(json.dumps({"backend": backend}))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://localhost:7777")  # now pointing elsewhere: not used
    for flag in ([], ["--aws"]):
        sent.clear()
        codes = [main(["jobs", "cleanup", str(tmp_path / "run"), "--journal", str(tmp_path / "j.db"), *flag]),
                 main(["check", str(tmp_path / "run"), "--live", *flag])]
        assert codes == [2, 2]
        own = plan.connection.service(backend)
        if own.kind == ep.EMBEDDED or (own.kind == ep.AWS) != bool(flag):
            assert sent == []  # gone with the run, or refused: --aws must match where the run was
        elif own.kind == ep.AWS:
            assert sent and _to_aws(sent) == sent
        else:
            assert sent and {urlparse(u).netloc for u in sent} == {urlparse(own.url).netloc}


def test_a_dynamodb_run_starts_no_s3_server_and_ignores_s3_stand_in():
    """--s3-stand-in names S3's server; a DynamoDB run uses no S3, so it starts none (a suite passes the flag to
    every run). An S3 run starts S3's alone; with an endpoint set for S3 the flag is still refused."""
    plan = make_plan("namespaced", backend="dynamodb", s3_stand_in="moto")
    assert plan.connection.stand_in_services == ["dynamodb"] and not plan.connection.s3.used
    s3_run = make_plan("namespaced", backend="s3", s3_stand_in="moto")
    assert s3_run.connection.stand_in_services == ["s3"] and not s3_run.connection.dynamodb.used
    with pytest.raises(HarnessError, match="--s3-stand-in starts a local server"):
        make_plan("namespaced", backend="s3", s3_stand_in="moto", endpoints={"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
