"""The S3 backend's two systems as strategy objects: how a commit is checked, sealed and cleaned up after.

``choose.py`` picks one from the scenario's ``Variant`` once, when the backend is built; no call carries a
mode flag. ``FencedS3`` is the harness's design: a stale grant is refused before anything is written, the
seal swaps the head ``If-Match`` the ETag this holder saw (the head its fate record), what the commit
superseded goes after the release. ``UnfencedS3`` is swamp's: the head read again and swapped unconditionally,
its garbage deleted right after the swap, nothing looked up before a push. Each method is one seam of the
commit (``commit.py``: ``S3Commits``) or of the push (``lookup``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.core.aws_errors import outcome_unknown
from harness.core.work import Work
from harness.datastore.backends.base import FileMeta
from harness.datastore.backends.s3.index import S3Cursor
from harness.datastore.errors import LockLostError
from harness.datastore.lock import LockGrant


class FencedS3:
    """The harness's fenced commit on S3."""

    def refuse_lost(self, grant: LockGrant) -> None:
        if grant.lost:
            raise LockLostError(f"commit refused: lock {grant.key} (fence {grant.fence}) was lost")

    def reads_head(self, cur: S3Cursor) -> bool:
        """The head is read before the commit only when the cursor holds none (the swap is conditioned on it)."""
        return cur.head is None

    def check(self, commits: Any, doc: dict, seq: int, grant: LockGrant, base_seq: int | None,
              model_fence: tuple[str, int] | None) -> None:
        commits._check_head(doc, seq, grant, base_seq, model_fence)

    def model_fence(self, model_fence: tuple[str, int] | None) -> tuple[str, int] | None:
        return model_fence

    def trusts_cursor(self) -> bool:
        """Shards the cursor read are taken from it (immutable, and the conditional swap proves them current)."""
        return True

    def fate_record(self, forget: Sequence[str]) -> Sequence[str] | None:
        """The new head is this commit's fate record (and drops the pruned models' fences)."""
        return forget

    def conditions(self, etag: str | None) -> tuple[str | None, bool]:
        """``If-Match`` the head read, ``If-None-Match`` when there was none."""
        return etag, etag is None

    def swap_failed(self, commits: Any, e: BaseException, cur: S3Cursor, cid: str, seq: int, written: list[str],
                    grant: LockGrant, work: Work) -> None:
        """Its fate read from the head: returns when it sealed all the same, raises otherwise."""
        commits._after_failed_seal(e, cur, cid, seq, written, grant, work)

    def superseded(self, commits: Any, grant: LockGrant, rels: list[str], work: Work) -> None:
        """After the release: nothing live is among them, however late that is."""
        commits.later(grant, lambda w: commits._discard(rels, w))

    def lookup(self, read: Callable[[], dict[str, FileMeta]]) -> dict[str, FileMeta]:
        return read()


class UnfencedS3:
    """swamp's commit on S3: nothing conditions the swap."""

    def refuse_lost(self, grant: LockGrant) -> None:
        """A lost lease is not looked at."""

    def reads_head(self, cur: S3Cursor) -> bool:
        """Nothing conditions the swap, so the head is read now, whatever the cursor holds."""
        return True

    def check(self, commits: Any, doc: dict, seq: int, grant: LockGrant, base_seq: int | None,
              model_fence: tuple[str, int] | None) -> None:
        """Nothing is checked."""

    def model_fence(self, model_fence: tuple[str, int] | None) -> tuple[str, int] | None:
        return None

    def trusts_cursor(self) -> bool:
        return False

    def fate_record(self, forget: Sequence[str]) -> Sequence[str] | None:
        return None

    def conditions(self, etag: str | None) -> tuple[str | None, bool]:
        return None, False

    def swap_failed(self, commits: Any, e: BaseException, cur: S3Cursor, cid: str, seq: int, written: list[str],
                    grant: LockGrant, work: Work) -> None:
        """Known not swapped: our shards are garbage. The failure stands."""
        if isinstance(e, Exception) and not outcome_unknown(e):
            commits._discard(written, work)
        cur.head = cur.etag = None
        raise e

    def superseded(self, commits: Any, grant: LockGrant, rels: list[str], work: Work) -> None:
        """Right after the swap."""
        commits._discard(rels, work)

    def lookup(self, read: Callable[[], dict[str, FileMeta]]) -> dict[str, FileMeta]:
        """swamp's S3 push looks nothing up."""
        return {}


S3Mode = FencedS3 | UnfencedS3
