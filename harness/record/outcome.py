"""A run's outcome, computed once and said alike everywhere.

Four answers, each in the words every reader prints (the report's first screen, ``summary.json``'s
``findings.outcome``, ``run.json``'s ``outcome`` and ``outcome_line``, ``harness runs``, the web UI's list of
tests and the review notebook), so a run never reads "flat" in one place and "fell x3.95" in another:

- **how it ended** (``completion``): ``completed``; ``interrupted`` (SIGINT, i.e. Ctrl-C, SIGTERM or SIGHUP
  to ``harness run``: the user or the system ended it before its time); ``stopped early`` (an abort threshold
  ended it: the gate's own stop, its check failed); ``did not complete`` (a part the harness started died, a
  worker was lost, or the disk filled: exit 5; or its record was never closed). A web test ended with the UI's
  Stop button is ``completed``: Stop is how a web test ends when no run time was given, the user's own choice
  of length, not a cut;
- **the rate's verdict** (``rate``): how the rate moved, in words its numbers bear out (``fell x3.95, then held
  at the floor``), or ``too short to judge`` when the first segment after the warm-up holds fewer than
  ``MIN_START_SUCCESSES`` successful iterations or is shorter than a typical iteration (an 8 s web test whose
  first iterations had not finished reads "rose x12.5" otherwise); a stall is a verdict however short;
- **the bound** (``bound``): what bound the fleet and, when the bound changed between segments, where it moved,
  in one short sentence (the long sentence with every number stays in the report's bound section);
- **the checks** (``checks``): ``passed N/N``, ``FAILED k/N: names``, ``no checks``, or ``not evaluated`` for a
  run that did not complete (``harness run`` exits 5 without judging them, docs/cli.md). A check that cannot
  fail (``max_failure_ratio`` at 100 %, the default) is no check: ``harness/report/run/checks.py`` leaves it out, and
  so does this module for an older summary that still lists it.

Pure: no pandas, no matplotlib, so the Locust master (``run.json``) and ``harness runs`` (hundreds of runs) read
it cheaply.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

COMPLETED, INTERRUPTED, STOPPED_EARLY, DID_NOT_COMPLETE = "completed", "interrupted", "stopped early", \
    "did not complete"
SIGNALS = {"SIGINT": "Ctrl-C (SIGINT)", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP"}
WEB_STOP = "stopped from the web UI"
MIN_START_SUCCESSES = 10  # fewer successes in the first judged segment: its rate is the start-up, not the load
TOO_SHORT = "too short to judge"
NOT_EVALUATED = "not evaluated"


def times(x: float | None) -> str:
    return "n/a" if x is None else f"x{x:.3g}"


def shape_words(shape: str, degraded: bool, start: float, floor: float, end: float) -> str:
    """How the rate moved, in words its numbers bear out (``fell x5.75, then held at the floor``), never a bare
    shape name that could contradict them (a run that fell x5.75 and then held is not "flat")."""
    fell = f"fell {times(start / floor)}" if floor > 0 else "fell to no successful iteration"
    if shape == "stalled":
        return "stalled: no iteration succeeded at the end"
    if degraded:
        if shape == "still falling":
            return f"{fell} and was still falling at the end"
        if shape == "recovering":
            return f"{fell}, then recovered to {times(end / floor)} the floor" if floor > 0 else f"{fell}, recovered"
        return f"{fell}, then held at the floor"
    if shape == "still falling":
        return "fell at the end, though no segment was credibly below the start"
    if shape == "rising":
        return f"rose {times(end / start)}" if start > 0 else "rose"
    return "within the noise: no segment is credibly below the start"


# ---- how the run ended: run.json alone ------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    state: str  # COMPLETED, INTERRUPTED, STOPPED_EARLY, DID_NOT_COMPLETE
    short: str  # "interrupted by Ctrl-C (SIGINT) at 35 s of 90 s": what `harness runs` prints
    line: str  # the short words and what they mean for the report: its first screen


def _epoch(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


def _ran_s(info: dict[str, Any]) -> float | None:
    a, b = _epoch(info.get("started_at")), _epoch(info.get("ended_at"))
    return b - a if a is not None and b is not None and b >= a else None


def _planned_s(info: dict[str, Any]) -> float | None:
    """The test's bound: its run time, else the scenario's duration (a test without a run time stops there)."""
    opt = (info.get("options") or {}).get("run_time_s")
    if opt:
        return float(opt)
    d = ((info.get("scenario") or {}).get("fleet") or {}).get("duration_s")
    return float(d) if d else None


def _at(info: dict[str, Any]) -> str:
    ran, planned = _ran_s(info), _planned_s(info)
    if ran is None:
        return ""
    return f" at {ran:.0f} s" + (f" of {planned:.0f} s" if planned else "")


def _first_up(s: str) -> str:
    return s[:1].upper() + s[1:]


def completion(info: dict[str, Any]) -> Completion:
    """How the run ended, from its run.json alone (the rule in the module's docstring)."""
    reason = info.get("stop_reason") or ""
    if reason in SIGNALS:
        short = f"interrupted by {SIGNALS[reason]}{_at(info)}"
        return Completion(INTERRUPTED, short, f"{_first_up(short)}: this report covers what ran before it.")
    failed = [p for p in info.get("failed_parts") or [] if isinstance(p, dict)]
    if failed:
        from harness.record.parts import PartFailure

        p = PartFailure.from_dict(failed[0])
        verb = "filled" if p.part == "disk" else "exited" if p.part != "locust-worker" else "was lost"
        at = f" at {failed[0]['at_s']:.0f} s" if isinstance(failed[0].get("at_s"), int | float) else ""
        short = f"{DID_NOT_COMPLETE}: {p.what()} {verb}{at}"
        more = f" ({len(failed) - 1} more in run.json's failed_parts)" if len(failed) > 1 else ""
        return Completion(DID_NOT_COMPLETE, short, f"The run did not complete: {failed[0].get('line') or short}"
                                                   f"{more}. This report is built from what was recorded before; "
                                                   "its checks are not evaluated.")
    aborted = info.get("aborted")
    if isinstance(aborted, dict):
        short = f"{STOPPED_EARLY} by a check at {float(aborted.get('at_s') or 0):.0f} s"
        return Completion(STOPPED_EARLY, short, f"{_first_up(short)}: {aborted.get('line')}.")
    status = info.get("status")
    if status not in (None, "finished"):
        short = f"{DID_NOT_COMPLETE}: its record was never closed (status {status})"
        return Completion(DID_NOT_COMPLETE, short, f"The run {short}: it is still being written, or the harness "
                                                   "died; this report covers the rows recorded so far.")
    ran = _ran_s(info)
    how = f"{WEB_STOP}{_at(info)}" if reason == WEB_STOP else (f"{ran:.0f} s" if ran is not None else "")
    short = f"{COMPLETED} ({how})" if how else COMPLETED
    return Completion(COMPLETED, short, f"{_first_up(short)}.")


def run_json_fields(info: dict[str, Any]) -> dict[str, str]:
    """What run.json says of the outcome (``outcome``, ``outcome_line``), beside ``status``, which keeps its
    meaning (anything but ``finished`` marks a run partial)."""
    c = completion(info)
    return {"outcome": c.state, "outcome_line": c.short}


# ---- the rate, the bound, the checks: the report's findings -----------------------------------------------------


def too_short(f: dict[str, Any]) -> str | None:
    """Why the rate cannot be judged (None: it can): the first judged segment holds too few successes, or is
    shorter than a typical successful iteration. A stall is judged however short."""
    fl = f["fleet"]
    if fl["shape"] == "stalled" or not fl.get("levels"):
        return None
    start = fl["levels"][0]
    seg = float(start["t1"]) - float(start["t0"])
    n = start.get("successes")
    if n is not None and n < MIN_START_SUCCESSES:
        return (f"{n} successful iteration{'' if n == 1 else 's'} in the first {seg:.0f} s after the warm-up, "
                f"{MIN_START_SUCCESSES} needed")
    typical = next((r.get("p50") for r in f.get("percentiles") or [] if r.get("name") == "iteration (succeeded)"),
                   None)
    if typical and seg < typical / 1000:
        return f"its {seg:.1f} s segments are shorter than an iteration ({typical / 1000:.1f} s)"
    return None


def rate_words(f: dict[str, Any]) -> tuple[bool, str]:
    """(judged, words): how the rate moved, or ``too short to judge: why``."""
    why = too_short(f)
    if why:
        return False, f"{TOO_SHORT}: {why}"
    fl = f["fleet"]
    return True, shape_words(fl["shape"], fl["degraded"], fl["start_rate"], fl["floor_rate"], fl["end_rate"])


LABELS = {"lock": "the lock", "step": "the workers' own time in", "capacity": "the modelled capacity of",
          "partition": "the hot partition key", "generator": "the load generator, Locust process",
          "stand-in": "the stand-in", "machine": "the machine's cores"}


MODEL_PARTITION = "partition "  # a partition of the fidelity model's (``partition 3 of 4``), not a key


def resource_words(kind: str, name: str) -> str:
    """A resource in words: ``the lock ns:w0``, ``the hot partition key FILE#x``, ``the modelled partition 3 of
    4`` (one rule for the report, the live tab and the outcome line)."""
    if kind == "partition" and name.startswith(MODEL_PARTITION):
        return f"the modelled {name}"
    return LABELS.get(kind, kind) + (f" {name}" if name and kind != "machine" else "")


def _label(d: dict[str, Any]) -> str:
    kind = d.get("kind")
    if not kind:
        return "nothing above 50 % busy"
    what = resource_words(kind, d.get("name") or "")
    u = d.get("utilization")
    return what + (f" ({u * 100:.0f} %)" if isinstance(u, int | float) else "")


HOPS = {"lock": "the lock", "step": "", "capacity": "capacity", "partition": "key", "generator": "Locust process",
        "stand-in": "the stand-in", "machine": "the machine"}


def _hop(kind: Any, name: Any, u: float | None) -> str:
    """A segment's bound in a few words: ``commit 99 %``, ``the stand-in GetItem 83 %``."""
    if not kind:
        return "nothing above 50 %"
    modelled = kind == "partition" and str(name or "").startswith(MODEL_PARTITION)
    what = " ".join(x for x in ("" if modelled else HOPS.get(kind, kind), "" if kind == "machine" else name or "")
                    if x)
    return what + (f" {u * 100:.0f} %" if u is not None else "")


def _hops(per: list[dict[str, Any]]) -> list[tuple[tuple[Any, Any], str, float, float]]:
    """Consecutive segments with one bound: (kind and name, its words at its highest, from s, to s)."""
    runs: list[list[Any]] = []  # [key, utilizations, from, to]
    for d in per:
        key, u = (d.get("kind"), d.get("name")), d.get("utilization")
        if runs and runs[-1][0] == key:
            runs[-1][1].extend([u] if u is not None else [])
            runs[-1][3] = float(d["seconds"][1])
        else:
            runs.append([key, [u] if u is not None else [], float(d["seconds"][0]), float(d["seconds"][1])])
    return [(k, _hop(*k, max(u) if u else None), a, b) for k, u, a, b in runs]


def bound_words(f: dict[str, Any]) -> tuple[bool, str]:
    """(moved, words): the bound, and where it moved when it did, in one short sentence
    (``the workers' own time in commit (99 %); it moved at 61 s to the stand-in GetItem 83 %``)."""
    b = f.get("bottleneck") or {}
    if not b.get("kind"):
        said = "nothing: no resource was 50 % busy, so the fleet is paced by its own think time"
    else:
        said = _label(b)
    hops = _hops(f.get("bottlenecks") or []) if f.get("bottleneck_moved") else []
    if len(hops) < 2:
        return False, said
    if len(hops) == 2 and hops[0][0] == (b.get("kind"), b.get("name")):
        return True, f"{said}; it moved at {hops[1][2]:.0f} s to {hops[1][1]}"
    moves = ", ".join([f"{hops[0][1]} to {hops[0][3]:.0f} s", *(f"{w} from {a:.0f} s" for _, w, a, _ in hops[1:])])
    return True, f"{said}; it moved: {moves}"


def cannot_fail(c: dict[str, Any]) -> bool:
    """A check no run can fail: the failure ratio within 100 % (the default ``max_failure_ratio``)."""
    return c.get("name") == "max_failure_ratio" and float(c.get("limit") or 0) >= 1.0


def checks_words(f: dict[str, Any] | None, state: str) -> tuple[str, str]:
    """(state, words): ``passed``/``failed``/``none``/``not evaluated``, and the words every reader prints."""
    if state == DID_NOT_COMPLETE:
        return NOT_EVALUATED, f"{NOT_EVALUATED} (the run did not complete)"
    if f is None:  # a --no-report run: `harness run` judged them, but nothing kept their results
        return NOT_EVALUATED, "not judged"
    checks = [c for c in f.get("checks") or [] if not cannot_fail(c)]
    if not checks:
        return "none", "no checks"
    failed = [c["name"] for c in checks if not c.get("passed")]
    if failed:
        return "failed", f"FAILED {len(failed)}/{len(checks)}: {', '.join(failed)}"
    return "passed", f"passed {len(checks)}/{len(checks)}"


@dataclass(frozen=True)
class Outcome:
    """Everything a reader says of a run's outcome (``summary.json`` ``findings.outcome``)."""

    completion: str  # COMPLETED, INTERRUPTED, STOPPED_EARLY, DID_NOT_COMPLETE
    completion_short: str
    completion_line: str
    rate_judged: bool
    rate: str | None  # None without a report
    bound_moved: bool
    bound: str | None
    checks_state: str  # passed, failed, none, not evaluated
    checks: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The whole outcome in one line (the review notebook, a log)."""
        parts = [self.completion_short, self.rate, f"bound by {self.bound}" if self.bound else None,
                 f"checks {self.checks}"]
        return "; ".join(p for p in parts if p)


def of(info: dict[str, Any], f: dict[str, Any] | None) -> Outcome:
    """The outcome of a run from its run.json and its findings (None: a run never reported)."""
    c = completion(info)
    state, checks = checks_words(f, c.state)
    if f is None:
        return Outcome(c.state, c.short, c.line, False, None, False, None, state, checks)
    judged, rate = rate_words(f)
    moved, bound = bound_words(f)
    return Outcome(c.state, c.short, c.line, judged, rate, moved, bound, state, checks)
