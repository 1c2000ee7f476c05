"""A reader that stops early (`harness scenarios | head -1`) ends the command quietly: no traceback, exit 0."""

from __future__ import annotations

import subprocess
import sys


def test_a_closed_pipe_ends_the_listing_without_a_traceback():
    proc = subprocess.Popen([sys.executable, "-m", "harness", "scenarios"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)
    first = proc.stdout.read(1)  # the reader takes one byte and goes away, as `head -c1` would
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert first and proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
