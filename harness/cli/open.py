"""``harness run``'s and ``harness climb``'s open-fleet and check options: ``--rate`` and the check limits.

Kept beside ``harness.cli.run`` so the run's options can grow without growing it; ``add_arguments`` adds them
to ``harness run`` (one rate) or ``harness climb`` (a range and its steps) and ``options`` reads them back.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.parser import duration, old_option
from harness.core.rates import parse_rate


def one_rate(text: str) -> float:
    """``harness run --rate``: one rate; a range is a climb, a command of its own (one line naming it)."""
    if ".." in text:
        raise argparse.ArgumentTypeError(f"a range of rates is a climb: `harness climb SCENARIO --rate {text}` "
                                         "(docs/cli.md: old spellings)")
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def rate_range(text: str) -> tuple[float, float]:
    """``harness climb --rate LO..HI`` (``1/s..8/s``): the range the saturation climb steps through."""
    if ".." not in text:
        raise argparse.ArgumentTypeError(f"a climb steps through a range LO..HI, e.g. 1/s..8/s (got {text!r}; one "
                                         "rate is `harness run SCENARIO --rate RATE`)")
    try:
        lo, hi = (parse_rate(part) for part in text.split("..", 1))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if hi <= lo:
        raise argparse.ArgumentTypeError(f"a rate range climbs: {text} has its high end at or below its low end")
    return lo, hi


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a ratio: {text!r} (use e.g. 0.01 for 1 %)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a failure ratio is between 0 and 1, got {text}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (iterations a second, e.g. 2.5)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_arguments(r: argparse.ArgumentParser, climb: bool = False) -> None:
    """The open-fleet options: ``climb`` (``harness climb``) takes a required range and its steps."""
    o = r.add_argument_group("open arrivals and checks", "syncs that arrive at a rate, and the run's gates (exit 3)")
    if climb:
        o.add_argument("--rate", type=rate_range, required=True, metavar="LO..HI", help="climb from LO to HI "
                       "(1/s..8/s) in --steps runs of open arrivals, after a closed one, and find where the wait "
                       "grows without bound; --users caps the users running at once")
        o.add_argument("--steps", type=int, default=5, metavar="N", help="this many rates, LO and HI included "
                       "(default 5), each run for --duration")
    else:
        o.add_argument("--rate", type=one_rate, metavar="RATE", help="open arrivals at this rate (2/s, 120/min) "
                       "whatever the scenario's fleet; --users then caps the users running at once (a range LO..HI "
                       "is `harness climb`)")
        old_option(r, "--steps", "`harness climb SCENARIO --rate LO..HI --steps N`")
    o.add_argument("--max-p99-wait", type=duration, metavar="DURATION", help="fail (exit 3) when the wait's 99th "
                   "percentile (intended start to end) is above this, e.g. 30s; overrides [checks] max_p99_wait")
    o.add_argument("--max-failure-ratio", type=_ratio, metavar="RATIO",
                   help="fail when more than this share of iterations failed; overrides [checks] max_failure_ratio")
    o.add_argument("--min-rate", type=_positive, metavar="PER_S", help="fail when the fleet's rate in the last "
                   "[checks] window is below this many iterations a second; overrides min_rate_last_window")


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The RunOptions fields these arguments set (a climb sets each step's rate itself)."""
    return {"rate_per_s": None if isinstance(args.rate, tuple) else args.rate,
            "checks": {"max_p99_wait_s": args.max_p99_wait, "max_failure_ratio": args.max_failure_ratio,
                       "min_rate_last_window": args.min_rate}}
