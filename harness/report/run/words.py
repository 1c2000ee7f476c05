"""The findings in words: every sentence is built from numbers the report shows, none is fixed.

Fewer, correct sentences: a finding is said only when its numbers support it,
and each names the numbers it rests on (95 % intervals in brackets).
"""

from __future__ import annotations

from typing import Any

from harness.record.outcome import NOT_EVALUATED, rate_words
from harness.report.run import observed_words
from harness.report.run.verdict import MAX_SEGMENTS
from harness.report.show import ci, g, pct, times
from harness.report.stats import MATERIAL, successes_to_tell


def secs(a: float, b: float | None = None) -> str:
    return f"{a:.0f} s" if b is None else f"{a:.0f}-{b:.0f} s"


def change(ch: dict[str, Any]) -> str:
    """A change's ratio, its interval, and the trend test when that is what supports it."""
    if ch["growth"] is None:
        base = f"from 0 to {g(ch['last'])}"
    else:
        base = f"{times(ch['growth'])}{ci(ch['interval'])}"
    tr = ch.get("trend")
    by_trend = ch["interval"] is None or (ch["interval"][0] <= 1 <= ch["interval"][1])
    if tr and by_trend and (ch["grew"] and tr["rising"] or ch["fell"] and tr["falling"]):
        base += f"; rank correlation with time {tr['rho']:.2f} over {tr['n']:,} successful iterations"
    return base


def _rate(level: dict[str, Any]) -> str:
    return f"{g(level['rate'])} it/s{ci([level['lo'], level['hi']])}"


def _falling(lv: list[dict[str, Any]]) -> str:
    end, prev = lv[-1], lv[-2]
    if end["hi"] < prev["lo"] and end["rate"] <= (1 - MATERIAL) * prev["rate"]:
        return f"the last segment ({_rate(end)}) is below the one before it ({_rate(prev)})"
    before = lv[-3]
    return (f"the last segment ({_rate(end)}) is below the last but two ({_rate(before)}), with the one between "
            f"them at {g(prev['rate'])} it/s")


def fleet_sentences(f: dict[str, Any]) -> list[str]:
    fl = f["fleet"]
    lv = fl["levels"]
    start, end, floor = lv[0], lv[-1], lv[fl["floor_index"]]
    parts = [f"{_rate(start)} at the start ({secs(start['t0'], start['t1'])})"]
    if 0 < fl["floor_index"] < len(lv) - 1:
        parts.append(f"{_rate(floor)} at the lowest ({secs(floor['t0'], floor['t1'])})")
    parts.append(f"{_rate(end)} at the end ({secs(end['t0'], end['t1'])})")
    out = [f"Successful iterations of the fleet: {', '.join(parts)}; 95 % intervals in brackets, "
           f"{len(lv)} segments of {fl['segment_s']:.0f} s after a {fl['warmup_s']:.0f} s warm-up."]
    shape = fl["shape"]
    prev = lv[-2] if len(lv) >= 2 else None
    if shape == "stalled":
        st = fl["stall"]
        s = (f"Stalled: no iteration succeeded in the last {st['gap_s']:.0f} s of the load "
             f"({secs(st['since_s'], f['span']['seconds'])})")
        if st["rate_before"]:
            s += (f"; at the {g(st['rate_before'])} it/s before it, a gap that long would happen by chance with "
                  f"probability {st['p']:.1g}")
        s += "."
        if st["failures_in_gap"]:
            s += f" {st['failures_in_gap']} iterations failed in that time."
        out.append(s)
    elif fl["degraded"]:
        ratio = fl["degradation_ratio"]
        fell = (f"The rate fell {times(ratio)} from the start to the floor" if ratio is not None
                else f"The rate fell to no successful iteration at its lowest ({secs(floor['t0'], floor['t1'])})")
        if shape == "still falling":
            out.append(f"{fell}, and it is still falling: {_falling(lv)}.")
        elif shape == "recovering":
            up = f" to {times(fl['end_over_floor'])} the floor" if fl["end_over_floor"] is not None else ""
            out.append(f"{fell}, then recovered{up} by the end ({_rate(end)}).")
        else:
            out.append(f"{fell}, then held at the floor: the last two segments ({g(prev['rate'])} and "
                       f"{g(end['rate'])} it/s) do not differ credibly.")
    elif shape == "still falling":
        out.append(f"At the end the rate is falling: {_falling(lv)}, though no segment is credibly below the start.")
    elif shape == "rising":
        out.append(f"The rate rose {times(fl['end_over_start'])} from the start to the end (the intervals do not "
                   f"overlap).")
    else:
        low = floor["rate"] / start["rate"] if start["rate"] > 0 else None
        held = start["rate"] > 0 and floor["lo"] >= (1 - MATERIAL) * start["rate"]
        if low is None:
            out.append("No iteration succeeded at the start, and none later was credibly below it.")
        elif held:
            out.append(f"The rate held: no segment was credibly below the start, and even the lowest "
                       f"({times(low)} the start's rate) is within {pct(MATERIAL)} of it at the bottom of its "
                       f"interval.")
        else:
            out.append(f"No segment was credibly below the start: the lowest ran {times(low)} the start's rate, "
                       f"within the noise of {min(x['successes'] for x in lv)}-{max(x['successes'] for x in lv)} "
                       f"successful iterations per segment.{_too_short(fl, low)}")
    return out


def _too_short(fl: dict[str, Any], low: float) -> str:
    """How long a run would tell a fall this large (the newcomer's "why is my short run flat?")."""
    need = successes_to_tell(low)
    rate = fl["levels"][0]["rate"]
    if low > 1 - MATERIAL or need is None or rate <= 0 or need <= fl["levels"][0]["successes"] * (1 - MATERIAL):
        return ""  # not a question of length (over-dispersed counts, or a fall too small to matter)
    seconds = MAX_SEGMENTS * need / rate + fl["warmup_s"]
    return (f" To tell a fall of {times(low)} the start segment needs about {need} successes: a run of about "
            f"{seconds:.0f} s at this rate (see docs/reports.md, \"Why is my short run flat?\").")


def failure_sentences(f: dict[str, Any]) -> list[str]:
    if not f["failures"]:
        return []
    kinds = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in f["errors"].items() if v)
    lo, hi = f["failure_interval"]
    s = [f"{pct(f['failure_ratio'], 1)} [{lo * 100:.1f}-{hi * 100:.1f} %] of iterations failed ({f['failures']:,} of "
         f"{f['rows']:,}: "
         f"{kinds})."]
    top = f["failures_table"][0]
    s.append(f"Most frequent failure ({top['count']:,}x, first at {secs(top['first_s'])}, last at "
             f"{secs(top['last_s'])}): {top['message']}")
    fr = f["failure_rates"]
    if fr["changed"]:
        way = "rose" if fr["end"] > fr["start"] else "fell"
        s.append(f"Failures {way} from {g(fr['start'])}{ci(fr['start_interval'])} to {g(fr['end'])}"
                 f"{ci(fr['end_interval'])} per second between the start and the end.")
    return s


def step_sentences(f: dict[str, Any]) -> list[str]:
    out = []
    d = f["dominant_step"]
    if d["migration"]:
        if d["first"]["step"] == d["last"]["step"]:
            out.append(f"The dominant step stayed {d['last']['step']} ({d['migration']} of a successful "
                       f"iteration's time, start to end).")
        else:
            out.append(f"The bottleneck migrated: {d['migration']} of a successful iteration's time, start to end.")
    cmp = f["compared"]
    where = (f"between the start ({secs(*cmp['early_s'])}) and the {cmp['late_is']} "
             f"({secs(*cmp['late_s'])})")
    top = f["grew_most"]
    steps = f["steps"]
    if top is None:
        out.append(f"No step's time grew credibly {where}.")
        return out + _probe_sentence(f, unexplained=False)
    st = steps[top]
    s = (f"{top.capitalize()} grew most {where}: {g(st['first'])} -> {g(st['last'])} ms per successful iteration "
         f"({change(st)})")
    s += _driver_clause(st) + "."
    out.append(s)
    dec = decomposition_sentence(top, st)
    if dec:
        out.append(dec)
    for name, other in steps.items():
        if name == top or not other["grew"]:
            continue
        if name == "lock wait" and top != "lock wait":
            out.append(f"Lock wait grew too: {g(other['first'])} -> {g(other['last'])} ms ({change(other)}).")
        elif other["explained"]:
            out.append(f"{name.capitalize()} also grew ({g(other['first'])} -> {g(other['last'])} ms)"
                       + _driver_clause(other) + ".")
    return out + _probe_sentence(f, unexplained=not st["explained"])


def _driver_clause(st: dict[str, Any]) -> str:
    label, dc = st.get("driver_label"), st.get("driver_change")
    if not label:
        return "; no recorded count drives this step"
    if dc is None or dc["first"] is None:
        return f"; {label} was never recorded"
    moved = f"{g(dc['first'])} -> {g(dc['last'])}, {change(dc)}"
    if st["explained"]:
        note = f" ({st['note']})" if st.get("note") else ""
        return (f", with {label}: {moved}{note}; the step's time and {label} rank-correlate at {st['rho']:.2f} over "
                f"{st['rho_n']:,} successful iterations")
    if dc["grew"]:
        return (f"; {label} grew too ({moved}) but the step's time does not follow it iteration by iteration "
                f"(rank correlation {st['rho']:.2f} over {st['rho_n']:,})")
    return f"; {label} did not grow credibly ({moved}), so no recorded count explains it"


def _probe_sentence(f: dict[str, Any], unexplained: bool) -> list[str]:
    p = f.get("probe")
    if not p:
        return []
    if p["growth"] is None:
        return [f"The stand-in's {p['op']} probe cannot tell whether the server slowed: {p['note']}."] \
            if unexplained and p.get("note") else []
    nums = f"{g(p['first_ms'])} -> {g(p['last_ms'])} ms, {times(p['growth'])}{ci(p['interval'])}"
    if p["slowed"]:
        return [f"The stand-in got slower: its {p['op']} probe went {nums} between the first and the last third "
                f"of the load."]
    if unexplained:
        return [f"The stand-in's {p['op']} probe did not credibly slow down ({nums}, first to last third of the "
                f"load)."]
    return []


MIN_CPU_SAMPLES = 5  # fewer CPU samples than this tell nothing about a share of them


def cpu_samples(share: float, n: int) -> str:
    """How often a process was at >= 90 % CPU, said plainly when its samples are too few to mean anything."""
    if n < MIN_CPU_SAMPLES:
        return f"from {n} CPU sample{'' if n == 1 else 's'} only, too few to tell how often it was at 90 %"
    if share <= 0:
        return f"never at 90 % in {n:,} samples"
    return f">= 90 % in {pct(share)} of {n:,} samples"


def generator_sentences(f: dict[str, Any]) -> list[str]:
    gen = f.get("generator")
    if not gen:
        return []
    procs = gen["processes"]
    if gen["ceiling"]:
        worst = max(gen["saturated"], key=lambda k: procs[k]["saturated_share"])
        p = procs[worst]
        others = f" (and {len(gen['saturated']) - 1} more)" if len(gen["saturated"]) > 1 else ""
        return [f"The load generator, not the datastore, was the ceiling: Locust process {worst}{others} ran at "
                f">= 90 % CPU in {pct(p['saturated_share'])} of its {p['samples']:,} samples "
                f"(median {p['median']:.0f} %)."]
    load = {k: v for k, v in procs.items() if v["sends_load"]} or procs
    busiest = max(load, key=lambda k: load[k]["median"])
    p = load[busiest]
    return [f"The load generator had headroom: its busiest load process, {busiest}, ran at a median "
            f"{p['median']:.0f} % CPU ({cpu_samples(p['saturated_share'], p['samples'])})."]


def safety_line(sf: dict[str, Any]) -> str:
    """The safety verdict in one line: acknowledged, lost, phantom, torn, corrupt, violations."""
    d = sf.get("details") or {}
    torn, corrupt = d.get("torn_reads"), d.get("corrupt")
    parts = [f"{sf.get('acknowledged')} acknowledged commits", f"{sf.get('lost')} lost", f"{sf.get('phantom')} phantom",
             *([f"{torn} torn reads"] if torn is not None else []), *([f"{corrupt} corrupt"] if corrupt is not None
                                                                       else [])]
    v = sf.get("violations")
    return f"Safety: {', '.join(parts)}: {v} violation{'' if v == 1 else 's'}" + (
        "." if not v else " (the safety section has them).")


def other_sentences(f: dict[str, Any]) -> list[str]:
    out = []  # how the run ended (did not complete, interrupted) is the outcome's first line (record/outcome.py)
    sf = f.get("safety")
    if sf:
        out.append(f"Lock safety: {sf['acknowledged']} acknowledged commits, {sf['lost']} lost, {sf['phantom']} "
                   f"phantom, {sf['overlaps']} overlapping lock grants: {sf['violations']} violations.")
    if f["incomplete"]:
        names = ", ".join(f"{p.get('process', '?')} ({p.get('reason', 'no reason recorded')})"
                          for p in f["incomplete"])
        out.append(f"{len(f['incomplete'])} Locust process(es) never delivered their final report: {names}; "
                   f"the {f['rows']} rows are a lower bound.")
    if f["span"]["note"]:
        out.append(f["span"]["note"])
    if (f.get("outcome") or {}).get("checks_state") != NOT_EVALUATED:
        for c in f.get("checks") or []:
            if not c["passed"]:
                out.append(f"Check failed: {c['line']}.")
    return out


FACTORS = {"count": "the count grew (the design asks for more requests)",
           "time per request": "the time per request grew (the backend answers slower)",
           "outside requests": "the time outside requests grew (client CPU, waits)"}


def decomposition_sentence(name: str, st: dict[str, Any]) -> str | None:
    """A grown step's time as requests x time per request + time outside them, and which factor grew."""
    d = st.get("requests")
    if d is None:
        return (f"{name.capitalize()}'s requests were not recorded (a run made before the rows carried per-step "
                f"requests), so its growth cannot be split into more requests and slower ones.")
    n, per, out = d["requests"], d["ms_per_request"], d["outside_ms"]
    parts = [f"requests per {name} {g(n['first'])} -> {g(n['last'])} ({change(n)})"]
    if per["first"] is not None:
        parts.append(f"{g(per['first'])} -> {g(per['last'])} ms per request ({change(per)})")
    if out["first"] is not None:
        parts.append(f"{g(out['first'])} -> {g(out['last'])} ms outside requests")
    s = f"{name.capitalize()} = requests x time per request + time outside them: {', '.join(parts)}"
    if d["grew_by"]:
        s += ": " + "; ".join(FACTORS[k] for k in d["grew_by"])
        if "time per request" in d["grew_by"]:
            ev = d.get("backend") or []
            s += (f" ({', '.join(ev)})" if ev else
                  " (no throttle, no slower probe and no saturated key or table shows why)")
    else:
        s += ": neither the count, the time per request nor the time outside requests grew credibly on its own"
    return s + "."


def bottleneck_sentences(f: dict[str, Any]) -> list[str]:
    b = f.get("bottleneck")
    if not b:
        return []
    out = [b["sentence"]]
    if f.get("bottleneck_moved"):
        runs: list[list[Any]] = []  # [what, utilizations, from, to] over consecutive segments with one bound
        for d in f["bottlenecks"]:
            what = f"{d['kind']} {d['name']}" if d["kind"] else "nothing above 50 %"
            if runs and runs[-1][0] == what:
                runs[-1][1].append(d["utilization"])
                runs[-1][3] = d["seconds"][1]
            else:
                runs.append([what, [d["utilization"]], d["seconds"][0], d["seconds"][1]])
        hops = [f"{w}{'' if None in u else f' {max(u) * 100:.0f} %'} ({a:.0f}-{b:.0f} s)" for w, u, a, b in runs]
        if len(hops) > 1:
            out.append("The bound moved during the run: " + " -> ".join(hops) + ".")
    return out


def failure_story_sentences(f: dict[str, Any]) -> list[str]:
    """One error dominates the failed iterations: say so first, with the resource behind it."""
    st = f.get("failure_story")
    if not st:
        return []
    s = (f"{pct(st['failure_ratio'])} of iterations failed, {pct(st['kind_share_of_failures'])} of them "
         f"{st['kind'].replace('_', ' ')}s ({st['message']})")
    r = st.get("resource")
    if st["kind"] == "lock_timeout":
        if r:
            e = r["evidence"]
            s += (f": the lock {r['name']} was busy {pct(r['utilization'])} of the time, held {pct(e['held'])}, "
                  f"with {g(e['waiters'])} waiters on average")
        if st.get("failed_wait_ms") is not None:
            s += (f"; the failed iterations waited a median {g(st['failed_wait_ms'])} ms for it and gave up, the "
                  f"successful ones {g(st['ok_wait_ms'])} ms (so the successful iterations' steps do not show the "
                  f"queue)")
    elif r:
        s += f": {r['kind']} {r['name']} at {pct(r['utilization'])}"
    return [s + "."]


def rate_line(f: dict[str, Any]) -> str:
    """The verdict's rate: the start, the lowest (when it is neither the start nor the end), the end, and how it
    moved in words the numbers bear out (the outcome's: ``too short to judge`` when it cannot tell)."""
    fl = f["fleet"]
    lv, i = fl["levels"], fl["floor_index"]
    parts = [f"{_rate(lv[0])} at the start"]
    if 0 < i < len(lv) - 1:
        parts.append(f"{_rate(lv[i])} at the lowest")
    parts.append(f"{_rate(lv[-1])} at the end")
    return f"{' -> '.join(parts)}: {rate_words(f)[1]}."


def grew_line(f: dict[str, Any]) -> str | None:
    return next((x for x in step_sentences(f) if " grew most " in x or x.startswith("No step's time grew")), None)


def verdict(f: dict[str, Any]) -> dict[str, str | None]:
    """What the page leads with: how the run ended, the bound (the outcome's short sentence; the long one with its
    numbers opens the bound's section), the rate and beside it (a command-driver run) the datastore's own time per
    iteration, what grew, the checks."""
    first = failure_story_sentences(f)
    o = f.get("outcome") or {}
    return {"outcome": o.get("completion_line"), "bound": o.get("bound"), "failures": first[0] if first else None,
            "rate": rate_line(f), "own_time": (f.get("own_time") or {}).get("sentence"), "grew": grew_line(f),
            "checks": o.get("checks") if o.get("checks_state") not in (None, "none") else None}


def sections(f: dict[str, Any]) -> dict[str, list[str]]:
    """The sentences by the question they answer, each once (the verdict's own lines left out of the rest)."""
    grew = grew_line(f)
    return {"failure story": failure_story_sentences(f), "bound": bottleneck_sentences(f),
            "rate": fleet_sentences(f), "failures": failure_sentences(f),
            "steps": [s for s in step_sentences(f) if s != grew], "generator": generator_sentences(f),
            "other": other_sentences(f), "observed": observed_words.sentences(f)}


def sentences(f: dict[str, Any]) -> list[str]:
    return (failure_story_sentences(f) + bottleneck_sentences(f) + fleet_sentences(f) + failure_sentences(f)
            + step_sentences(f) + observed_words.sentences(f) + generator_sentences(f) + other_sentences(f))


def global_lock_said(scenario: dict[str, Any], backend: str | None) -> str | None:
    """Which global lock a two-phase run took, named for what it does (docs/swamp-today.md has the sources)."""
    ds = scenario.get("datastore") or {}
    if ds.get("sync") != "two-phase":
        return None
    if ds.get("lock_scope") != "namespace" or ds.get("namespaces") == "shared":
        return "one datastore lock (no namespace)"
    if ds.get("global_lock") == "per-namespace":
        return "per-namespace: <ns>/.datastore.lock, one a namespace"
    if ds.get("global_lock") == "one-item":
        if backend == "dynamodb":
            return ("one-item: one LOCK#.datastore.lock for every namespace (a stored copy of core passed "
                    "\".datastore.lock\", which the DynamoDB extension takes without the namespace)")
        return "one-item: <ns>/.datastore.lock (the S3 extension keys it under the namespace)"
    return "swamp: .locks/<ns>.lock, one a namespace (core's datastoreGlobalLockOptions, 06b6147)"


def reads_said(scenario: dict[str, Any]) -> str | None:
    """Whose lock, commit and reads a run made: swamp's own (unfenced, swamp's bookkeeping), or fenced (the
    harness's, beyond swamp), or unfenced on the harness's items (docs/swamp-today.md)."""
    ds = scenario.get("datastore") or {}
    if not ds:
        return None
    if ds.get("fencing", True):
        return ("fenced (beyond swamp): the harness's lock object and fenced commit, reads strongly consistent "
                "where fencing needs it; what fencing adds is in fencing_requests")
    if ds.get("bookkeeping") == "swamp":
        return ("swamp's own: swamp's lock requests, its commit and its reads (DynamoDB: eventually consistent), "
                "none of the harness's own writes")
    return "unfenced on the harness's items: swamp's unconditional commit, reads strongly consistent"
