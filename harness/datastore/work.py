"""Kept so existing imports work: ``Work`` lives in :mod:`harness.core.work` (neutral ground)."""

from harness.core.work import Work, recording

__all__ = ["Work", "recording"]
