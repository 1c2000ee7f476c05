"""Shared fixtures: in-process moto for unit tests (never real AWS)."""

from __future__ import annotations

import os
from contextlib import ExitStack

import boto3
import pytest
from moto import mock_aws

from harness.aws.instrument import instrument
from harness.core.clock import FakeClock
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.catalog import Catalog
from harness.datastore.lock import LockConfig
from harness.datastore.sync import Datastore, SyncConfig
from tests.support import moto_atomic, s3_endpoint, standin_endpoint

for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
    os.environ.pop(var, None)
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")

moto_atomic.serialize()  # the mock answers one request at a time, as the services apply each atomically

FAST_LOCK = LockConfig(ttl_s=3.0, wait_s=2.0, retry_s=0.05, retry_cap_s=0.1)


# One boto3 session for the test process: mock_aws resets boto3's default session, so clients made from it
# parsed botocore's service models again in every test (~0.3 s a test; ~0.02 s from a session kept here).
# moto intercepts the clients of every session made after `moto` is imported (keep this below that import)
# while a mock is active, and its state is still reset per test.
SESSION = boto3.Session(region_name=os.environ["AWS_DEFAULT_REGION"])


@pytest.fixture
def aws():
    """(DynamoDB, S3): in-process moto, or DynamoDB at $HARNESS_TEST_DYNAMODB_ENDPOINT (see standin_endpoint)
    and S3 at $HARNESS_TEST_S3_ENDPOINT (see s3_endpoint)."""
    with mock_aws(), ExitStack() as stack:
        if standin_endpoint.endpoint():
            ddb = standin_endpoint.client()
            stack.enter_context(standin_endpoint.scratch_tables(ddb))
        else:
            ddb = SESSION.client("dynamodb")
        if s3_endpoint.endpoint():
            s3 = s3_endpoint.client(SESSION)
            stack.enter_context(s3_endpoint.scratch_buckets(s3))
        else:
            s3 = SESSION.client("s3")
        yield instrument(ddb), instrument(s3)


def second_clients():
    """Another pair of clients to the ``aws`` fixture's endpoints (another process, in effect)."""
    ddb = standin_endpoint.client() if standin_endpoint.endpoint() else SESSION.client("dynamodb")
    s3 = s3_endpoint.client(SESSION) if s3_endpoint.endpoint() else SESSION.client("s3")
    return instrument(ddb), instrument(s3)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(feature): needs a DynamoDB feature some endpoints lack "
                            f"({', '.join(standin_endpoint.FEATURES)}); skipped there")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``heavy`` first, the rest in their order. xdist (``--dist loadgroup``) hands out its groups
    (largest first), then single tests in collection order; a long single test late in that order ran alone at
    the end of its tier while the other process idled. Sent first, the long ones run beside the short ones."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        why = standin_endpoint.lacks().get(mark.args[0])
        if why:
            pytest.skip(f"needs {mark.args[0]}: {why}")


@pytest.fixture(scope="session")
def swamp_today_run(tmp_path_factory):
    """`two-phase-namespaced` as it ships (swamp's own), through real Locust on the embedded stand-in: one short
    run (~10 s) that tests/e2e/test_swamp_today_e2e.py and tests/bench/test_swamp_today_bench.py both read (both
    in the xdist group ``swamp-today``, so one process makes it once for the two)."""
    from tests.e2e.conftest import harness

    d = tmp_path_factory.mktemp("swamp-today") / "run"
    out = harness("run", "two-phase-namespaced", "--users", "2", "--duration", "5s", "--run-dir", str(d),
                  "--no-report")
    assert out.returncode == 0, out.stderr[-2000:]
    return d


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_backend(kind: str, aws, clock=None, table: str = "harness-test", bucket: str = "harness-test",
                 variant=None):
    """A backend of ``kind`` (a GSI layout or an S3 index), built with ``variant`` (fenced by default)."""
    ddb, s3 = aws
    if kind in ("legacy", "per-model"):
        be = DynamoBackend(ddb, table, kind, clock=clock, variant=variant)
    else:
        be = S3Backend(s3, bucket, kind, clock=clock, variant=variant)
    be.ensure()
    return be


def make_store(backend, namespace=None, *, lock_scope="namespace", index_commit="delta", clock=None,
               lock=FAST_LOCK, heartbeat=False, holder="w"):
    cfg = SyncConfig(namespace=namespace, lock_scope=lock_scope, index_commit=index_commit, lock=lock,
                     heartbeat=heartbeat)
    return Datastore(backend, Catalog(), cfg, clock=clock, holder=holder)


def fenced_grant(backend, key, clock, cfg=FAST_LOCK, namespace="w1", holder="w"):
    """Take a lock the way a fenced datastore does: the backend learns of the grant before it counts."""
    from harness.core.work import Work
    from harness.datastore.lock import Lock

    return Lock(backend.lock_store, key, clock, cfg, holder).acquire(
        Work(), lambda g, w: backend.on_grant(namespace, g, None, w))


def step(steps, name):
    """The (last) step of that name."""
    found = [s for s in steps if s.name == name]
    assert found, f"no {name} step in {[s.name for s in steps]}"
    return found[-1]


class SleepLog(FakeClock):
    """A fake clock that keeps every sleep it is asked for (and moves time by it): tests assert on the sleeps."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)


# ---- interleavings: freeze an actor between two requests, lose an answer, hide an item from a GSI ----------
def sync_store(backend, namespace="w1", *, clock=None, holder="w", sync="one-lock", index_commit="delta",
               lock=FAST_LOCK, events=None):
    """A datastore whose history goes to ``events`` (pull views included) and whose global poll is short (fenced
    or not: the backend's variant)."""
    import dataclasses

    kwargs = dict(namespace=namespace, lock_scope="namespace", index_commit=index_commit, lock=lock,
                  heartbeat=False, sync=sync, global_poll_s=0.05, record_views=True)
    known = {f.name for f in dataclasses.fields(SyncConfig)}
    store = Datastore(backend, Catalog(), SyncConfig(**{k: v for k, v in kwargs.items() if k in known}),
                      clock=clock, holder=holder)
    if events is not None:
        store.record = events.append
    return store


def once_before(client, event: str, when, action):
    """Run ``action()`` once, as the first request matching ``when(params)`` is built (``event`` is botocore's
    ``before-parameter-build.<service>.<Operation>``): the caller is frozen between its previous request and this
    one while ``action`` runs. Returns the list the action's result is appended to (empty: it never ran)."""
    done: list = []

    def hook(params, **_):
        if not done and when(params):
            done.append(None)
            done[0] = action()

    client.meta.events.register(event, hook)
    return done


def lose_answer(client, other, service: str, op: str, when, meanwhile=None, then: str | None = None):
    """The first ``op`` matching ``when(params)`` lands (sent through ``other``, an unhooked client of the same
    endpoint) but its answer is lost: botocore sees a read timeout and sends it again, as its retries do.
    ``meanwhile()`` runs after it landed and before the timeout is seen (the sender frozen, others going on).
    ``then``: what botocore's resend meets: None, it goes through; an error code (``SlowDown``,
    ``ProvisionedThroughputExceededException``, ``InternalError``), the call fails with it as botocore hands it
    over past its retries; ``reset``, the connection is reset. ``state["resent"]`` counts the resends failed."""
    from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

    state = {"params": None, "lost": 0, "resent": 0}
    method = {"PutObject": "put_object", "UpdateItem": "update_item"}[op]

    def build(params, **_):
        if state["lost"] == 0 and state["params"] is None and when(params):
            state["params"] = dict(params)

    def send(request, **_):
        if state["params"] is not None and state["lost"] == 0:
            state["lost"] = 1
            getattr(other, method)(**state["params"])  # it lands ...
            if meanwhile is not None:
                meanwhile()
            raise ReadTimeoutError(endpoint_url=request.url)  # ... and its answer never arrives
        if then is not None and state["lost"] == 1 and not state["resent"]:
            state["resent"] = 1  # the resend fails otherwise (botocore retries neither of these itself here)
            if then == "reset":
                raise ConnectionClosedError(endpoint_url=request.url)
            raise ClientError({"Error": {"Code": then, "Message": "injected after its retries"}}, op)

    client.meta.events.register(f"before-parameter-build.{service}.{op}", build)
    client.meta.events.register_first(f"before-send.{service}.{op}", send)
    return state


def _hide_once(client, when, choose):
    """The first GSI Query matching ``when(params)`` for whose answer ``choose(items)`` names some items answers
    without them, once. Returns the hidden items."""
    hidden: list = []

    def hook(parsed, model, **kw):
        params = kw.get("context", {}).get("harness_query_params")
        items = parsed.get("Items") or []
        gone = choose(items) if not hidden and params is not None and when(params) and items else []
        if gone:
            hidden.extend(gone)
            parsed["Items"] = [i for i in items if not any(i is g for g in gone)]
            parsed["Count"] = len(parsed["Items"])

    def keep(params, context=None, **_):
        if context is not None and "IndexName" in params:
            context["harness_query_params"] = dict(params)

    client.meta.events.register("before-parameter-build.dynamodb.Query", keep)
    client.meta.events.register("after-call.dynamodb.Query", hook)
    return hidden


def hide_newest_from_gsi(client, when):
    """The first GSI Query matching ``when(params)`` answers without its newest item (an index behind its table,
    as DynamoDB's GSIs are read eventually consistently on AWS). Returns the hidden items."""
    return _hide_once(client, when, lambda items: [max(items, key=lambda i: i.get("gsi1sk", {}).get("S", ""))])


def fail_once(client, op: str, when, code: str = "ProvisionedThroughputExceededException"):
    """The first ``op`` request matching ``when(params)`` fails with ``code`` as botocore would hand it over after
    its own retries (a throttle past them, by default): nothing is sent. Returns the list of failed calls."""
    from botocore.exceptions import ClientError

    failed: list = []
    service = client.meta.service_model.service_name

    def hook(params, **_):
        if not failed and when(params):
            failed.append(dict(params))
            raise ClientError({"Error": {"Code": code, "Message": "injected"}}, op)

    client.meta.events.register(f"before-parameter-build.{service}.{op}", hook)
    return failed


def hide_from_gsi(client, when, hidden_item):
    """The first GSI Query matching ``when(params)`` whose answer holds an item matching ``hidden_item(item)``
    answers without those items, once (a GSI showing newer items of other keys first: DynamoDB's documentation
    does not rule out an answer out of write order). Returns the hidden items."""
    return _hide_once(client, when, lambda items: [i for i in items if hidden_item(i)])


class Actor:
    """Another worker's steps run in a thread of their own, stopped at its datastore's pause point until released:
    the main thread (the frozen actor's hook) lets it get that far, does its own thing, then lets it finish."""

    def __init__(self, store, run) -> None:
        import threading

        self.store, self.run = store, run
        self.reached, self.go = threading.Event(), threading.Event()
        self.error: BaseException | None = None
        store.pauses = self._pause
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _pause(self, point: str) -> float:
        self.reached.set()
        assert self.go.wait(30), "the actor was never released"
        return 0.0

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread by finish()
            self.error = e
        finally:
            self.reached.set()

    def start_until_paused(self) -> None:
        self.thread.start()
        assert self.reached.wait(30), "the actor never reached its pause"
        if self.error is not None:
            raise self.error

    def finish(self) -> None:
        self.go.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the actor did not finish"
        if self.error is not None:
            raise self.error
