"""Files written whole or not at all, through a temporary name no other writer shares.

A fixed temporary name (``plan.json.tmp``) lets two writers of one directory write into the same file and
rename it from under each other (``FileNotFoundError ... plan.json.tmp -> plan.json``); a name unique to the
process and the call cannot collide, and a failed write removes its own temporary file.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def temp_beside(path: Path) -> Path:
    """A temporary name in ``path``'s directory (so the rename is atomic), unique to this process and call."""
    return path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def write_text(path: Path, text: str) -> Path:
    """``path`` replaced by ``text`` whole (a reader sees the old file or the new one, never half)."""
    tmp = temp_beside(path)
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
