"""swamp's sync as it runs today: a per-model lock for the model's own work, the global lock only to commit.

One ``swamp model method run`` (docs/swamp-today.md has each step's source):

1. *lock*: poll the global lock (one read every ``global_poll_s``, giving up
   after twice the TTL with swamp's timeout on the global key) until no
   structural command holds it; take the per-model lock
   ``[<ns>/]data/<type>/<id>/.lock`` with the provider's backoff; look at the
   global lock once more and, if it was taken meanwhile, give the model lock
   back and start again;
2. under the per-model lock: a *pull* scoped to the model, the *method*, the
   *push* (prepare: the uploads, outside any global lock);
3. *commit_lock*: take the global lock (the provider's acquire); *commit*: the
   index commit under it; release it;
4. *export* the catalog; release the per-model lock last (``export_at =
   "swamp"`` on DynamoDB: the export inside the commit, under the global lock,
   where swamp's ``commitPush`` writes it; on S3: a file of the push, uploaded
   by the prepare and indexed by the commit in the ``_root`` shard, as swamp's
   S3 extension does, see ``swamp_push.py``).

With fencing (beyond swamp) the per-model lock's grant fences the model's
partition too (``backend.fence_model``): a commit is refused once a newer
holder of its model's lock was granted, as the global lock's seal refuses a
stale global holder. Without fencing it is swamp's own.
"""

from __future__ import annotations

from harness.core.clock import now_ms
from harness.core.work import Work, recording
from harness.datastore.backends.base import partition_of
from harness.datastore.errors import LockTimeoutError
from harness.datastore.lock import Lock, LockGrant
from harness.datastore.store import Step, Store
from harness.datastore.swamp_push import stage_export
from harness.datastore.variant import GlobalLock

GLOBAL_WAIT_TTLS = 2  # swamp: a model run waits at most twice the holder's TTL for the global lock


def commit_lock_key(store: Store) -> str:
    """The global lock a model run commits under (``[datastore] global_lock``), per namespace with namespace scope.

    ``"swamp"``: core's ``datastoreGlobalLockOptions`` (``src/cli/repo_context.ts``, swamp-club/swamp 06b6147)
    passes ``.locks/<ns>.lock`` to every backend, so each namespace has its own global lock on both; without a
    namespace it passes nothing and the backend's default holds (DynamoDB the datastore path
    ``dynamodb://<table>``, S3 ``.datastore.lock``). ``"one-item"``: a stored copy of core (68a1128, in no branch of
    swamp-club/swamp) passed ``.datastore.lock`` beside the namespace, which DynamoDB's extension drops (its
    ``createDynamoLock`` takes ``lockKey`` alone): one item for every namespace there, ``<ns>/.datastore.lock`` on
    S3. ``"per-namespace"``: ``<ns>/.datastore.lock`` on both (older scenario files).
    """
    ns = store.ns if store.cfg.lock_scope == "namespace" else None
    if not ns:
        return store.backend.datastore_lock_key()
    if store.cfg.global_lock == GlobalLock.SWAMP:
        return f".locks/{ns}.lock"
    if store.cfg.global_lock == GlobalLock.PER_NAMESPACE:
        return f"{ns}/.datastore.lock"
    return store.backend.global_lock_key(ns)


def uploads_at_commit(backend: str) -> bool:
    """swamp's DynamoDB extension writes the content in its ``commitPush``, under the global lock; its S3
    extension uploads in the prepare, outside it."""
    return backend == "dynamodb"


def await_global(store: Store, work: Work) -> None:
    """Poll the global lock until no one holds it (swamp's inspect loop); swamp's timeout past 2 x TTL."""
    key, clock = store.lock_key(), store.clock
    limit_s = GLOBAL_WAIT_TTLS * store.cfg.lock.ttl_s
    deadline = clock.now() + limit_s
    with recording(work):
        while store.backend.lock_store.inspect(key, now_ms(clock), work) is not None:
            remaining = deadline - clock.now()
            if remaining <= 0:
                store.record({"type": "lock_timeout", "key": key, "holder": store.holder,
                              "invoke_ms": int((deadline - limit_s) * 1000), "end_ms": now_ms(clock), "attempts": 0})
                raise LockTimeoutError(key, int(round(limit_s * 1000)))
            clock.sleep(min(remaining, store.cfg.global_poll_s))


def model_lock(store: Store, steps: list[Step], model_type: str, model_id: str) -> tuple[Lock, LockGrant]:
    """The per-model lock, taken the way swamp takes it (the global lock polled before and looked at after)."""
    lock = store.new_lock(store.paths.model_lock(model_type, model_id))
    part = partition_of(store.paths.definition(model_type, model_id), store.ns)
    fence = store.model_fence_hook(part)
    with store.step(steps, "lock") as w:
        while True:
            await_global(store, w)
            grant = lock.acquire(w, fence)
            if store.backend.lock_store.inspect(store.lock_key(), now_ms(store.clock), w) is None:
                return lock, grant
            lock.release(grant, w)  # a structural command took the global lock meanwhile: back off and wait
            store.backend.release_grant(grant)


def sync_run(store: Store, model_id: str, method: str, payload_bytes: int, steps: list[Step],
             model_type: str) -> None:
    lock, grant = model_lock(store, steps, model_type, model_id)
    part = partition_of(store.paths.definition(model_type, model_id), store.ns)
    with store.model_held(steps, lock, grant, part):
        with store.step(steps, "pull") as w:
            store.pull(w, partitions=[part] if part else None)
        with store.step(steps, "method") as w:
            store.run_method_locally(model_type, model_id, method, payload_bytes, w)
        with store.step(steps, "push") as w:
            if store.exports_in_push:  # swamp's S3: the export written and marked dirty before the prepare
                stage_export(store, w)
            store.prepare(w)
        store.pause("commit")  # frozen with the model lock held, before the global one: it may expire
        glock = store.new_lock(store.lock_key())
        with store.hold(steps, glock, lock_step="commit_lock", on_grant=store.fence_hook()) as (g, _):
            with store.step(steps, "commit") as w:
                store.commit(g, w)
            if store.exports_in_commit:  # swamp's DynamoDB: commitPush writes the export, under the lock
                with store.step(steps, "export") as w:
                    store.export_catalog(w)
        if not (store.exports_in_commit or store.exports_in_push):
            with store.step(steps, "export") as w:
                store.export_catalog(w)
