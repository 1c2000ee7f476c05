"""``harness explore --random N --seed S``: random multi-actor schedules on every target, the violating ones shrunk
and stored as steps that replay without Hypothesis (``--replay explore.json``).

Per target (backend, profile, layout, fencing) the run draws its share of N schedules in rounds (``draw.py``):
a round ends when Hypothesis has found a violation of a kind not found yet and shrunk it; the schedule is then
made 1-minimal here (each step left out in turn, kept out while the same kind of violation stays), replayed from
its plain steps, and stored; the next round looks for another kind, until the share is drawn, ``MAX_FINDS`` kinds
are found, or the target's part of the wall-time budget is spent. Everything runs in-process (moto's mock, a
FakeClock, inline pools), with commit ids and nonces drawn from a seeded generator, so a schedule plays the
same way every time.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.core.errors import HarnessError
from harness.products.explore.draw import Kind, Round, round_seed, run_round, signature, vocabulary, weight
from harness.products.explore.play import PRELUDE, Troupe, play
from harness.products.explore.world import Target

MAX_FINDS = 4  # kinds of violation looked for per target before its share goes to the next
SHRINK_S = 30.0  # Hypothesis's shrinking of one find, at most (minimize() then makes it 1-minimal)
REGION = "us-east-1"


class _Ids:
    """uuid4, from a generator reset at each schedule: nonces and commit ids are the same on every replay."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)


IDS = _Ids()


@contextmanager
def simulation(home: Path | None = None) -> Iterator[Troupe]:
    """In-process AWS (moto's mock, fake credentials, AWS's endpoint names: no profile or endpoint variable
    applies) and seeded ids; the actors' clients. ``home``: where Hypothesis keeps what it caches (the constants
    it reads from the code; its example database is off), instead of ``.hypothesis`` in the working directory."""
    import boto3
    from moto import mock_aws

    if home is not None:
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(home)
    real = uuid.uuid4
    uuid.uuid4 = IDS.uuid4  # type: ignore[assignment]
    try:
        with mock_aws():
            yield Troupe(boto3.Session(aws_access_key_id="explore", aws_secret_access_key="explore",  # noqa: S106
                                       region_name=REGION))
    finally:
        uuid.uuid4 = real  # type: ignore[assignment]


def replay(target: Target, steps: list[dict], troupe: Troupe) -> Any:
    IDS.rng.seed(0)
    return play(target, steps, troupe)


def minimize(target: Target, steps: list[dict], found: dict[str, int], troupe: Troupe,
             deadline: float) -> list[dict]:
    """Leave each step out in turn (last first); keep it out while the same kinds of finding stay."""
    i = len(steps) - 1
    first = 1 if steps and "config" in steps[0] else 0  # a drawn configuration stays: the schedule says it
    while i >= first and time.monotonic() < deadline:
        trial = steps[:i] + steps[i + 1:]
        out = replay(target, trial, troupe)
        if out.violations and set(out.findings) == set(found):
            steps = trial
        i -= 1
    return steps


def _one(target: Target, rnd: Round, steps: list[dict], out: Any, seed: int, n: int) -> dict[str, Any]:
    from hypothesis import __version__

    return {"target": target.name, "backend": target.backend, "sync": target.sync, "layout": target.layout,
            "fencing": target.fencing, "uploads": target.uploads, "shards": target.shards, "seed": seed, "round": n,
            "hypothesis": __version__,
            "drawn_at": rnd.found_at, "drawn_length": len(rnd.first or []), "length": len(steps),
            "signature": signature(steps, out.findings), "violations": out.violations, "findings": out.findings,
            "steps": out.words, "prelude": PRELUDE, "schedule": steps,
            "replays": bool(out.violations) and set(out.findings) == set(rnd.best[1].findings if rnd.best else ())}


def explore_target(target: Target, troupe: Troupe, quota: int, seed: int, deadline: float,
                   hard_deadline: float, progress: Callable[[str], None],
                   shrink_s: float = SHRINK_S) -> tuple[dict, list[dict]]:
    """One target's share: rounds until ``quota`` schedules are drawn, ``MAX_FINDS`` kinds found, or time is up."""
    t0, c0 = time.monotonic(), time.process_time()
    IDS.rng.seed(0)
    labels = vocabulary(target, troupe)
    weights = {lab: weight(lab) for lab in labels if weight(lab) > 1}
    progress(f"{target.name}: disturbances aimed at {len(labels)} kinds of request, weighted "
             + ", ".join(f"{lab} x{w}" for lab, w in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])))
             + " (every other x1)")
    known: list[Kind] = []
    found: list[dict] = []
    fired: Counter[str] = Counter()
    total = {"target": target.name, "schedules": 0, "violating": 0, "finds": 0, "shrink_runs": 0, "rounds": 0,
             "errors": 0, "error": None, "weights": weights, "draws": {k: list(v) for k, v in target.draws.items()}}
    digest = hashlib.sha256()
    n = 0
    while total["schedules"] < quota and len(found) < MAX_FINDS and time.monotonic() < deadline:
        rnd = run_round(Round(target, troupe, labels, known, deadline, round_seed(seed, target, n),
                              quota - total["schedules"], reset=lambda: IDS.rng.seed(0), shrink_s=shrink_s))
        total["schedules"] += rnd.drawn
        fired.update(rnd.fired)
        total["violating"] += rnd.violating
        total["shrink_runs"] += rnd.shrink_runs
        total["rounds"] += 1
        total["errors"] += len(rnd.errors)
        total["error"] = total["error"] or (rnd.errors[0] if rnd.errors else None)
        digest.update(rnd.digest.encode())
        if rnd.best is not None:
            best, was = rnd.best
            steps = minimize(target, best, was.findings, troupe, hard_deadline)
            out = replay(target, steps, troupe)
            one = _one(target, rnd, steps, out, seed, n)
            kind = Kind.of(steps, out.findings)
            if kind in known:  # shrunk to a kind found before: one more instance of it
                known.append(Kind.of(best, was.findings))
            else:
                known.append(kind)
                found.append(one)
                progress(f"{target.name}: found {one['signature']} at schedule {total['schedules']} (round {n}), "
                         f"shrunk {one['drawn_length']} -> {one['length']} steps")
        elif rnd.out_of_time or rnd.drawn == 0:
            break
        n += 1
    total["finds"] = len(found)
    total["fired"] = dict(sorted(fired.items()))  # "<fault> at <seal|fate read|record write|collection>": times
    total["seconds"] = round(time.monotonic() - t0, 1)
    total["cpu_s"] = round(time.process_time() - c0, 1)  # this process's CPU: the pace on a machine it had alone
    total["drawn_digest"] = digest.hexdigest()[:16]
    progress(f"{target.name}: {total['schedules']} schedules, {total['violating']} violating, {len(found)} kinds "
             f"found ({total['seconds']:.0f} s)")
    return total, found


def simulate(targets: list[Target], n: int, seed: int, budget_s: float | None,
             progress: Callable[[str], None] = lambda _m: None, shrink_s: float = SHRINK_S,
             home: Path | None = None) -> dict[str, Any]:
    """The JSON of a random exploration's ``explore.json``: totals per target, the shrunk violating schedules."""
    from hypothesis import __version__

    started = time.monotonic()
    hard = started + budget_s if budget_s else float("inf")
    totals, schedules = [], []
    with simulation(home) as troupe:
        for i, target in enumerate(targets):
            left = len(targets) - i
            quota = (n - sum(t["schedules"] for t in totals)) // left if left else 0
            share = (hard - time.monotonic()) / left if budget_s else float("inf")
            total, found = explore_target(target, troupe, quota, seed, time.monotonic() + share, hard, progress,
                                          shrink_s)
            totals.append(total)
            schedules += found
    seconds = time.monotonic() - started
    played = sum(t["schedules"] + t["shrink_runs"] for t in totals)
    cpu = sum(t["cpu_s"] for t in totals)
    return {"mode": "random", "quick": False, "seed": seed, "requested": n, "budget_s": budget_s,
            "hypothesis": __version__, "seconds": round(seconds, 1),
            "explored": sum(t["schedules"] for t in totals), "violating": len(schedules),
            "violating_drawn": sum(t["violating"] for t in totals), "played": played,
            "pace": round(played / seconds, 2) if seconds else None,
            "cpu_pace": round(played / cpu, 2) if cpu else None,  # schedules a CPU-second (a busy machine's share)
            "targets": [t.name for t in targets], "totals": totals, "schedules": schedules,
            "note": f"a seed draws the same schedules only with Hypothesis {__version__} and this code; a stored "
                    "schedule replays on any: harness explore --replay explore.json"}


def load_schedules(path: str | Path, index: int | None) -> list[dict]:
    """The stored schedules of an ``explore.json`` (``index``: the 1-based one only)."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise HarnessError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError:
        raise HarnessError(f"{path} is not JSON: give the explore.json a `harness explore --random` wrote") from None
    stored = [s for s in doc.get("schedules", []) if isinstance(s, dict) and "schedule" in s] \
        if isinstance(doc, dict) else []
    if not stored:
        raise HarnessError(f"{path} stores no schedule to replay: give an explore.json of `harness explore "
                           "--random` that found a violation")
    if index is not None:
        if not 1 <= index <= len(stored):
            raise HarnessError(f"--schedule {index}: {path} stores {len(stored)} schedule(s); choose 1 to "
                               f"{len(stored)}")
        return [stored[index - 1]]
    return stored


def replay_stored(stored: list[dict]) -> list[Any]:
    """Play each stored schedule again (no Hypothesis): its outcome, in the explorer's words."""
    with simulation() as troupe:  # (nothing of Hypothesis runs: it caches nothing)
        return [replay(Target(s["backend"], s["sync"], s["layout"], s["fencing"], s.get("uploads", "profile"),
                              s.get("shards", "model")), s["schedule"], troupe)
                for s in stored]


__all__ = ["MAX_FINDS", "load_schedules", "replay_stored", "simulate", "simulation"]
