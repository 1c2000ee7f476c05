"""Run an exploration: every target's operations, every schedule, a progress line now and then, the totals."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from harness.products.explore import replayers
from harness.products.explore.schedules import Schedule, learn, ops_for, schedules, targets
from harness.products.explore.world import Lab, Target

QUICK_OPS = ("sync", "model-run", "delete", "prune")
REGION = "us-east-1"


def explore(*, backend: str | None, sync: str | None, layout: str | None, fencing: bool,
            ops: list[str] | None, quick: bool, progress: Callable[[str], None] = lambda _m: None,
            budget_s: float | None = None, uploads: str = "profile", shards: str = "model",
            replayer: replayers.Replayer | None = None) -> dict[str, Any]:
    """Explore in-process (moto's mock): the JSON of ``explore.json``. Nothing leaves the process: the clients
    get fake credentials and AWS's own endpoint names explicitly (no profile, no endpoint variable applies),
    which moto's mock answers. ``budget_s``: stop once that much wall time has passed (``complete`` false).
    ``replayer``: where each schedule's world comes from (``replayers.choose()``: forked from one prelude on
    Linux)."""
    import boto3
    from moto import mock_aws

    started = time.monotonic()
    done: list[Schedule] = []
    complete = True
    replayer = replayer or replayers.choose()
    with mock_aws():
        lab = Lab(boto3.Session(aws_access_key_id="explore", aws_secret_access_key="explore",  # noqa: S106
                                region_name=REGION))
        for target in targets(backend, sync, layout, fencing, quick, uploads, shards):
            for op in [o for o in ops_for(target.sync) if (ops is None or o in ops)
                       and (not quick or o in QUICK_OPS)]:
                seq = learn(target, op, lab)
                batch = list(schedules(target, op, seq, quick))
                bad = 0
                played = replayer.replay_all(batch, lab, quick)
                for _ in batch:
                    if budget_s is not None and time.monotonic() - started > budget_s:
                        complete = False
                        break
                    s = next(played)
                    done.append(s)
                    bad += s.violations > 0
                played.close()
                progress(f"{target.name} {op}: {len(seq)} requests, {len(batch)} schedules, {bad} violating "
                         f"({time.monotonic() - started:.0f} s)")
                if not complete:
                    break
            if not complete:
                progress(f"the budget of {budget_s:g} s is spent: stopping")
                break
    return {**summarize(done, time.monotonic() - started, quick), "complete": complete, "budget_s": budget_s}


def summarize(done: list[Schedule], seconds: float, quick: bool) -> dict[str, Any]:
    """Totals per target, operation and disturbance; the schedules, violating ones first."""
    per: Counter[tuple[str, str, str]] = Counter()
    bad: Counter[tuple[str, str, str]] = Counter()
    for s in done:
        key = (s.target.name, s.op, s.disturbance)
        per[key] += 1
        bad[key] += s.violations > 0
    ordered = sorted(done, key=lambda s: (s.violations == 0, s.target.name, s.op, s.boundary))
    return {"quick": quick, "seconds": round(seconds, 1), "explored": len(done),
            "violating": sum(1 for s in done if s.violations),
            "targets": sorted({s.target.name for s in done}),
            "totals": [{"target": t, "op": o, "disturbance": d, "schedules": n, "violating": bad[(t, o, d)]}
                       for (t, o, d), n in sorted(per.items())],
            "schedules": [s.as_json() for s in ordered]}


__all__ = ["Target", "explore"]
