"""Did a chapter's runs show what the chapter expected? Judged from each run's own findings, in words.

Pure functions: a chapter's expectations (plain data from its ladder, kept
in ``story.json``), each run's ``findings`` (``summary.json``), the
comparison of its runs (``harness/report/compare/``) and, for ``same_growth``,
each run's growth of a count per iteration. Every check returns whether it
was shown and one sentence with the numbers it rests on; a check that was
not shown says what was expected and what the run showed instead ("expected
the lock, the fleet was bound by pull").

The expectations (``stories/README.md``): per run ``bound_by`` /
``not_bound_by`` (the report's bottleneck: a kind, or kind:name),
``grew`` / ``steady`` (work counts, credibly grown or not), ``at_most``
(a count's mean, start and end, at most a value), ``explained_by`` (the
count behind the step that grew most), ``rate`` (``falling``: degraded or
still falling; ``holds``: neither, nor stalled), ``errors`` / ``no_errors``
(error kinds that occurred or did not); across runs ``more_workers`` (``no
faster``: the larger fleet's rate is not credibly above the smaller's and
credibly below linear scaling; ``faster``: credibly above), ``backends``
(``dynamodb faster`` / ``s3 faster``: the rate ratio's interval wholly
above 1), ``same_growth`` (a count grows per iteration within 20 % on
both backends, or is flat on both) and ``grew_with_items`` (a count's mean per
iteration credibly higher at the larger pre-aged size than at the smaller: the
Welch ratio of the two runs' means, its 95 % interval wholly above 1, as
``work_counts`` compares a run's late iterations with its early ones).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.core.intervals import rate_interval
from harness.report.show import ci, g, pct, shape_words, times
from harness.report.stats import mean_change

SAME = 1.25  # per-iteration growth within x1.25 either way reads as the same curve
FLAT_SLOPE = 0.02  # below this per iteration a count is flat
LEVEL_MIN = 3  # iterations a segment needs (and the run, per segment) before its level reads as one
COUNT_LABELS = {"pull_items_read": "items read per pull", "index_entries_written": "index entries written per commit",
                "catalog_rows": "catalog rows", "files_pushed": "files pushed per sync",
                "lock_attempts": "lock attempts per iteration", "read_units": "read units per iteration",
                "write_units": "write units per iteration"}
ERROR_LABELS = {"lock_timeout": "lock timeouts", "throttled": "throttled requests", "fenced": "fenced commits",
                "conflict": "conflicts", "timeout": "timeouts", "connection": "connection failures",
                "push_failed": "failed pushes (exit 0 with an error span)", "other": "other errors"}
BACKEND_LABELS = {"dynamodb": "DynamoDB", "s3": "S3"}


@dataclass(frozen=True)
class Check:
    what: str  # the expectation's key
    run: str | None  # the run it is about (None: across runs)
    shown: bool
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- words for bounds ------------------------------------------------------------------------------------


def bound_label(kind: str | None, name: str | None) -> str:
    """What a ``findings.bottleneck`` names, as a reader says it: ``the lock <key>``, ``commit``, ..."""
    if kind is None:
        return "nothing (its own think time)"
    if kind == "step":
        return str(name)
    return {"lock": f"the lock {name}", "capacity": f"the modelled capacity of {name}",
            "partition": f"the hot partition key {name}", "generator": f"the load generator ({name})",
            "stand-in": "the stand-in", "machine": "the machine"}.get(kind, f"{kind} {name}")


def expected_bound(x: str) -> str:
    kind, _, name = x.partition(":")
    if kind == "none":
        return "nothing (its own think time)"
    if kind == "step":
        return name or "one step of its own"
    what = {"lock": "a lock", "capacity": "the modelled capacity", "partition": "a hot partition key",
            "generator": "the load generator", "stand-in": "the stand-in", "machine": "the machine"}.get(kind, kind)
    return what + (f" {name}" if name else "")


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def bound_numbers(b: dict[str, Any]) -> str:
    """``busy 100 % [100-100] over 1-21 s``: the bound's utilization, its interval and the stretch it rests on."""
    if b.get("kind") is None or b.get("utilization") is None:
        return "no resource was half busy"
    iv = b.get("interval")
    ivs = f" [{iv[0] * 100:.0f}-{min(iv[1], 1.5) * 100:.0f}]" if iv else ""
    sec = b.get("seconds")
    over = f" over {sec[0]:.0f}-{sec[1]:.0f} s" if sec else ""
    what = "busy" if b["kind"] in ("lock", "stand-in") else "of the workers' time inside iterations" \
        if b["kind"] == "step" else "used"
    if b["kind"] == "step":
        share = (b.get("evidence") or {}).get("share")
        tail = f", {pct(share)} of it in {b['name']}" if share is not None else ""
        return f"inside an iteration {pct(b['utilization'])}{ivs} of the time{tail}{over}"
    return f"{what} {pct(b['utilization'])}{ivs}{over}"


def matches(b: dict[str, Any], accepted: list[str]) -> bool:
    kind, name = b.get("kind"), b.get("name")
    for x in accepted:
        k, _, n = x.partition(":")
        if k == "none" and kind is None:
            return True
        if k == kind and (not n or n == name):
            return True
    return False


# ---- per-run checks --------------------------------------------------------------------------------------


def _bound_by(f: dict[str, Any], accepted: list[str], run: str) -> Check:
    b = f["bottleneck"]
    got = f"{bound_label(b['kind'], b['name'])} ({bound_numbers(b)})"
    want = _or([expected_bound(x) for x in accepted])
    if matches(b, accepted):
        return Check("bound_by", run, True, f"bound by {got}")
    return Check("bound_by", run, False, f"expected {want}, the fleet was bound by {got}")


def _not_bound_by(f: dict[str, Any], refused: list[str], run: str) -> Check:
    b = f["bottleneck"]
    got = f"{bound_label(b['kind'], b['name'])} ({bound_numbers(b)})"
    if matches(b, refused):
        return Check("not_bound_by", run, False, f"expected no bound on {_or([expected_bound(x) for x in refused])}, "
                                                 f"the fleet was bound by {got}")
    return Check("not_bound_by", run, True, f"not bound by {_or([expected_bound(x) for x in refused])}")


def count_change(wc: dict[str, Any]) -> str:
    """``x18.5 [16-21.5] (7 -> 130)`` or ``0 -> 0``."""
    first, last = wc.get("first"), wc.get("last")
    if first is None:
        return "too few successful iterations to compare"
    moved = f"{g(first)} -> {g(last)}"
    if wc.get("growth") is None:
        return moved
    return f"{times(wc['growth'])}{ci(wc.get('interval'))} ({moved})"


def unrecorded(f: dict[str, Any], wc: dict[str, Any]) -> bool:
    """Successful iterations, none of which recorded the count (no span the command sent says it: the real
    swamp's catalog rows), rather than too few iterations to compare."""
    ok = int(f.get("rows") or 0) - int(f.get("failures") or 0)
    return ok > 0 and wc.get("first") is None and list(wc.get("n") or [0, 0]) == [0, 0]


def _no_record(label: str, f: dict[str, Any]) -> str:
    ok = int(f.get("rows") or 0) - int(f.get("failures") or 0)
    return f"none of {ok} successful iterations recorded {label} (no span the commands sent says it)"


def _grew(f: dict[str, Any], counts: list[str], run: str) -> list[Check]:
    out = []
    for c in counts:
        wc = f["work_counts"].get(c) or {}
        label = COUNT_LABELS[c]
        if unrecorded(f, wc):
            out.append(Check("grew", run, False, f"expected {label} to grow: {_no_record(label, f)}"))
        elif wc.get("grew"):
            out.append(Check("grew", run, True, f"{label} grew {count_change(wc)}"))
        else:
            out.append(Check("grew", run, False, f"expected {label} to grow, it did not credibly "
                                                 f"({count_change(wc)})"))
    return out


def _steady(f: dict[str, Any], counts: list[str], run: str) -> list[Check]:
    out = []
    for c in counts:
        wc = f["work_counts"].get(c) or {}
        label = COUNT_LABELS[c]
        if unrecorded(f, wc):
            out.append(Check("steady", run, False, f"expected {label} to hold: {_no_record(label, f)}"))
        elif wc.get("first") is None:
            out.append(Check("steady", run, False, f"expected {label} to hold, too few successful iterations "
                                                   "to tell"))
        elif wc.get("grew"):
            out.append(Check("steady", run, False, f"expected {label} to hold, it grew {count_change(wc)}"))
        else:
            out.append(Check("steady", run, True, f"{label} held ({count_change(wc)})"))
    return out


def _at_most(f: dict[str, Any], limits: dict[str, float], run: str) -> list[Check]:
    out = []
    for c, limit in limits.items():
        wc = f["work_counts"].get(c) or {}
        label = COUNT_LABELS[c]
        first, last = wc.get("first"), wc.get("last")
        if first is None:
            out.append(Check("at_most", run, False, f"expected {label} at most {g(limit)}, too few successful "
                                                    "iterations to tell"))
            continue
        top = max(first, last)
        ok = top <= limit + 1e-9
        text = f"{label} {g(first)} -> {g(last)}"
        out.append(Check("at_most", run, ok, f"{text} (at most {g(limit)})" if ok else
                         f"expected {label} at most {g(limit)}, it reached {g(top)} ({text})"))
    return out


def step_growth(f: dict[str, Any]) -> str:
    top = f.get("grew_most")
    if top is None:
        return "no step's time grew credibly"
    st = f["steps"][top]
    return f"{top} grew most, {g(st['first'])} -> {g(st['last'])} ms ({times(st['growth'])}{ci(st['interval'])})"


def _explained_by(f: dict[str, Any], count: str, run: str) -> Check:
    label = COUNT_LABELS[count]
    growth = step_growth(f)
    if f.get("explained_by") == count:
        wc = f["work_counts"].get(count) or {}
        return Check("explained_by", run, True, f"{growth}, with {label} {count_change(wc)}")
    other = f.get("explained_by")
    why = f", explained by {COUNT_LABELS.get(other, other)}" if other else (
        ", explained by no recorded count" if f.get("grew_most") else "")
    return Check("explained_by", run, False, f"expected a step to grow with {label}: {growth}{why}")


def sparse_levels(fl: dict[str, Any]) -> str:
    """"" when the run's segments read as levels; else what the run can say: ``too few iterations to read a
    level: 5 in 96 s (0.052 it/s [0.017-0.12] over the run after its 24 s warm-up)``. A run of a few slow
    iterations (the real swamp's, seconds each, its first segment spent in the setup) reads "0 -> 0" by its
    levels, which is not what it did: its start segment ran fewer than LEVEL_MIN iterations, or the whole run
    fewer than LEVEL_MIN a segment."""
    levels = fl.get("levels") or []
    if not levels:
        return ""
    ran = [int(lv.get("successes", 0)) + int(lv.get("failures", 0)) for lv in levels]
    if ran[0] >= LEVEL_MIN and sum(ran) >= LEVEL_MIN * len(levels):
        return ""
    ok = sum(int(lv.get("successes", 0)) for lv in levels)
    seconds = float(levels[-1]["t1"]) - float(levels[0]["t0"])
    lo, hi = rate_interval(ok, seconds, float(fl.get("dispersion") or 1.0))
    warm = f" after its {g(fl['warmup_s'])} s warm-up" if fl.get("warmup_s") else ""
    return (f"too few iterations to read a level: {sum(ran)} in {g(seconds)} s, {ok} succeeded "
            f"({g(ok / seconds if seconds > 0 else 0.0)} it/s{ci([lo, hi])} over the run{warm})")


def rate_levels(fl: dict[str, Any]) -> str:
    """``7.34 it/s [5.76-9.23] at the start -> 3.22 [2.2-4.54] at the floor``."""
    floor = f"{g(fl['floor_rate'])}{ci(fl['floor_interval'])} at the floor"
    return f"{g(fl['start_rate'])} it/s{ci(fl['start_interval'])} at the start -> {floor}"


def _rate(f: dict[str, Any], want: str, run: str) -> Check:
    fl = f["fleet"]
    sparse = sparse_levels(fl)
    if sparse:
        verb = "fall" if want == "falling" else "hold"
        return Check("rate", run, False, f"expected the rate to {verb}, it cannot be read: {sparse}")
    falling = bool(fl["degraded"]) or fl["shape"] == "still falling"
    how = shape_words(fl["shape"], fl["degraded"], fl["start_rate"], fl["floor_rate"], fl["end_rate"])
    nums = f"{rate_levels(fl)} ({how})"
    if want == "falling":
        if falling:
            return Check("rate", run, True, f"the rate fell: {nums}")
        return Check("rate", run, False, f"expected the rate to fall, it did not credibly: {nums}")
    if not falling and fl["shape"] != "stalled":
        return Check("rate", run, True, f"the rate did not fall credibly: {nums}")
    how = "stalled" if fl["shape"] == "stalled" else "fell"
    return Check("rate", run, False, f"expected the rate to hold, it {how}: {nums}")


def _errors(f: dict[str, Any], kinds: list[str], run: str, want: bool) -> list[Check]:
    out = []
    lo, hi = f["failure_interval"]
    for k in kinds:
        n = int(f["errors"].get(k, 0))
        label = ERROR_LABELS[k]
        if want:
            if n:
                share = f"{pct(n / f['rows'], 1)}; all failures {pct(f['failure_ratio'], 1)}"
                out.append(Check("errors", run, True, f"{n:,} of {f['rows']:,} iterations failed with {label} "
                                                      f"({share} [{lo * 100:.1f}-{hi * 100:.1f} %])"))
            else:
                out.append(Check("errors", run, False, f"expected {label}, none of {f['rows']:,} iterations had one"))
        elif n:
            out.append(Check("no_errors", run, False, f"expected no {label}, {n:,} of {f['rows']:,} iterations had "
                                                      "one"))
        else:
            out.append(Check("no_errors", run, True, f"no {label} in {f['rows']:,} iterations"))
    return out


def judge_run(f: dict[str, Any], expect: dict[str, Any], run: str) -> list[Check]:
    """Every per-run expectation of one run, in the ladder's order of keys."""
    out: list[Check] = []
    for key, want in expect.items():
        if key == "bound_by":
            out.append(_bound_by(f, want, run))
        elif key == "not_bound_by":
            out.append(_not_bound_by(f, want, run))
        elif key == "grew":
            out += _grew(f, want, run)
        elif key == "steady":
            out += _steady(f, want, run)
        elif key == "at_most":
            out += _at_most(f, want, run)
        elif key == "explained_by":
            out.append(_explained_by(f, want, run))
        elif key == "rate":
            out.append(_rate(f, want, run))
        elif key == "errors":
            out += _errors(f, want, run, True)
        elif key == "no_errors":
            out += _errors(f, want, run, False)
    return out


# ---- across runs -----------------------------------------------------------------------------------------


def _more_workers(comparison: dict[str, Any], want: str) -> list[Check]:
    out = []
    for s in comparison.get("fleet_scaling") or []:
        small, big = s["workers"]
        head = f"{s['scenario']} on {BACKEND_LABELS.get(s['backend'], s['backend'])}, {small} -> {big} workers"
        ratio, iv = s["rate_ratio"], s["rate_interval"]
        if ratio is None:
            out.append(Check("more_workers", None, False, f"{head}: no rate ratio ({s['sentence']})"))
            continue
        nums = f"x{s['fleet_ratio']:.3g} workers gave x{ratio:.3g} the rate{ci(iv)}"
        if want == "faster":
            ok = bool(s["raised_rate"])
            out.append(Check("more_workers", None, ok, f"{head}: {nums}" if ok else
                             f"{head}: expected more workers to raise the rate, {nums}"))
            continue
        if s["raised_rate"]:
            out.append(Check("more_workers", None, False, f"{head}: expected more workers not to raise the rate, "
                                                          f"{nums}"))
        elif iv[1] >= s["fleet_ratio"]:
            out.append(Check("more_workers", None, False, f"{head}: expected more workers not to raise the rate; "
                                                          f"{nums}, an interval too wide to rule out scaling with "
                                                          f"the fleet"))
        else:
            out.append(Check("more_workers", None, True, f"{head}: {nums}: not credibly faster, and credibly short "
                                                         f"of the x{s['fleet_ratio']:.3g} the fleet grew"))
    if not out:
        out.append(Check("more_workers", None, False, "expected runs at two fleet sizes to compare, found none"))
    return out


def _backends(comparison: dict[str, Any], want: str) -> list[Check]:
    out = []
    for b in comparison.get("backends") or []:
        ratio, iv = b["dynamodb_over_s3"], b["interval"]
        head = f"{b['scenario']} with {b['workers']} workers"
        if ratio is None:
            out.append(Check("backends", None, False, f"{head}: no rate ratio ({b['sentence']})"))
            continue
        per = b.get("s3_ms_per_request_over_dynamodb")
        per_s = f"; an S3 request took x{per:.3g} as long" if per else ""
        nums = f"DynamoDB ran x{ratio:.3g} the rate of S3{ci(iv)}{per_s}"
        ok = iv[0] > 1 if want == "dynamodb faster" else iv[1] < 1
        faster = "DynamoDB" if want == "dynamodb faster" else "S3"
        out.append(Check("backends", None, ok, f"{head}: {nums}" if ok else
                         f"{head}: expected {faster} to run credibly faster, {nums}"))
    if not out:
        out.append(Check("backends", None, False, "expected one scenario on both backends, found none"))
    return out


def _same_growth(slopes: dict[str, dict[str, Any]], counts: list[str]) -> list[Check]:
    """``slopes``: run label -> {scenario, backend, <count>: growth per iteration}."""
    out = []
    by = {}
    for label, s in slopes.items():
        by.setdefault(s["scenario"], {})[s["backend"]] = (label, s)
    for scenario, pair in sorted(by.items()):
        if set(pair) != {"dynamodb", "s3"}:
            continue
        (_, d), (_, s) = pair["dynamodb"], pair["s3"]
        for c in counts:
            a, b = d.get(c), s.get(c)
            label = COUNT_LABELS[c]
            if a is None or b is None:
                out.append(Check("same_growth", None, False, f"{scenario}: too few successful iterations to compare "
                                                             f"{label} per iteration"))
                continue
            nums = f"{label} per iteration {a:+.3g} on DynamoDB, {b:+.3g} on S3"
            if abs(a) < FLAT_SLOPE and abs(b) < FLAT_SLOPE:
                out.append(Check("same_growth", None, True, f"{scenario}: {nums}: flat on both"))
            elif a * b > 0 and 1 / SAME <= b / a <= SAME:
                out.append(Check("same_growth", None, True, f"{scenario}: {nums} (x{b / a:.3g}): the same curve"))
            else:
                out.append(Check("same_growth", None, False, f"{scenario}: expected the same growth per iteration "
                                                             f"on both backends, {nums}"))
    if not out:
        out.append(Check("same_growth", None, False, "expected one scenario on both backends, found none"))
    return out


def _grew_with_items(levels: dict[str, dict[str, Any]], counts: list[str]) -> list[Check]:
    """``levels``: run label -> {scenario, backend, workers, items (pre-aged), unit (``files``), size (in words),
    <count>: each
    successful iteration's value}. For each fleet run at several pre-aged sizes, each size against the next
    smaller one: the ratio of the count's means per iteration with its Welch interval (``mean_change``)."""
    out = []
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for lv in levels.values():
        groups.setdefault((lv["scenario"], lv["backend"], lv["workers"]), []).append(lv)
    for (scenario, backend, workers), runs in sorted(groups.items()):
        runs = sorted(runs, key=lambda x: x["items"])
        for small, big in zip(runs, runs[1:], strict=False):
            head = (f"{scenario} on {BACKEND_LABELS.get(backend, backend)}, {workers} workers, {small['size']} -> "
                    f"{big['size']}")
            for c in counts:
                out.append(_with_items(c, small, big, head))
    if not out:
        out.append(Check("grew_with_items", None, False, "expected runs at two pre-aged sizes to compare, found none"))
    return out


def _with_items(count: str, small: dict[str, Any], big: dict[str, Any], head: str) -> Check:
    label = COUNT_LABELS[count]
    a, b = list(small.get(count) or []), list(big.get(count) or [])
    change = mean_change(a, b) if a and b else None
    if change is None:
        return Check("grew_with_items", None, False, f"{head}: too few successful iterations to compare {label} "
                                                     f"({len(a)} and {len(b)}; two a size at least)")
    unit = big.get("unit") or "items"
    moved = (f"from {g(change.early)} at {small['items']:,} pre-aged {unit} to {g(change.late)} at "
             f"{big['items']:,}")
    if change.ratio is None:
        return Check("grew_with_items", None, False, f"{head}: expected {label} to grow with the items, {moved}")
    nums = f"{label} {times(change.ratio)}{ci([change.lo, change.hi])} {moved} (n = {len(a)}, {len(b)})"
    if change.credibly_up:
        return Check("grew_with_items", None, True, f"{head}: {nums}")
    return Check("grew_with_items", None, False, f"{head}: expected {label} to grow with the items, it did not "
                                                 f"credibly: {nums}")


CROSS_RUN = ("more_workers", "backends", "same_growth", "grew_with_items")


def run_expectations(expect: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """One run's expectations: the chapter's per-run ones, with the run's own on top."""
    return {**{k: v for k, v in expect.items() if k not in CROSS_RUN}, **own}


def judge_chapter(expect: dict[str, Any], runs: list[dict[str, Any]], comparison: dict[str, Any] | None,
                  slopes: dict[str, dict[str, Any]] | None = None,
                  levels: dict[str, dict[str, Any]] | None = None) -> list[Check]:
    """Every check of a chapter: each run's (``runs``: {label, findings, expect: the run's own}), with the
    chapter's per-run expectations, then the cross-run ones (``levels``: each run's counts per iteration, for
    ``grew_with_items``)."""
    out: list[Check] = []
    for r in runs:
        out += judge_run(r["findings"], run_expectations(expect, r["expect"]), r["label"])
    comparison = comparison or {}
    if "more_workers" in expect:
        out += _more_workers(comparison, expect["more_workers"])
    if "backends" in expect:
        out += _backends(comparison, expect["backends"])
    if "same_growth" in expect:
        out += _same_growth(slopes or {}, expect["same_growth"])
    if "grew_with_items" in expect:
        out += _grew_with_items(levels or {}, expect["grew_with_items"])
    return out


def expected_sentence(expect: dict[str, Any], run_expects: dict[str, dict[str, Any]] | None = None) -> str:
    """What the chapter expects, in words (from its expectations, not its runs)."""
    def one(e: dict[str, Any]) -> list[str]:
        parts = []
        if "bound_by" in e:
            parts.append("the fleet bound by " + _or([expected_bound(x) for x in e["bound_by"]]))
        if "not_bound_by" in e:
            parts.append("not bound by " + _or([expected_bound(x) for x in e["not_bound_by"]]))
        if "errors" in e:
            parts.append(_or([ERROR_LABELS[k] for k in e["errors"]]))
        if "no_errors" in e:
            parts.append("no " + _or([ERROR_LABELS[k] for k in e["no_errors"]]))
        if "at_most" in e:
            parts += [f"{COUNT_LABELS[c]} at most {g(v)}" for c, v in e["at_most"].items()]
        if "grew" in e:
            parts.append(" and ".join(COUNT_LABELS[c] for c in e["grew"]) + " growing")
        if "explained_by" in e:
            parts.append(f"a step growing with {COUNT_LABELS[e['explained_by']]}")
        if "steady" in e:
            parts.append(" and ".join(COUNT_LABELS[c] for c in e["steady"]) + " holding")
        if "rate" in e:
            parts.append("the rate falling" if e["rate"] == "falling" else "the rate holding")
        return parts

    parts = one(expect)
    for label, e in (run_expects or {}).items():
        own = one(e)
        if own:
            parts.append(f"{label}: " + ", ".join(own))
    if "more_workers" in expect:
        parts.append("more workers not raising the rate" if expect["more_workers"] == "no faster"
                     else "more workers raising the rate")
    if "backends" in expect:
        parts.append("DynamoDB credibly faster than S3" if expect["backends"] == "dynamodb faster"
                     else "S3 credibly faster than DynamoDB")
    if "same_growth" in expect:
        parts.append(" and ".join(COUNT_LABELS[c] for c in expect["same_growth"])
                     + " growing alike per iteration on both backends")
    if "grew_with_items" in expect:
        parts.append(" and ".join(COUNT_LABELS[c] for c in expect["grew_with_items"])
                     + " growing with the pre-aged items (the larger size against the smaller)")
    return "; ".join(parts) if parts else "nothing in particular"
