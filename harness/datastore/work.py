"""Kept so existing imports work: ``Work`` lives in :mod:`harness.work` (neutral ground)."""

from harness.work import Work, recording

__all__ = ["Work", "recording"]
