"""``harness explore``: the fault-point explorer's command (every boundary, or ``--random N`` drawn schedules, or
``--replay`` of stored ones): explore, write ``explore.json`` and its page, exit 3 when any schedule violates."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from harness.core.durations import parse_duration
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode
from harness.products.explore.runner import explore
from harness.products.explore.schedules import OPS
from harness.products.explore.world import LAYOUTS, PROFILES


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


def _say(message: str) -> None:
    print(f"harness: {message}", file=sys.stderr, flush=True)


def _run_dir(run_dir: str | None) -> Path:
    out = Path(run_dir or f"runs/explore-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessError(f"cannot create the run directory {out}: {e.strerror}") from None
    return out


def _budget(budget: str | None) -> float | None:
    if budget is None:
        return None
    try:
        seconds = parse_duration(budget)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise HarnessError(f"--budget {budget!r} is not a wall time: give one such as 90s, 10m or 1h")
    return seconds


def _write(result: dict, out: Path) -> Path:
    (out / "explore.json").write_text(json.dumps(result, indent=1) + "\n")
    from harness.products.explore.page import write_page

    return write_page(result, out)


def cmd_explore(backend: str | None, sync: str | None, layout: str | None, fencing: str, ops: str | None,
                quick: bool, run_dir: str | None, budget: str | None = None, *, uploads: str = "profile",
                shards: str = "model") -> int:
    wanted = check_args(backend, sync, layout, ops)
    for option, value in (("--uploads-at-commit", uploads), ("--s3-shards", shards)):
        if value == "random":
            raise HarnessError(f"{option} random draws a configuration for each schedule of --random: choose one "
                               f"for the boundary explorer, or add --random N")
    if sync is not None and sync not in PROFILES:
        raise HarnessError(f"unknown sync profile {sync!r}: choose one of {', '.join(PROFILES)}")
    seconds = _budget(budget)
    out = _run_dir(run_dir)
    if layout is not None and backend is None:
        backend = next(b for b, lays in LAYOUTS.items() if layout in lays)
    _say(f"exploring {backend or 'both backends'}, {sync or 'both profiles'}, {layout or 'every layout'}, fencing "
         f"{fencing}{' (quick)' if quick else ''}{f', at most {budget}' if budget else ''} -> {out}")
    result = explore(backend=backend, sync=sync, layout=layout, fencing=fencing == "on", ops=wanted, quick=quick,
                     progress=_say, budget_s=seconds, uploads=uploads, shards=shards)
    page = _write(result, out)
    cut = "" if result.get("complete", True) else " (the budget ran out first: not every schedule was played)"
    _say(f"{result['explored']} schedules in {result['seconds']:.0f} s, {result['violating']} violating{cut}; "
         f"{out / 'explore.json'}; {page}")
    for s in result["schedules"][:5]:
        if s["violations"]:
            _say(f"violates: {'; '.join(s['steps'])}")
    return ExitCode.CHECKS_FAILED if result["violating"] else ExitCode.OK


def cmd_explore_random(backend: str | None, sync: str | None, layout: str | None, fencing: str, n: int,
                       seed: int | None, budget: str | None, run_dir: str | None, *, quick: bool = False,
                       ops: str | None = None, uploads: str = "profile", shards: str = "model") -> int:
    """``--random N``: N random multi-actor schedules over the targets, violating ones shrunk and stored."""
    if quick or ops is not None:
        raise HarnessError(f"{'--quick' if quick else '--ops'} is the boundary explorer's: --random draws whole "
                           "schedules of every operation (drop it, or drop --random)")
    if n < 1:
        raise HarnessError(f"--random {n}: give the number of schedules to draw, 1 or more")
    check_args(backend, sync, layout, None)
    seconds = _budget(budget)
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "big")
    if layout is not None and backend is None:
        backend = next(b for b, lays in LAYOUTS.items() if layout in lays)
    out = _run_dir(run_dir)
    from harness.products.explore.schedules import targets
    from harness.products.explore.simulate import simulate

    chosen = targets(backend, sync, layout, fencing == "on", quick=layout is None, uploads=uploads, shards=shards)
    _say(f"drawing {n} random schedules over {len(chosen)} target(s) ({', '.join(t.name for t in chosen)}), "
         f"seed {seed}{f', at most {budget}' if budget else ''} -> {out}")
    result = simulate(chosen, n, seed, seconds, progress=_say, home=out / "hypothesis")
    page = _write(result, out)
    _say(f"{result['explored']} schedules drawn in {result['seconds']:.0f} s ({result['pace']} played a second, "
         f"{result['cpu_pace']} a CPU-second, shrinking included), {result['violating_drawn']} violating, "
         f"{result['violating']} kind(s) of violation shrunk and stored; {out / 'explore.json'}; {page}")
    for i, s in enumerate(result["schedules"], 1):
        _say(f"violates ({s['target']}, seed {s['seed']}, round {s['round']}, drawn {s['drawn_length']} steps, "
             f"shrunk to {s['length']}; replay: harness explore --replay {out / 'explore.json'} --schedule {i}):")
        for step in s["steps"]:
            print(f"    {step}", file=sys.stderr)
    _say(result["note"])
    return ExitCode.CHECKS_FAILED if result["violating"] else ExitCode.OK


def cmd_explore_replay(path: str, index: int | None) -> int:
    """``--replay explore.json``: its stored schedules played again (no Hypothesis), each in the explorer's words."""
    from harness.products.explore.simulate import load_schedules, replay_stored

    stored = load_schedules(path, index)
    bad = 0
    for i, (s, out) in enumerate(zip(stored, replay_stored(stored), strict=True), 1):
        what = f" {s['what']}:" if s.get("what") else ""
        _say(f"schedule {index or i} ({s['target']}, {s['length']} steps):{what} {out.then()[len('then: '):]}"
             f"{'' if out.violations else ' (it violated when stored: the code changed since)'}")
        for step in out.words:
            print(f"    {step}", file=sys.stderr)
        bad += out.violations > 0
    return ExitCode.CHECKS_FAILED if bad else ExitCode.OK
