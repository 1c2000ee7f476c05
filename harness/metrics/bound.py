"""What the fleet is bound by: the busiest resource, with its evidence, in one sentence.

A performance engineer asks first "what is saturated". The candidates are the
shared resources (each lock key, the table's and each GSI's capacity, the
hottest partition key, each load-generating Locust process, the stand-in, the
machine's cores: ``harness/metrics/machine.py``) and
the workers themselves (``step``: every worker inside an iteration all the time,
most of it in one step, with no shared resource saturated: the fleet is bound
by its own iteration time). The rule, in order:

1. a shared resource at or above its saturation mark (80 %; a load generator
   90 %, Locust's own mark, or pegged at 90 % in 40 % of its samples; a stand-in by its own CPU 90 % of a core; the
   machine 90 % of its cores used by the harness's own processes) is the bound;
   of several, the generator first (when it is saturated every other number
   measures it), then the busiest, the machine only when nothing else is
   saturated (a lock, a key or a stand-in that is saturated is the more
   specific bound); other load on the machine is a note, never the bound;
2. else, when the workers are busy at least half the time, the step they spend
   it in;
3. else the busiest resource above 50 %;
4. else nothing: the fleet is paced by its own think time (``None``).

A stretch in which at least half the iterations failed to connect (``spinning``) names neither the generator nor
the machine: their CPU went to failing at once, not to load.

The report (``reports/``) and the web UI's harness tab both call ``choose`` and
``sentence``, on the same definitions of utilization, so they name the same
bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from harness.record.outcome import resource_words

KINDS = ("lock", "step", "capacity", "partition", "generator", "stand-in", "machine")
SATURATED = {"generator": 0.9, "machine": 0.9}
SATURATED_DEFAULT = 0.8
# A Locust process (one gevent loop on one core) rarely holds a mean of 90 %: between its pegged samples it
# waits on its sockets. At or above 90 % in this share of its samples, with its interval reaching 90 %, it is
# saturated: a 100-worker fleet in one process at a mean 85 % (>= 90 % in 47 % of its samples) ran 40 it/s,
# the same fleet in two processes 57 it/s.
GENERATOR_PEGGED_SHARE = 0.4
BUSY = 0.5  # below this nothing binds the fleet


@dataclass(frozen=True)
class Resource:
    """One candidate: its utilization (0..1, a share of time or of a limit) over a stretch, and why."""

    kind: str
    name: str
    utilization: float
    interval: tuple[float, float] | None = None  # 95 % interval on the utilization
    evidence: dict[str, Any] = field(default_factory=dict)
    candidate: bool = True  # False: shown, but cannot bind the fleet (a lock with one holder, no hard limit)
    mark: float | None = None  # its own saturation mark (a stand-in's CPU: 90 % of a core), else its kind's

    @property
    def saturated(self) -> bool:
        mark = self.mark if self.mark is not None else SATURATED.get(self.kind, SATURATED_DEFAULT)
        pegged = (self.evidence.get("saturated_share") or 0.0) >= GENERATOR_PEGGED_SHARE
        if self.kind == "generator" and self.candidate and pegged and self.interval and self.interval[1] >= mark:
            return True
        return self.utilization >= mark

    def label(self) -> str:
        return resource_words(self.kind, self.name)


def choose(resources: list[Resource]) -> Resource | None:
    """The bound among ``resources`` (see the module's rule), or None when nothing is half busy."""
    pool = [r for r in resources if r.candidate and r.utilization == r.utilization]
    shared = [r for r in pool if r.kind != "step"]
    saturated = [r for r in shared if r.saturated]
    if saturated:  # the generator first; the machine only when nothing of its own (a lock, a key, ...) is
        gen = [r for r in saturated if r.kind == "generator"]
        own = [r for r in saturated if r.kind != "machine"]
        return max(gen or own or saturated, key=lambda r: r.utilization)
    steps = [r for r in pool if r.kind == "step" and r.utilization >= BUSY]
    if steps:
        return max(steps, key=lambda r: r.utilization)
    busy = [r for r in shared if r.utilization >= BUSY]
    return max(busy, key=lambda r: r.utilization) if busy else None


SPINNING = 0.5  # at least this share of a stretch's iterations failed to connect: its CPU was spent spinning


def spinning(resources: list[Resource], connection_share: float) -> list[Resource]:
    """The resources of a stretch in which at least half the iterations failed to connect (the endpoint stopped
    answering): the load generator and the machine were busy failing, not measuring, so neither can bind the
    fleet; each says so in its evidence (``spinning``: the share that failed to connect)."""
    if not connection_share >= SPINNING:
        return resources
    return [replace(r, candidate=False, evidence={**r.evidence, "spinning": connection_share})
            if r.kind in ("generator", "machine") else r for r in resources]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.0f} %"


def _iv(iv: tuple[float, float] | list[float] | None) -> str:
    return "" if not iv else f" [{max(iv[0], 0) * 100:.0f}-{min(iv[1], 1.5) * 100:.0f}]"


def _n(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


MIN_CPU_SAMPLES = 5  # fewer CPU samples than this tell nothing about how often a process was at 90 %


def _cpu_samples(e: dict[str, Any]) -> str:
    """``>= 90 % in 12 % of its 40 samples``; said plainly when the samples are too few or none was at 90 %."""
    n, share = int(e.get("samples") or 0), e.get("saturated_share") or 0.0
    if n < MIN_CPU_SAMPLES:
        return f"from {n} CPU sample{'' if n == 1 else 's'} only, too few to tell how often it was at 90 %"
    if share <= 0:
        return f"never at 90 % in its {n:,} samples"
    return f">= 90 % in {_pct(share)} of its {n:,} samples"


def busiest_shared(resources: list[Resource], but: Resource | None = None) -> Resource | None:
    """The busiest shared resource that could bind the fleet, other than ``but``."""
    others = [r for r in resources if r.kind != "step" and r.candidate and r is not but
              and r.utilization == r.utilization]
    return max(others, key=lambda r: r.utilization) if others else None


def describe(r: Resource) -> str:
    """The resource and its utilization with the numbers behind it (no verdict)."""
    e = r.evidence
    if r.kind == "lock":
        s = f"the lock {r.name}: busy {_pct(r.utilization)}{_iv(r.interval)} of the time, held {_pct(e.get('held'))}"
        gap = e.get("gap_share") or 0.0
        if gap >= 0.05:
            s += f": {_pct(gap)} of the lock's time goes to retry gaps"
            if e.get("gap_ms"):
                s += f" of {_n(e['gap_ms'][0])}-{_n(e['gap_ms'][1])} ms (middle half)"
        s += f"; {_n(e.get('grants_per_s'))} grants/s"
        if e.get("mean_hold_ms"):
            s += (f" (one holder at a time: a mean hold of {_n(e['mean_hold_ms'])} ms passes at most "
                  f"{_n(e.get('max_grants_per_s'))} a second)")
        s += f", {_n(e.get('waiters'))} waiters on average, {e.get('timeouts', 0):,} timeouts"
        if e.get("holders") is not None:
            s += f", {e['holders']} holder{'' if e['holders'] == 1 else 's'}"
        return s
    if r.kind == "capacity":
        unit = "RCU" if e.get("units") == "read" else "WCU"
        s = (f"{e.get('what', r.name)}: {_n(e.get('used_per_s'))} of {_n(e.get('limit_per_s'))} {unit}/s "
             f"({_pct(r.utilization)}{_iv(r.interval)}, {e.get('basis', 'modelled')})")
        if e.get("throttled"):
            s += f", {e['throttled']:,} throttled iterations"
        if e.get("throttles"):
            s += f", {e['throttles']:,} throttled requests"
        return s
    if r.kind == "partition":
        unit = "RCU" if e.get("units") == "read" else "WCU"
        where = f" of {e['index']}" if e.get("index") else ""
        if e.get("keys"):  # the model's partition, several keys hashed to it
            keys, n = e["keys"], int(e.get("keys_seen") or len(e["keys"]))
            named = ", ".join(keys[:3]) + (", ..." if n > 3 else "")
            return (f"{r.name}{where} on {e.get('table', '?')}, {n:,} keys hashed to it ({named}): "
                    f"{_n(e.get('used_per_s'))} {unit}/s of the {_n(e.get('limit_per_s'))} a partition takes "
                    f"({_pct(r.utilization)}{_iv(r.interval)})")
        return (f"the partition key {r.name!r}{where} on {e.get('table', '?')}: {_n(e.get('used_per_s'))} {unit}/s of "
                f"the {_n(e.get('limit_per_s'))} a partition takes ({_pct(r.utilization)}{_iv(r.interval)})")
    if r.kind == "generator":
        spun = (f"; spinning on connection failures: {_pct(e['spinning'])} of the iterations failed to connect"
                if e.get("spinning") else "")
        return (f"Locust process {r.name} at a mean {_pct(r.utilization)}{_iv(r.interval)} CPU "
                f"({_cpu_samples(e)}{spun})")
    if r.kind == "stand-in" and e.get("basis") == "cpu":
        return f"the stand-in {r.name} at a mean {_pct(r.utilization)}{_iv(r.interval)} of a core ({_cpu_samples(e)})"
    if r.kind == "machine":
        return machine_words(r)
    if r.kind == "stand-in":
        return (f"the stand-in: its {e.get('op', 'probe')} probe took {_n(e.get('now_ms'))} ms against "
                f"{_n(e.get('baseline_ms'))} ms at its quickest, a server about {_pct(r.utilization)} busy "
                f"(1 - baseline / now, a single queue)")
    if r.kind == "step":
        return (f"the workers were inside an iteration {_pct(r.utilization)}{_iv(r.interval)} of the time, "
                f"{_pct(e.get('share'))} of it in {r.name}")
    return f"{r.kind} {r.name}: {_pct(r.utilization)}"


COMMANDS_SHARE = 0.05  # a command driver's commands worth naming: 5 % of the cores


def machine_words(r: Resource) -> str:
    """``the machine: 2 cores 97 % busy with the harness's own processes — Locust local 85 %, dynalite 80 %``;
    with a command driver, the commands it ran (the system under test) are named as such."""
    e = r.evidence
    shares = ", ".join(f"{'the commands' if n == 'command' else n} {_pct(v)}"
                       for n, v in (e.get("shares") or {}).items() if v >= 0.05)
    what = ("the commands it ran (the system under test: "
            f"{_pct(e['commands'])} of the cores) and the harness's own processes"
            if (e.get("commands") or 0.0) >= COMMANDS_SHARE else "the harness's own processes")
    s = (f"the machine: {e.get('cores', '?')} cores {_pct(r.utilization)}{_iv(r.interval)} busy with {what}"
         + (f" — {shares}" if shares else ""))
    return s + (f" ({_cpu_samples(e)})" if e.get("samples") is not None else "")


OTHER_LOAD = 0.25  # other work on the machine worth a note: a quarter of its cores


def other_load_note(resources: list[Resource]) -> str:
    """A note when other work shared the machine (it counts for nothing toward the bound)."""
    m = next((r for r in resources if r.kind == "machine"), None)
    other = (m.evidence.get("other") or 0.0) if m else 0.0
    if other < OTHER_LOAD:
        return ""
    return (f" (a note: other work on this machine took {_pct(other)} of its cores beside the harness's "
            f"{_pct(m.utilization)}; it is not the bound, but it slows what it shares)")


def sentence(bound: Resource | None, resources: list[Resource], where: str = "") -> str:
    """One sentence: what binds the fleet and the numbers that show it (or that nothing does)."""
    s = _sentence(bound, resources, where)
    note = other_load_note(resources)
    return s[:-1] + note + "." if note and s.endswith(".") else s


def _sentence(bound: Resource | None, resources: list[Resource], where: str = "") -> str:
    where = f" {where}" if where else ""
    other = busiest_shared(resources, bound)
    tail = f"; the busiest shared resource was {describe(other)}" if other is not None else ""
    if bound is None:
        step = next((r for r in resources if r.kind == "step"), None)
        busy = f"the workers were inside an iteration {_pct(step.utilization)} of the time" if step else ""
        return (f"Nothing bounds the fleet{where}: no resource was above {BUSY * 100:.0f} % busy, so it is paced "
                f"by its own think time" + (f": {busy}" if busy else "") + f"{tail}.")
    if bound.kind == "step":
        sat = SATURATED_DEFAULT * 100
        return (f"The fleet is bound by its own iteration time{where}: {describe(bound)}, and no shared resource "
                f"was {sat:.0f} % busy{tail}.")
    if bound.kind == "machine":
        if (bound.evidence.get("commands") or 0.0) >= bound.utilization / 2:
            return (f"The fleet is bound by {describe(bound)}{where}: the commands take most of it, so every number "
                    f"measures the system under test on this machine's cores, not the datastore.")
        return (f"The fleet is bound by {describe(bound)}{where}: every number measures this machine, not the "
                f"datastore.")
    if bound.kind == "generator":
        return (f"The fleet is bound by the load generator{where}: {describe(bound)}; every other number measures "
                f"the generator, not the datastore.")
    return f"The fleet is bound by {describe(bound)}{where}."


def as_dict(bound: Resource | None, resources: list[Resource], seconds: tuple[float, float] | None = None,
            where: str = "") -> dict[str, Any]:
    """``findings.bottleneck``'s shape: kind, name, utilization, interval, evidence, sentence (+ the stretch)."""
    out: dict[str, Any] = {"kind": None, "name": None, "utilization": None, "interval": None, "evidence": None,
                           "sentence": sentence(bound, resources, where),
                           "seconds": list(seconds) if seconds else None}
    if bound is not None:
        out.update(kind=bound.kind, name=bound.name, utilization=bound.utilization,
                   interval=list(bound.interval) if bound.interval else None, evidence=dict(bound.evidence))
    return out
