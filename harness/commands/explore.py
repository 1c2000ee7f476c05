"""``harness explore``: the fault-point explorer's command: explore, write ``explore.json`` and its page, exit 3
when any schedule violates."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness.errors import HarnessError
from harness.explore.runner import explore
from harness.explore.schedules import OPS
from harness.explore.world import LAYOUTS, PROFILES


def check_args(backend: str | None, sync: str | None, layout: str | None, ops: str | None) -> list[str] | None:
    """The operations asked for; a layout must belong to the backend asked for (one line otherwise)."""
    if layout is not None:
        owners = [b for b, lays in LAYOUTS.items() if layout in lays]
        if not owners:
            raise HarnessError(f"unknown layout {layout!r}: choose one of "
                               f"{', '.join(x for lays in LAYOUTS.values() for x in lays)}")
        if backend is not None and backend not in owners:
            raise HarnessError(f"layout {layout!r} is {owners[0]}'s, not {backend}'s: choose one of "
                               f"{', '.join(LAYOUTS[backend])} or drop --backend")
    if ops is None:
        return None
    wanted = [o.strip() for o in ops.split(",") if o.strip()]
    unknown = [o for o in wanted if o not in OPS]
    if unknown or not wanted:
        raise HarnessError(f"unknown operation {', '.join(unknown) or repr(ops)} in --ops: choose from "
                           f"{', '.join(OPS)} (comma-separated)")
    if sync is not None and set(wanted) <= {"model-run" if sync == "one-lock" else "sync"}:
        raise HarnessError(f"--ops {ops} has nothing to explore under --sync {sync}: "
                           f"{'model-run is two-phase' if sync == 'one-lock' else 'sync is one-lock'}'s")
    return wanted


def cmd_explore(backend: str | None, sync: str | None, layout: str | None, fencing: str, ops: str | None,
                quick: bool, run_dir: str | None) -> int:
    wanted = check_args(backend, sync, layout, ops)
    if sync is not None and sync not in PROFILES:
        raise HarnessError(f"unknown sync profile {sync!r}: choose one of {', '.join(PROFILES)}")
    out = Path(run_dir or f"runs/explore-{time.strftime('%Y%m%d-%H%M%S')}")
    if layout is not None and backend is None:
        backend = next(b for b, lays in LAYOUTS.items() if layout in lays)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessError(f"cannot create the run directory {out}: {e.strerror}") from None
    print(f"harness: exploring {backend or 'both backends'}, {sync or 'both profiles'}, "
          f"{layout or 'every layout'}, fencing {fencing}{' (quick)' if quick else ''} -> {out}", file=sys.stderr)
    result = explore(backend=backend, sync=sync, layout=layout, fencing=fencing == "on", ops=wanted, quick=quick,
                     progress=lambda m: print(f"harness: {m}", file=sys.stderr, flush=True))
    (out / "explore.json").write_text(json.dumps(result, indent=1) + "\n")
    from reports.explore import write_page

    page = write_page(result, out)
    print(f"harness: {result['explored']} schedules in {result['seconds']:.0f} s, {result['violating']} violating; "
          f"{out / 'explore.json'}; {page}", file=sys.stderr)
    for s in result["schedules"][:5]:
        if s["violations"]:
            print(f"harness: violates: {'; '.join(s['steps'])}", file=sys.stderr)
    return 3 if result["violating"] else 0
