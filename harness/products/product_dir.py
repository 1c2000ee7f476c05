"""The directory a story, a sweep or a climb writes its runs and page into: named for what ran and when,
never reused.

Each writes many runs below one directory; one that already holds something would mix two products' runs in
one page, so it is refused with the flag that picks another.
"""

from __future__ import annotations

import time
from pathlib import Path

from harness.core.errors import HarnessError
from harness.products.story.ladder import slug


def product_dir(kind: str, name: str, run_dir: str | Path | None, quick: bool) -> Path:
    """``run_dir``, or ``runs/<kind>-<name>[-quick]-<UTC time>``; an error when it exists and is not empty."""
    path = Path(run_dir or Path("runs") / f"{kind}-{slug(name)}{'-quick' if quick else ''}-"
                f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise HarnessError(f"{kind} directory {path} already exists and is not empty: choose another --run-dir")
    return path
