"""One schedule's world: in-process moto, a FakeClock, and two actors on clients of their own.

Every schedule starts from a fresh table or bucket (a name of its own inside
one in-process moto), so schedules never see each other's state. The backends
run their concurrent calls inline (``Inline``): a request's position in an
actor's sequence is then the same on every replay, which is what makes
"boundary k" mean one place.
"""

from __future__ import annotations

import itertools
import os
import random
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import Any

import boto3
from botocore.config import Config

from harness.aws.instrument import instrument
from harness.core.clock import FakeClock
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.catalog import Catalog
from harness.datastore.lock import LockConfig
from harness.datastore.sync import Datastore, SyncConfig
from harness.datastore.variant import Variant

LOCK = LockConfig(ttl_s=3.0, wait_s=10.0, retry_s=0.05, retry_cap_s=0.2)
LAYOUTS = {"dynamodb": ("per-model", "legacy"), "s3": ("sharded", "monolith")}
PROFILES = ("one-lock", "two-phase")
_names = itertools.count(1)


class Inline(Executor):
    """Runs every submitted call at once, in the caller's thread: a deterministic order of requests."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future, as a pool would
            f.set_exception(e)
        return f


UPLOADS = ("profile", "on", "off", "random")  # where content is written: as the profile says, or chosen
SHARDS = ("model", "swamp", "random")  # the S3 shard form (``s3_shards``): one a model, or swamp's keys
RANDOM = "random"


@dataclass(frozen=True)
class Target:
    """What one exploration explores: a backend, a sync profile, a layout, fencing on or off; and the
    configurations a scenario chooses: ``uploads_at_commit`` (``profile``: as the profile says; ``on``, ``off``)
    and S3's shard form (``model``, ``swamp``), or ``random``: drawn for each schedule, said in its steps."""

    backend: str
    sync: str
    layout: str
    fencing: bool
    uploads: str = "profile"
    shards: str = "model"

    @property
    def name(self) -> str:
        extra = "" if self.uploads == "profile" else f"/uploads-at-commit-{self.uploads}"
        extra += f"/shards-{self.shards}" if self.backend == "s3" and self.shards != "model" else ""
        return f"{self.backend}/{self.sync}/{self.layout}/fencing-{'on' if self.fencing else 'off'}{extra}"

    @property
    def draws(self) -> dict[str, tuple[str, ...]]:
        """The configurations each schedule draws (``random``), with what each may be."""
        out: dict[str, tuple[str, ...]] = {}
        if self.uploads == RANDOM:
            out["uploads"] = ("profile", "on", "off")
        if self.shards == RANDOM and self.backend == "s3":
            out["shards"] = ("model", "swamp")
        return out

    def resolved(self, config: dict[str, str]) -> Target:
        """This target with a schedule's drawn configuration."""
        return replace(self, **{k: v for k, v in config.items() if k in ("uploads", "shards")})

    def sync_config(self, **kwargs: Any) -> SyncConfig:
        """A schedule's actors' SyncConfig, with this target's ``uploads_at_commit``."""
        uploads = {"on": True, "off": False}.get(self.uploads)
        return SyncConfig(uploads_at_commit=uploads, **kwargs)

    def backend_of(self, client: Any, name: str, clock: Any) -> Any:
        """A backend of this target on ``client`` (S3: in its shard form), its calls run inline."""
        if self.backend == "dynamodb":
            return DynamoBackend(client, name, self.layout, clock=clock, executor=Inline(),
                                 variant=Variant(fenced=self.fencing))
        shards = self.shards if self.shards != RANDOM else "model"
        return S3Backend(client, name, self.layout, clock=clock, executor=Inline(),
                         variant=Variant(fenced=self.fencing, s3_shards=shards))


@dataclass
class World:
    cfg: Target
    clock: FakeClock
    a: Datastore
    b: Datastore
    events: list[dict] = field(default_factory=list)

    @property
    def backend(self) -> Any:
        return self.b.backend  # (b is never disturbed: its client reads the final state)


class Lab:
    """The clients every schedule reuses (making botocore clients is most of a fresh world's cost): one pair
    per actor and service, each with its ``Tape`` (``faults.py``) registered once."""

    def __init__(self, session: boto3.Session) -> None:
        from harness.products.explore.faults import Tape

        self.session = session
        self.clients: dict[tuple[str, str], Any] = {}
        self.tapes: dict[str, Tape] = {}
        for service in ("dynamodb", "s3"):
            for who in ("a", "b"):
                # no retries of botocore's own beyond the explorer's lost answers (which it retries at once)
                c = instrument(session.client(service, endpoint_url=f"https://{service}.{session.region_name}"
                                              ".amazonaws.com",  # never a user's AWS_ENDPOINT_URL: moto's mock
                                              config=Config(retries={"max_attempts": 1, "mode": "standard"})))
                self.clients[(who, service)] = c
            self.tapes[service] = Tape(self.clients[("a", service)])

    def tape(self, target: Target) -> Any:
        t = self.tapes[target.backend]
        t.reset()
        return t


def new_world(cfg: Target, lab: Lab) -> World:
    """Two actors, ``a`` and ``b``, on one fresh table or bucket, with one history."""
    clock = FakeClock()
    name = f"explore-{os.getpid()}-{next(_names)}"
    events: list[dict] = []
    stores = []
    for who in ("a", "b"):
        client = lab.clients[(who, cfg.backend)]
        be = cfg.backend_of(client, name, clock)
        be.ensure()
        sync = cfg.sync_config(namespace="w1", lock_scope="namespace",
                          index_commit="delta" if cfg.sync == "two-phase" else "full", lock=LOCK, heartbeat=False,
                          sync=cfg.sync, global_poll_s=0.05, record_views=True)
        store = Datastore(be, Catalog(), sync, clock=clock, holder=who, rng=random.Random(f"{who}-explore"))
        store.record = events.append
        stores.append(store)
    return World(cfg, clock, stores[0], stores[1], events)
