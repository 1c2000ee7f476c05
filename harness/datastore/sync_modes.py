"""The sync coordinator's two systems as strategy objects, chosen once from the backend's ``Variant``.

A ``Datastore`` (``sync.py``) runs one of two designs around the same steps: the harness's fenced one
(``FencedSync``: a grant tells the backend first, a lost grant's commit is refused, content keys name the
commit that writes them, a two-phase commit carries its model's fence) or swamp's (``UnfencedSync``: its push
looks the dirty paths up by key and refuses a newer remote version, nothing more). Its bookkeeping
(``HarnessBooks``, ``SwampBooks``) says what a prune forgets. ``choose`` picks them, once, when the datastore
is built; no step asks the variant again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.work import Work
from harness.datastore.errors import ConflictError, LockLostError
from harness.datastore.lock import LockGrant
from harness.datastore.variant import Bookkeeping, Variant

Hook = Callable[[LockGrant, Work], None]


class FencedSync:
    """The harness's fenced design."""

    def fence_hook(self, store: Any) -> Hook | None:
        """What a fenced grant of the commit domain's lock tells the backend first."""
        return lambda g, w: store.backend.on_grant(store.ns, g, store._cursor, w)

    def model_fence_hook(self, store: Any, part: str | None) -> Hook | None:
        """What a fenced grant of a model's lock tells the backend: its partition is fenced by this grant."""
        if not part:
            return None
        return lambda g, w: store.backend.fence_model(store.ns, part, g, store._cursor, w, lock_key=store.lock_key())

    def refuse_lost(self, grant: LockGrant) -> None:
        if grant.lost:
            raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")

    def check_remote(self, store: Any, paths: Sequence[str], work: Work) -> None:
        """Nothing: the seal is conditioned on nothing having been sealed since this holder's pull, the same
        check made atomic with the commit."""

    def name_content(self, store: Any) -> None:
        """The commit's id, picked before its content is written: every content key names it."""
        store._cid = store.new_commit_id()
        for m in store.staged.values():
            m.content_id = store._cid

    def model_fence(self, grant: LockGrant | None, part: str | None) -> tuple[str, int] | None:
        """Two-phase: (the model's partition, its lock's fence): the commit checks no newer holder of it."""
        return (part, grant.fence) if grant is not None and part else None


class UnfencedSync:
    """swamp's design: no fence anywhere; its push compares versions by key."""

    def fence_hook(self, store: Any) -> Hook | None:
        return None

    def model_fence_hook(self, store: Any, part: str | None) -> Hook | None:
        return None

    def refuse_lost(self, grant: LockGrant) -> None:
        """A lost lease is not looked at."""

    def check_remote(self, store: Any, paths: Sequence[str], work: Work) -> None:
        """swamp's push: the dirty paths looked up by key; a newer remote version (not ours, not a path every
        worker overwrites) is a conflict."""
        remote = store.backend.lookup(paths, work)
        for rel in paths:
            base = store.local[rel].version if rel in store.local else 0
            r = remote.get(rel)
            if r is not None and r.version > base and r.digest != store.staged[rel].digest and (
                    rel not in store.overwrites):
                raise ConflictError(f"conflict on {rel}: remote version {r.version} is newer than ours ({base})")

    def name_content(self, store: Any) -> None:
        """Content at its path's version: no commit id in its key."""

    def model_fence(self, grant: LockGrant | None, part: str | None) -> tuple[str, int] | None:
        return None


class HarnessBooks:
    """The harness's bookkeeping: a prune forgets its pruned partitions."""

    def forget(self, parts: Sequence[str | None]) -> list[str]:
        return [p for p in parts if p]


class SwampBooks:
    """swamp's bookkeeping forgets nothing: its registry only grows, its tombstones stay."""

    def forget(self, parts: Sequence[str | None]) -> list[str]:
        return []


@dataclass(frozen=True)
class SyncModes:
    fencing: FencedSync | UnfencedSync
    books: HarnessBooks | SwampBooks


def choose(variant: Variant) -> SyncModes:
    """The sync coordinator's strategies for ``variant`` (the backend's)."""
    return SyncModes(FencedSync() if variant.fenced else UnfencedSync(),
                     SwampBooks() if variant.bookkeeping is Bookkeeping.SWAMP else HarnessBooks())
