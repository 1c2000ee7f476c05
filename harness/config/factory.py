"""The one place things are built from a run plan: clients, the backend, the fidelity layer, the table/bucket.

``harness run``, its Locust processes, ``harness check --live``, ``harness
cleanup``, the bulk jobs and the tests all build through a ``Factory``, so a
change to how a backend is made (its constructor, its options) is a change
here only. Provisioning keeps to the run's ownership rules: the harness
creates its table or bucket tagged ``harness:owner``, refuses to write into
one without that tag unless the plan allows it, and deletes only what it
created.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any

from botocore.exceptions import ClientError

from harness.aws.clients import Clients, Sessions, make_clients
from harness.aws.fidelity.layer import FidelityLayer
from harness.aws.instrument import register_table
from harness.config.endpoints import SERVICES
from harness.config.plan import RunPlan
from harness.config.scenario import Scenario
from harness.core.errors import HarnessError
from harness.datastore.backends.base import Backend
from harness.datastore.backends.dynamodb import GSI_KEYS, TABLE_KEYS, DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.sync import SyncConfig
from harness.datastore.variant import Retries

OWNER_TAG = "harness:owner"
RUN_TAG = "harness:run"


def sync_config(sc: Scenario, namespace: str | None) -> SyncConfig:
    """How one worker of the scenario syncs its datastore (the model driver's, and the reference command's).
    Fenced or swamp's is not here: it is the backend's variant (``Factory.backend``)."""
    ds = sc.datastore
    return SyncConfig(namespace=namespace, lock_scope=ds.lock_scope, index_commit=ds.index_commit, lock=sc.lock,
                      sync=ds.sync, global_poll_s=ds.global_poll_s, global_lock=ds.global_lock,
                      upload_concurrency=ds.upload_concurrency,
                      download_concurrency=ds.download_concurrency, dirty_path_cap=ds.dirty_path_cap,
                      catalog_export=sc.workload.catalog_export, data_name=sc.workload.data_name,
                      push_scope=ds.push_scope, export_at=ds.export_at,
                      record_views=sc.checks.safety)


def ownership_tags(run_id: str) -> dict[str, str]:
    return {OWNER_TAG: "harness", RUN_TAG: run_id}


class Factory:
    """Builds what a plan describes. ``sessions`` are the process's boto3 sessions (made once, kept);
    ``make_clients`` is replaceable (a benchmark answers DynamoDB in-process); ``executor`` runs the
    backends' parallel calls (a greenlet pool inside Locust)."""

    def __init__(self, plan: RunPlan, *, sessions: Sessions | None = None,
                 make_clients: Callable[..., Clients] = make_clients, executor: Executor | None = None) -> None:
        self.plan = plan
        self.sessions = sessions or Sessions(plan.connection.region)
        self._make_clients = make_clients
        self.executor = executor

    # ---- clients ------------------------------------------------------------------

    def services(self) -> list[str]:
        """The services the plan uses: an unused one gets no client, so nothing can be sent for it."""
        return [s for s in SERVICES if self.plan.connection.service(s).used]

    def clients(self, *, pool: int = 64, total_attempts: int = 4, services: Iterable[str] | None = None,
                **kw: Any) -> Clients:
        c = self.plan.connection
        wanted = list(services) if services is not None else self.services()
        sessions = {s: self.sessions.get(c.service(s).credentials) for s in wanted}
        # swamp's S3 client: maxAttempts 1 (its sync layer retries)
        if self.plan.scenario.datastore.retries is Retries.SWAMP:
            kw.setdefault("attempts", {"s3": 1})
        return self._make_clients(self.plan.endpoints, pool=pool, region=c.region, total_attempts=total_attempts,
                                  sessions=sessions, services=wanted, **kw)

    # ---- the fidelity layer --------------------------------------------------------------

    def fidelity(self, clients: Clients, capacity_share: float | None = None) -> FidelityLayer | None:
        """The plan's fidelity layer, installed on ``clients`` (None when the plan turns it off)."""
        cfg = self.plan.fidelity(capacity_share)
        if not cfg.enabled:
            return None
        layer = FidelityLayer(cfg)
        layer.install(clients.dynamodb)
        layer.install(clients.s3)
        return layer

    # ---- the backend ---------------------------------------------------------------------

    def backend(self, clients: Clients, *, create: bool = True) -> Backend:
        """The datastore backend the scenario asks for, on the plan's table or bucket, built with the scenario's
        variant: each backend chooses its strategies from it, once (``backends/*/choose.py``)."""
        sc, r = self.plan.scenario, self.plan.resources
        tags = ownership_tags(self.plan.run_id)
        threads = max(8, sc.datastore.upload_concurrency, sc.datastore.download_concurrency)
        if sc.backend == "dynamodb":
            register_table(r.table, *TABLE_KEYS, GSI_KEYS)  # so write units count the GSI from the first call
            return DynamoBackend(clients.dynamodb, r.table, sc.datastore.gsi, tags=tags, create=create,
                                 executor=self.executor, pull_concurrency=threads, variant=sc.datastore.variant)
        ds = sc.datastore
        return S3Backend(clients.s3, r.bucket, ds.s3_index, prefix=r.prefix, tags=tags, create=create,
                         executor=self.executor, read_concurrency=threads, variant=ds.variant)

    # ---- provisioning and teardown ------------------------------------------------------------

    def provision(self, clients: Clients, backend: Backend, note: Callable[[str], Any] | None = None) -> None:
        """Create the table/bucket, or refuse to write into one the harness did not create.

        What the endpoint lacks but the harness can do without (TTL, tagging) is
        one ``note`` line each; what it cannot do without is a HarnessError.
        """
        tags = owner_tags(clients, backend)
        if tags is not None and tags.get(OWNER_TAG) != "harness" and not self.plan.resources.allow_foreign:
            raise HarnessError(
                f"{backend.name} {resource_name(backend)!r} exists and was not created by the harness (no {OWNER_TAG} "
                "tag); choose another name or pass --allow-foreign-resources"
            )
        try:
            backend.ensure()
        except ClientError as e:
            err = e.response.get("Error", {})
            op = getattr(e, "operation_name", "") or "a request"
            raise HarnessError(f"{backend.name} at {self._where(backend)} cannot do {op}, which the harness needs: "
                               f"{err.get('Code', '')} {err.get('Message', '')}".rstrip()) from None
        for line in getattr(backend, "notes", []):
            (note or _note)(f"harness: {backend.name} at {self._where(backend)}: {line}")
        getattr(backend, "notes", []).clear()

    def teardown(self, clients: Clients, backend: Backend) -> bool:
        """Remove the table/bucket if the harness created it (never one without its tag)."""
        tags = owner_tags(clients, backend)
        if not tags or tags.get(OWNER_TAG) != "harness":
            return False
        if isinstance(backend, DynamoBackend):
            clients.dynamodb.delete_table(TableName=backend.table)
            return True
        assert isinstance(backend, S3Backend)
        empty_bucket(clients.s3, backend.bucket)
        clients.s3.delete_bucket(Bucket=backend.bucket)
        return True

    def _where(self, backend: Backend) -> str:
        return self.plan.connection.service(backend.name).where


def resource_name(backend: Backend) -> str:
    return getattr(backend, "table", None) or getattr(backend, "bucket", "")


def owner_tags(clients: Clients, backend: Backend) -> dict[str, str] | None:
    """Tags of an existing table/bucket, or None when it does not exist yet.

    Where the endpoint cannot tag (no TagResource / ListTagsOfResource), the
    tags the harness keeps in a marker item stand in for them.
    """
    if isinstance(backend, DynamoBackend):
        t = backend.describe()
        if t is None:
            return None
        try:
            tags = clients.dynamodb.list_tags_of_resource(ResourceArn=t["TableArn"]).get("Tags", [])
        except ClientError:
            tags = []
        found = {x["Key"]: x["Value"] for x in tags}
        if not found:
            try:
                found = backend.owner_marker()
            except ClientError:
                found = {}
        return found
    assert isinstance(backend, S3Backend)
    try:
        clients.s3.head_bucket(Bucket=backend.bucket)
    except ClientError:
        return None
    try:
        tags = clients.s3.get_bucket_tagging(Bucket=backend.bucket).get("TagSet", [])
    except ClientError:
        tags = []
    return {x["Key"]: x["Value"] for x in tags}


def empty_bucket(s3: Any, bucket: str, prefix: str = "") -> int:
    """Delete every object under ``prefix`` (1,000 a request); the number deleted."""
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            n += len(keys)
    return n


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
