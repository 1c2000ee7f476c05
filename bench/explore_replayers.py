"""The quick exploration's cost with each schedule's world made anew (``Fresh``) beside forked from one prelude
(``Forked``), alternately, in one process: wall and CPU seconds (the children's included), their medians and
ratios, and whether both found the same schedules with the same findings.

    python bench/explore_replayers.py                 # both backends, fencing on, 3 rounds
    python bench/explore_replayers.py --rounds 5 --backend s3
    python bench/explore_replayers.py --quick         # s3's one-lock prune only, one round (CI, seconds)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from typing import Any

from harness.products.explore.replayers import Forked, Fresh, Replayer
from harness.products.explore.runner import explore


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(replayer: Replayer, backend: str | None, sync: str | None,
            ops: list[str] | None) -> tuple[float, float, dict[str, Any]]:
    """(wall s, CPU s, explore.json) of one quick fenced exploration."""
    wall, cpu = time.monotonic(), _cpu()
    out = explore(backend=backend, sync=sync, layout=None, fencing=True, ops=ops, quick=True, replayer=replayer)
    return time.monotonic() - wall, _cpu() - cpu, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each (default 3)")
    ap.add_argument("--backend", choices=("dynamodb", "s3"), help="one backend (default: both)")
    ap.add_argument("--quick", action="store_true", help="one round of s3's one-lock prune only (CI)")
    args = ap.parse_args(argv)
    rounds, backend, sync, ops = ((1, "s3", "one-lock", ["prune"]) if args.quick
                                  else (args.rounds, args.backend, None, None))
    runs: dict[str, list[tuple[float, float]]] = {"fresh": [], "forked": []}
    found: dict[str, list[Any]] = {}
    for _ in range(rounds):
        for name, replayer in (("fresh", Fresh()), ("forked", Forked())):
            wall, cpu, out = measure(replayer, backend, sync, ops)
            runs[name].append((wall, cpu))
            found[name] = [(s["target"], s["op"], s["boundary"], s["disturbance"], s["other"], s["violations"],
                            s["findings"], s["steps"]) for s in out["schedules"]]
            print(f"{name:>6}: {out['explored']} schedules, {out['violating']} violating, {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU", flush=True)
    (fw, fc), (kw, kc) = ((statistics.median(w for w, _ in runs[k]), statistics.median(c for _, c in runs[k]))
                          for k in ("fresh", "forked"))
    print(f"median of {rounds}: fresh {fw:.1f} s wall / {fc:.1f} s CPU, forked {kw:.1f} s / {kc:.1f} s; "
          f"forked / fresh: wall x{kw / fw:.2f}, CPU x{kc / fc:.2f}")
    same = found["fresh"] == found["forked"]
    print(f"the same schedules, findings and steps: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
