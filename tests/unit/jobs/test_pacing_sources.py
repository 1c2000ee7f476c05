"""Job sources under the engine's concurrency: items of one job run in parallel threads."""

from __future__ import annotations

import threading

from harness.core.work import Work
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.jobs.pacing.sources import PreAgeSource


def test_concurrent_seed_commits_of_one_namespace_share_one_lock_grant(aws, tmp_path):
    """Two commit items of one namespace at once must not both try to take the namespace's lock.

    Before the fix the second waited for the first's lock (held, heartbeating, until ``finish``) for its
    whole 120 s wait and then failed, so a seeded run started with index entries missing.
    """
    ddb, _ = aws
    backend = DynamoBackend(ddb, "seed-race", "per-model")
    backend.ensure()
    source = PreAgeSource(backend, ["w0-0"], models=10, versions=3, orphans=0, state_dir=tmp_path, epoch=1.7e9)
    commits = [i for i, (kind, _) in enumerate(source.items) if kind == "commit"]
    assert len(commits) >= 2
    for i, (kind, _) in enumerate(source.items):
        if kind == "content":
            source.run(i, Work())

    start = threading.Barrier(len(commits))
    errors: list[BaseException] = []

    def commit(idx: int) -> None:
        try:
            start.wait(60)  # generous: threads start late on a loaded machine
            source.run(idx, Work())
        except BaseException as e:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=commit, args=(i,), daemon=True) for i in commits]
    for t in threads:
        t.start()
    for t in threads:  # the bug waits out the lock's 120 s wait: 100 s tells the two apart on a busy machine
        t.join(100)
    assert not [t for t in threads if t.is_alive()], "a commit is stuck waiting for its own job's lock"
    assert errors == []
    source.finish()
    meta = backend.lookup(sorted(source.stores["w0-0"].staged), Work())
    assert len(meta) == source.files()  # every file's index entry landed
