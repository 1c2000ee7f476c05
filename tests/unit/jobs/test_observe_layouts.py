"""The observer reads what the model wrote, layout by layout, and both sides agree at the same moment.

In-process moto, one writer at a time: between syncs nothing is in flight, so the observer's count must
equal the model's own (the items a legacy pull reads, the entries a full commit writes, the registry's
size as DynamoDB returned it, the export's bytes), exactly.
"""

from __future__ import annotations

import csv

import pytest

from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.catalog import Catalog
from harness.datastore.lock import Lock
from harness.datastore.sync import Datastore, SyncConfig
from harness.datastore.variant import Variant
from harness.jobs.observer.layout import Layout, LayoutError, commit_lock
from harness.jobs.observer.start import Spend, Where, open_observer
from tests.conftest import FAST_LOCK, SESSION, step

TABLE, BUCKET = "observe-t", "observe-b"


def read_all(obs) -> dict[tuple[str, str], str]:
    """One sample of every group; the last value of each (what, key)."""
    for g in obs.groups:
        assert obs.sample(g), f"group {g} was not read"
    with obs.out.path.open() as f:
        return {(r["what"], r["key"]): r["value"] for r in csv.DictReader(f)}


def observer(layout: Layout, tmp_path, clock, **spend):
    client = SESSION.client(layout.backend)
    path = tmp_path / layout.backend
    path.mkdir(exist_ok=True)
    return open_observer(layout, Where(None), Spend(every_s=1.0, **spend), path, None, clock=clock, client=client)


def store(be, ns, clock, **cfg):
    return Datastore(be, Catalog(), SyncConfig(namespace=ns, lock=FAST_LOCK, heartbeat=False, **cfg), clock=clock,
                     holder=f"h-{ns}")


def run(st, n, first=0):
    out = []
    for i in range(first, first + n):
        steps = []
        st.sync_run(f"m{i % 3}", "get_uptime", 100, steps)
        out.append(steps)
    return out


def test_legacy_file_key_is_what_a_legacy_pull_reads(aws, tmp_path, fencing=True):
    clock = FakeClock()
    be = DynamoBackend(aws[0], TABLE, "legacy", clock=clock, variant=Variant(fenced=fencing))
    be.ensure()
    a, b = (store(be, None, clock, lock_scope="datastore") for _ in range(2))
    run(a, 3)
    run(b, 2, 3)
    model = be.read_index(None, Work())  # every item under FILE, as the model's pull reads them
    seen = read_all(observer(Layout("dynamodb", gsi="legacy", lock_scope="datastore", table=TABLE), tmp_path, clock))
    assert int(seen[("gsi_items", "FILE")]) == model > 0
    assert seen[("lock_held", f"dynamodb://{TABLE}")] == "0"


@pytest.mark.parametrize("gsi,fencing", [("per-model", True), ("swamp", True), ("per-model", False)])
def test_full_commit_entries_and_partitions_per_namespace(aws, tmp_path, gsi, fencing):
    clock = FakeClock()
    be = DynamoBackend(aws[0], TABLE, gsi, clock=clock, variant=Variant(fenced=fencing))
    be.ensure()
    stores = {ns: store(be, ns, clock, index_commit="full") for ns in ("w0-0", "w0-1")}
    written = {ns: step(run(st, 4 if ns == "w0-0" else 2)[-1], "commit").work.index_entries_written
               for ns, st in stores.items()}
    seen = read_all(observer(Layout("dynamodb", gsi=gsi, namespaces=tuple(stores), table=TABLE), tmp_path, clock))
    for ns, st in stores.items():
        assert int(seen[("index_entries", ns)]) == written[ns] > 0
        reg = f"PARTITIONS#registry#{ns}/LIST"
        assert int(seen[("partitions", reg)]) == len(be.registry(ns, Work()))
        assert int(seen[("export_bytes", f"{ns}/.catalog-export.json")]) == len(st.catalog.export(ns))
    for ns in stores:  # between commits, one item per entry under the namespace's GSI keys (superseded: collected)
        items = sum(int(v) for (w, k), v in seen.items() if w == "gsi_items" and (ns in k))
        assert items == written[ns]
    keys = {k for (w, k) in seen if w == "gsi_items"}
    if gsi == "swamp":  # swamp's gsiFilePartition puts a namespace's every file on one key
        assert keys == {"FILE#_system/w0-0", "FILE#_system/w0-1"}
    else:
        assert keys == {f"FILE#{ns}/system/m{i}" for ns, n in (("w0-0", 3), ("w0-1", 2)) for i in range(n)}


def test_deletes_and_prunes_leave_the_entries_readers_see(aws, tmp_path):
    clock = FakeClock()
    be = DynamoBackend(aws[0], TABLE, "per-model", clock=clock)
    be.ensure()
    st = store(be, "w0-0", clock, index_commit="full")
    run(st, 3)
    st.delete_model("m1", [])
    obs = observer(Layout("dynamodb", namespaces=("w0-0",), table=TABLE), tmp_path, clock)
    live = len([r for r in st.local if r.startswith("w0-0/")])
    assert int(read_all(obs)[("index_entries", "w0-0")]) == live  # the definition's tombstone is no entry
    st.prune([])
    steps = run(st, 1, 10)[-1]
    after = read_all(obs)
    assert int(after[("index_entries", "w0-0")]) == step(steps, "commit").work.index_entries_written
    assert int(after[("index_entries", "w0-0")]) < live + 5


def test_swamp_registry_bytes_are_the_rows_registry_bytes(aws, tmp_path):
    clock = FakeClock()
    be = DynamoBackend(aws[0], TABLE, "swamp", clock=clock, variant=Variant(registry_adds="swamp", bookkeeping="swamp"))
    be.ensure()
    st = store(be, "w0-0", clock, sync="two-phase")
    steps = run(st, 4)[-1]
    model = max(s.work.item_bytes.get("PARTITIONS#registry/LIST", 0) for s in steps)
    layout = Layout("dynamodb", gsi="swamp", sync="two-phase", bookkeeping="swamp", namespaces=("w0-0",),
                    table=TABLE)
    seen = read_all(observer(layout, tmp_path, clock))
    assert int(seen[("registry_bytes", "PARTITIONS#registry/LIST")]) == model > 0
    assert seen[("lock_held", ".locks/w0-0.lock")] == "0"


def test_a_held_lock_and_its_holder(aws, tmp_path):
    clock = FakeClock()
    be = DynamoBackend(aws[0], TABLE, "per-model", clock=clock)
    be.ensure()
    layout = Layout("dynamodb", namespaces=("w0-0",), table=TABLE)
    key = commit_lock(layout, "w0-0")
    lock = Lock(be.lock_store, key, clock, FAST_LOCK, "holder-7")
    grant = lock.acquire(Work())
    seen = read_all(observer(layout, tmp_path, clock))
    assert (seen[("lock_held", key)], seen[("lock_holder", key)]) == ("1", "holder-7")
    lock.release(grant, Work())
    clock.advance(1)
    assert read_all(observer(layout, tmp_path, clock))[("lock_held", key)] == "0"


@pytest.mark.parametrize("index,shards,scope", [("sharded", "model", "namespace"), ("sharded", "swamp", "namespace"),
                                                ("sharded", "model", "datastore"), ("monolith", "model", "datastore")])
def test_s3_entries_are_what_a_full_commit_writes(aws, tmp_path, index, shards, scope):
    clock = FakeClock()
    be = S3Backend(aws[1], BUCKET, index, prefix="run-1/", clock=clock, variant=Variant(s3_shards=shards))
    be.ensure()
    nss = ("w0-0", "w0-1")
    stores = {ns: store(be, ns, clock, index_commit="full", lock_scope=scope) for ns in nss}
    written = {ns: step(run(st, 3 if ns == "w0-0" else 2)[-1], "commit").work.index_entries_written
               for ns, st in stores.items()}
    layout = Layout("s3", s3_index=index, s3_shards=shards, lock_scope=scope, namespaces=nss, bucket=BUCKET,
                    prefix="run-1/")
    seen = read_all(observer(layout, tmp_path, clock))
    entries = {ns: int(seen[("index_entries", ns)]) for ns in nss}
    if scope == "namespace" or index == "monolith":  # a full commit of one namespace rewrites what it holds
        assert entries == {ns: sum(1 for r in stores[ns].local if r.startswith(f"{ns}/")) for ns in nss}
    if scope == "namespace" and index == "sharded":
        assert entries == written
    shard_total = sum(int(v) for (w, k), v in seen.items() if w == "shard_entries")
    assert shard_total == sum(entries.values())
    for ns, st in stores.items():
        assert int(seen[("export_bytes", f"{ns}/.catalog-export.json")]) == len(st.catalog.export(ns))


def test_an_unknown_layout_is_one_line():
    with pytest.raises(LayoutError, match="cannot read gsi 'flat': choose one of legacy, per-model, swamp"):
        Layout("dynamodb", gsi="flat")


class StaleFirst:
    """A client whose first GET of the head answers the head as it was before a commit (its shard since gone)."""

    def __init__(self, client, head_key: str, stale: bytes) -> None:
        self.client, self.head_key, self.stale = client, head_key, stale

    def __getattr__(self, name):
        return getattr(self.client, name)

    def get_object(self, **kw):
        if kw["Key"] == self.head_key and self.stale is not None:
            import io

            body, self.stale = self.stale, None
            return {"Body": io.BytesIO(body), "ETag": '"stale"'}
        return self.client.get_object(**kw)


def test_a_head_that_moved_on_while_its_shards_were_read_is_read_again(aws, tmp_path):
    clock = FakeClock()
    be = S3Backend(aws[1], BUCKET, "sharded", clock=clock)
    be.ensure()
    st = store(be, "w0-0", clock, index_commit="full")
    run(st, 1)
    head = "w0-0/_index/_meta.json"
    old = SESSION.client("s3").get_object(Bucket=BUCKET, Key=head)["Body"].read()
    run(st, 2, 1)  # the commits after it replaced (and deleted) the shards the old head names
    layout = Layout("s3", namespaces=("w0-0",), bucket=BUCKET)
    obs = open_observer(layout, Where(None), Spend(every_s=1.0), tmp_path, None, clock=clock,
                        client=StaleFirst(SESSION.client("s3"), head, old))
    seen = read_all(obs)
    assert int(seen[("index_entries", "w0-0")]) == sum(1 for r in st.local if r.startswith("w0-0/"))


@pytest.mark.parametrize("backend", ["dynamodb", "s3"])
@pytest.mark.parametrize("sync,scope,global_lock", [
    ("one-lock", "namespace", "swamp"), ("one-lock", "datastore", "swamp"), ("two-phase", "namespace", "swamp"),
    ("two-phase", "namespace", "per-namespace"), ("two-phase", "namespace", "one-item"),
    ("two-phase", "datastore", "swamp")])
def test_the_observer_watches_the_lock_the_datastore_commits_under(aws, backend, sync, scope, global_lock):
    """The observer names the commit lock from the layout alone; it must be the key the datastore itself takes
    (swamp's global lock key moved once already: a drift here would watch a lock nobody holds)."""
    be = DynamoBackend(aws[0], TABLE, "per-model") if backend == "dynamodb" else S3Backend(aws[1], BUCKET, "sharded")
    st = store(be, "w0-0", FakeClock(), sync=sync, lock_scope=scope, global_lock=global_lock)
    layout = Layout(backend, sync=sync, lock_scope=scope, global_lock=global_lock, namespaces=("w0-0",),
                    table=TABLE)
    assert commit_lock(layout, "w0-0") == st.lock_key()
