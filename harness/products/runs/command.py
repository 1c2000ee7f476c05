"""``harness runs``: the history of run directories, newest first, and ``--trend SCENARIO``'s page.

The listing and its rules are ``harness/products/runs/history.py``'s, the page ``harness/products/runs/trend.py``'s.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from harness.core.durations import parse_duration
from harness.core.errors import HarnessError


def since(text: str | None, now: float | None = None) -> datetime | None:
    """``--since``: a date or time (UTC unless it says), or a duration ago (``7d``, ``12h``, ``90m``)."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*d\s*", text)
    try:
        ago = float(m.group(1)) * 86400 if m else parse_duration(text)
    except ValueError:
        ago = None
    if ago is not None and not re.fullmatch(r"\s*\d{4}-.*", text):
        return datetime.fromtimestamp((now if now is not None else time.time()) - ago, UTC)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise HarnessError(f"--since {text!r}: give a date (2026-08-01), a time (2026-08-01T12:00) or a duration "
                           "ago (90m, 12h, 7d)") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def cmd_runs(args: argparse.Namespace) -> int:
    from harness.products.runs import history

    root = Path(args.runs_dir)
    if not root.is_dir():
        raise HarnessError(f"--runs-dir {root}: no such directory (runs are recorded under runs/ by default)")
    started = time.monotonic()
    found = history.select(history.entries(root, findings=bool(args.trend)), args.scenario, since(args.since))
    if args.trend:
        from harness.products.runs import trend

        out = trend.build(found, args.trend, args.step, Path(args.out) if args.out else root / f"trend-{args.trend}")
        print(f"harness: trend {out / 'index.html'}")
        return 0
    if args.json:
        import json

        for e in found:
            print(json.dumps(e.as_dict()))
        return 0
    for line in history.lines(found, root):
        print(line)
    print(f"harness: {len(found)} entries under {root} ({time.monotonic() - started:.2f} s)", file=sys.stderr)
    return 0
