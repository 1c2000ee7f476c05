"""User-facing errors.

Every error a user can cause (bad scenario, unreachable endpoint, wrong table)
is a ``HarnessError`` whose message is one line saying what is wrong and how to
fix it. The command line prints it without a traceback and exits non-zero.
"""


class HarnessError(Exception):
    """A problem the user can fix; ``str(err)`` is the whole one-line message."""
