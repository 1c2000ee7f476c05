"""Hand freed memory back to the operating system, so a long run's report peaks at what it holds.

A report of a nine-hour run frees hundreds of MB as it goes (the Arrow table its rows came from, the lock's
parsed history and its intervals), but neither allocator gives them back by itself: Arrow's pool (mimalloc)
keeps the pages it freed, and glibc's ``malloc`` keeps freed blocks in its heap (past the first large free,
arrays of a few MB come from the heap, not from pages of their own), so every later allocation adds to the
peak instead of reusing them. ``give_back`` asks both to return what is free; it costs a few ms and is a
no-op where there is no glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _trim():
    """glibc's ``malloc_trim``, or None (musl, macOS: nothing to call)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the free pages of Arrow's pool and of the C heap to the system."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    trim = _trim()
    if trim is not None:
        trim(0)
