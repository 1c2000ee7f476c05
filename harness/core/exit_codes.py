"""The ``harness`` command's exit codes, one enum for every command (docs/cli.md names each).

One place, so "the checks failed" is one number whether a run, a suite's comparison, a story, the safety
check or the explorer says it, and CI scripts can name what they test for.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``harness`` command's exit status means (a signal's is 128 + its number, as a shell's)."""

    OK = 0
    FAILED = 1  # an unexpected error (``suite``: a scenario failed)
    BAD_INPUT = 2  # bad input, an old spelling, a refused write: one line on stderr, no traceback
    CHECKS_FAILED = 3  # finished, but a check, a baseline, a story's expectation or a safety check failed
    JOB_STOPPED = 4  # a bulk job paused or failed (its place is kept: `harness jobs resume JOB`)
    DID_NOT_COMPLETE = 5  # a part the harness started died, or the run directory's disk filled
