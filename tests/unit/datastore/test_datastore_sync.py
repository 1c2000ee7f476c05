"""The spec's bottlenecks as switches: each test fails if its mechanism breaks."""

from __future__ import annotations

import pytest

from tests.conftest import make_backend, make_store, step

BACKENDS = ["legacy", "per-model", "monolith", "sharded"]


def pull_reads(store, n_iterations, models=5, other=None):
    """Items read by each pull of ``store``; with ``other`` (a second worker of the namespace) they alternate,
    so every pull has the other's commit to read."""
    reads = []
    for i in range(n_iterations):
        steps = []
        store.sync_run(f"m{i % models}", "get_uptime", 100, steps)
        reads.append(step(steps, "pull").work.items_read)
        if other is not None:
            other.sync_run(f"o{i % models}", "get_uptime", 100, [])
    return reads


def test_legacy_pull_reads_every_item_per_model_reads_only_changed(aws):
    legacy_be, per_model_be = make_backend("legacy", aws, table="legacy-t"), make_backend("per-model", aws,
                                                                                         table="permodel-t")
    legacy, per_model = make_store(legacy_be, "w1"), make_store(per_model_be, "w1")
    runs = 20
    lr = pull_reads(legacy, runs, other=make_store(legacy_be, "w1", holder="o"))
    pr = pull_reads(per_model, runs, other=make_store(per_model_be, "w1", holder="o"))
    # legacy reads the whole "FILE" partition: grows with every stored file
    # raw, metadata.yaml and an output record are new every run of each worker; latest is overwritten
    assert lr[-1] - lr[6] == 2 * 3 * (runs - 7)
    assert all(b >= a for a, b in zip(lr, lr[1:], strict=False))
    # per-model reads SEQ + registry + the last iteration's changed files only: flat
    assert max(pr[10:]) - min(pr[10:]) <= 2
    assert pr[-1] < 15
    assert lr[-1] > 5 * pr[-1]


def test_legacy_reads_other_namespaces_too(aws):
    be = make_backend("legacy", aws)
    a, b = make_store(be, "wa"), make_store(be, "wb")
    pull_reads(a, 10)
    before = pull_reads(b, 1)[0]
    assert before >= 10 * 4  # b pays for a's files on its very first pull


def test_scoped_pull_never_advances_watermark_unscoped_does(aws, clock):
    from harness.core.work import Work

    be = make_backend("per-model", aws, clock=clock)
    store, other = make_store(be, "w1", clock=clock), make_store(be, "w1", clock=clock, holder="o")
    store.sync_run("m1", "get_uptime", 100, [])
    clock.advance(5)
    other.sync_run("m2", "get_uptime", 100, [])  # something for the next pulls to see
    assert store.watermark_ms > 0
    mark = store.watermark_ms
    store.pull(Work(), partitions=["w1/system/m2"])
    assert store.watermark_ms == mark
    clock.advance(5)
    store.pull(Work())
    assert store.watermark_ms > mark


def test_a_legacy_pull_reads_everything_every_time(aws):
    """swamp's queryAllFileMeta before the fix had no sequence shortcut: its own commit is read back too."""
    store = make_store(make_backend("legacy", aws), "w1")
    reads = pull_reads(store, 6)
    assert all(b > a for a, b in zip(reads[1:], reads[2:], strict=False)), reads


@pytest.mark.parametrize("kind", [k for k in BACKENDS if k != "legacy"])
def test_a_pull_costs_one_read_when_nothing_changed_since_the_workers_own_commit(aws, kind):
    from harness.core.work import Work

    be = make_backend(kind, aws)
    store, other = make_store(be, "w1"), make_store(be, "w1", holder="o")
    pull_reads(store, 3)
    own = Work()
    store.pull(own)  # its own commit was the last: nothing to read
    assert own.total_requests == 1 and own.queries == 0
    other.sync_run("m9", "get_uptime", 100, [])
    theirs, again = Work(), Work()
    store.pull(theirs)  # the other worker's commit: read what changed
    store.pull(again)  # and nothing since
    assert theirs.total_requests > 1 and theirs.files_pulled == 5
    assert again.total_requests == 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_pull_never_writes(aws, kind):
    from harness.core.work import Work

    be = make_backend(kind, aws)
    store, other = make_store(be, "w1"), make_store(be, "w1", holder="o")
    store.sync_run("m1", "get_uptime", 100, [])
    other.sync_run("m2", "get_uptime", 100, [])
    other.delete_model("m2", [])
    other.prune([])
    w = Work()
    store.pull(w)
    assert w.total_requests >= 1
    writes = {op for op in w.requests if op.startswith(("Put", "Update", "Delete", "BatchWrite"))}
    assert writes == set(), dict(w.requests)


@pytest.mark.parametrize("kind", ["legacy", "per-model", "sharded"])
def test_full_commit_grows_with_namespace_delta_stays_flat(aws, kind):
    full = make_store(make_backend(kind, aws, table="full-t", bucket="full-b"), "w1", index_commit="full")
    delta = make_store(make_backend(kind, aws, table="delta-t", bucket="delta-b"), "w1", index_commit="delta")
    fw, dw = [], []
    runs = 12
    for i in range(runs):
        s1, s2 = [], []
        full.sync_run(f"m{i % 4}", "get_uptime", 100, s1)
        delta.sync_run(f"m{i % 4}", "get_uptime", 100, s2)
        fw.append(step(s1, "commit").work.index_entries_written)
        dw.append(step(s2, "commit").work.index_entries_written)
    # full: every live entry of the namespace, ~3 more per iteration
    assert fw[-1] >= 3 * runs and fw[-1] - fw[5] >= 2 * (runs - 6)
    if kind == "sharded":  # delta rewrites whole dirty shards: proportional to one model, not the namespace
        assert dw[-1] < fw[-1] / 3
    else:
        assert set(dw[4:]) == {4}  # raw, metadata.yaml, latest, output record


def test_monolith_rewrites_whole_index_every_commit(aws):
    store = make_store(make_backend("monolith", aws), "w1", index_commit="delta")
    written = []
    for i in range(10):
        steps = []
        store.sync_run(f"m{i % 3}", "get_uptime", 100, steps)
        written.append(step(steps, "commit").work.index_entries_written)
    assert written == sorted(written) and written[-1] == len(store.local)


@pytest.mark.parametrize("kind", BACKENDS)
def test_disposable_files_constant_catalog_grows_prune_bounds(aws, kind):
    be = make_backend(kind, aws)
    plain, pruned = make_store(be, "wa", index_commit="full"), make_store(be, "wb", index_commit="full")
    pushed, committed, rows_plain, rows_pruned = [], [], [], []
    for i in range(12):
        for store, rows, prune in ((plain, rows_plain, False), (pruned, rows_pruned, True)):
            steps = []
            store.sync_run(f"w-i{i}", "get_uptime", 100, steps)
            store.delete_model(f"w-i{i}", steps)
            if prune:
                store.prune(steps)
            rows.append(store.catalog.rows(store.ns))
            if store is plain:
                pushed.append(step(steps, "push").work.files_pushed)
                committed.append(step(steps, "commit").work.index_entries_written)
    assert set(pushed) == {5}  # definition, raw, metadata.yaml, latest, output record
    if kind == "monolith":  # the whole index is rewritten: orphaned entries included
        assert committed == [5 + 4 * i for i in range(12)]
    else:  # only live entries: the one disposable model's files
        assert set(committed) == {5}
    assert rows_plain == list(range(1, 13))
    assert set(rows_pruned) == {0}


def test_prune_dry_run_changes_nothing_and_never_touches_another_namespace(aws):
    be = make_backend("per-model", aws)
    a, b = make_store(be, "wa"), make_store(be, "wb")
    for store in (a, b):
        store.sync_run("gone", "get_uptime", 100, [])
        store.delete_model("gone", [])
    items = be.count_items()
    report = a.prune([], dry_run=True)
    assert report.models == [("system", "gone")] and report.files == 4 and report.rows == 1
    assert be.count_items() == items and a.catalog.rows("wa") == 1
    a.prune([])
    assert a.catalog.rows("wa") == 0 and b.catalog.rows("wb") == 1
    assert be.count_items() < items
    # b's orphan is still there for b to prune
    assert b.prune([], dry_run=True).files == 4


def test_catalog_export_grows_with_rows(aws):
    store = make_store(make_backend("per-model", aws), "w1")
    sent = []
    for i in range(10):
        steps = []
        store.sync_run(f"d{i}", "get_uptime", 100, steps)
        store.delete_model(f"d{i}", steps)
        export = step(steps, "export").work
        sent.append(export.bytes_sent)
        assert export.catalog_rows == i + 1
    assert sent[-1] > sent[0] * 3


@pytest.mark.parametrize("kind", BACKENDS)
def test_large_payload_round_trips_through_content_storage(aws, kind):
    from harness.core.work import Work

    be = make_backend(kind, aws)
    writer, reader = make_store(be, "w1"), make_store(be, "w1", holder="r")
    steps = []
    writer.sync_run("big", "get_memory", 500_000, steps)
    raw = [m for r, m in writer.local.items() if r.endswith("/raw")][0]
    assert raw.size > 450_000
    w = Work()
    assert len(be.get_content(raw, w)) == raw.size
    reader.pull(w2 := Work())
    assert w2.files_pulled == 5 and w2.bytes_received > 450_000


def test_prune_forgets_pruned_partitions_so_pulls_stay_flat(aws):
    """Without it the registry keeps every disposable model ever made, and every pull queries them all."""
    from harness.core.work import Work

    be = make_backend("per-model", aws)
    store = make_store(be, "w1")
    for i in range(8):
        steps = []
        store.sync_run(f"d{i}", "get_uptime", 100, steps)
        store.delete_model(f"d{i}", steps)
        store.prune(steps)
    assert be.partitions("w1", Work()) == []
    w = Work()
    store.pull(w)
    assert w.requests["Query"] == 0


def store_size(be) -> int:
    """Items in the table, or objects in the bucket: everything the store keeps."""
    if be.name == "dynamodb":
        return be.count_items()
    return sum(len(p.get("Contents", [])) for p in be.client.get_paginator("list_objects_v2").paginate(
        Bucket=be.bucket))


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_pruned_store_stays_the_size_of_its_live_data(aws, clock, kind):
    """Old code: every export left its chunks behind (new keys each time), superseded content chunks stayed,
    and tombstones, versions and registry entries of pruned models added up: the table grew every iteration.
    Now after 40 disposable iterations, each deleted and pruned, it holds what it held after 10."""
    be = make_backend(kind, aws, clock=clock)
    store = make_store(be, "w1", index_commit="full", clock=clock)
    sizes = []
    for i in range(40):
        clock.advance(0.05)
        steps: list = []
        store.sync_run(f"w1-i{i}", "get_uptime", 100, steps)
        store.delete_model(f"w1-i{i}", steps)
        store.prune(steps)
        sizes.append(store_size(be))
    assert sizes[9] == sizes[-1] and max(sizes[9:]) <= sizes[9] + 5, sizes
