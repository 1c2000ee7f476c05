"""The seed's loop: one lock, the commit domain's, held around the whole sync.

lock -> pull changed -> run the method locally -> push (prepare) -> commit the index update (fenced) ->
export the catalog -> release. The holder may be frozen (fault injection) between push and commit, its
heartbeat stopped with it: the moment a stale commit would land.
"""

from __future__ import annotations

from harness.datastore.store import Step, Store


def commit_lock_key(store: Store) -> str:
    """swamp's key of the seed's time: ``.locks/<namespace>.lock`` with a namespace and namespace scope,
    else the datastore's."""
    if store.cfg.lock_scope == "namespace" and store.ns:
        return f".locks/{store.ns}.lock"
    return store.backend.datastore_lock_key()


def uploads_at_commit(backend: str) -> bool:
    """The content is written in the push's prepare, on either backend: the one lock is held throughout."""
    return False


def sync_run(store: Store, model_id: str, method: str, payload_bytes: int, steps: list[Step],
             model_type: str) -> None:
    with store.locked(steps) as grant:
        with store.step(steps, "pull") as w:
            store.pull(w)
        with store.step(steps, "method") as w:
            store.run_method_locally(model_type, model_id, method, payload_bytes, w)
        with store.step(steps, "push") as w:
            store.prepare(w)
        with store.step(steps, "commit") as w:
            store.pause("commit")
            store.commit(grant, w)
        with store.step(steps, "export") as w:
            store.export_catalog(w)
