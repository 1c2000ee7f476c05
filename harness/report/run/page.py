"""index.html: the answer on the first screen, the numbers behind it in sections a reader opens.

At 1280 x 800 the first screen holds the title, the verdict (bound by, rate,
what grew) and the rate over time with its start, floor and end levels; the
next the bound and the step that grew, as pictures. Then one ``<details>``
section per question, its sentences, tables and figures; each sentence once.

Everything ``locust --html`` shows (request and percentile tables, failures
with their messages, the time range, users over time in the rate figure), and
what only this harness knows (levels with intervals, causes per step, work
counts, the stand-in, the load generator, lock safety, the scenario's checks).
"""

from __future__ import annotations

from html import escape
from typing import Any

from harness.record.outcome import rate_words
from harness.report.cost.cost import sentence as cost_sentence
from harness.report.forecast.forecast import sentence as forecast_sentence
from harness.report.load import Run
from harness.report.run import words
from harness.report.run.compute import PERCENTILES
from harness.report.show import details, figure, fmt, frame, iv, table, verdict_box


def _figure(name: str, caption: str, lead: bool = False) -> str:
    return figure(f"figures/{name}", caption, lead)


def _said(lines: list[str]) -> str:
    return "".join(f"<p>{escape(x)}</p>" for x in lines)


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def _alarms(f: dict[str, Any]) -> list[str]:
    """The notes that change how every number reads, for the first screen: incomplete processes, the span's note,
    lock safety when it was violated, failed checks (``words.other_sentences``; the rest stays in its section)."""
    sf = f.get("safety") or {}
    return [x for x in words.other_sentences(f) if not (x.startswith("Lock safety:") and not sf.get("violations"))]


def _warnings(run: Run, f: dict[str, Any]) -> list[str]:
    out = []  # a run still being written (run.partial) says so in the outcome's first line
    out.extend(escape(x) for x in _alarms(f))
    out.extend(escape(x) for x in no_requests_alarm(f))
    out.extend(_skipped(run))
    return [f'<p class="warn">{w}</p>' for w in out]


def _skipped(run: Run) -> list[str]:
    """Damaged iteration shards the report could not read: named, since every number is short of their rows."""
    if not run.skipped:
        return []
    n = len(run.skipped)
    return [f"{n} damaged shard{'s' if n > 1 else ''} skipped (their rows are not in this report): "
            f"{escape('; '.join(run.skipped))}."]


def no_requests_alarm(f: dict[str, Any]) -> list[str]:
    """A command-driver run where most successful iterations made no datastore request: its times are the
    commands' own (a first run that syncs nothing), which the first screen must say."""
    c = (f.get("spans") or {}).get("command") or {}
    if c.get("ok_without_requests", 0) * 2 > c.get("ok_iterations", 0) > 0:
        return [f["spans"]["no_requests"] + "."]
    return []


def _levels(f: dict[str, Any]) -> str:
    fl = f["fleet"]
    last = len(fl["levels"]) - 1
    rows = []
    for i, x in enumerate(fl["levels"]):
        role = " = ".join(n for n, j in (("start", 0), ("floor", fl["floor_index"]), ("end", last)) if j == i)
        rows.append([role, f"{x['t0']:.0f} - {x['t1']:.0f}", x["successes"], x["failures"], x["users"], x["rate"],
                     iv([x["lo"], x["hi"]]), x["per_user"]])
    verdict = table(["", "start", "floor", "end", "degraded", "how it moved", "start / floor"], [[
        "successful iterations/s", f"{fl['start_rate']:.3g} [{iv(fl['start_interval'])}]",
        f"{fl['floor_rate']:.3g} [{iv(fl['floor_interval'])}]", f"{fl['end_rate']:.3g} [{iv(fl['end_interval'])}]",
        fl["degraded"], rate_words(f)[1],
        fl["degradation_ratio"] if fl["degradation_ratio"] is not None
        else fl["degradation_note"]]])
    segs = table(["segment", "seconds", "succeeded", "failed", "users", "it/s", "95 % interval", "it/s per user"],
                 rows)
    extra = (f"<p>Window {f['window_s']:g} s; warm-up {fl['warmup_s']:.1f} s; dispersion of the counts "
             f"{fl['dispersion']:.2f} (1 = Poisson; intervals widened by it when above 1).</p>")
    return verdict + segs + extra


def _steps(f: dict[str, Any]) -> str:
    rows = []
    for name, s in f["steps"].items():
        dc = s.get("driver_change") or {}
        tr = s.get("trend") or {}
        rows.append([name, s["first"], s["last"], s["growth"], iv(s["interval"]), tr.get("rho"), s["grew"],
                     s.get("driver_label") or "-", dc.get("growth"), iv(dc.get("interval")), s.get("rho"),
                     s["explained"]])
    cmp = f["compared"]
    return (f"<p>Successful iterations between the start ({cmp['early_s'][0]:.0f}-{cmp['early_s'][1]:.0f} s) and "
            f"the {cmp['late_is']} ({cmp['late_s'][0]:.0f}-{cmp['late_s'][1]:.0f} s).</p>" +
            table(["step", "ms, start", f"ms, {cmp['late_is']}", "growth", "95 % interval", "rank trend",
                   "grew", "driver", "driver growth", "95 % interval", "step vs driver (rank)", "explains it"], rows))


def _counts(f: dict[str, Any]) -> str:
    rows = [[w["label"], w["first"], w["last"], w["growth"] if w["growth"] is not None else w["note"],
             iv(w["interval"]), (w.get("trend") or {}).get("rho"), w["grew"]] for w in f["work_counts"].values()]
    return table(["work count (successful iterations)", "start", "end", "growth", "95 % interval", "rank trend",
                  "grew"], rows)


def _percentiles(f: dict[str, Any]) -> str:
    keys = [f"p{p:g}" for p in PERCENTILES]
    rows = [[r["name"], r["count"], r["mean"], r["min"], *[r[k] for k in keys], r["max"]] for r in f["percentiles"]]
    return table(["ms", "count", "mean", "min", *[k.removeprefix("p") + " %" for k in keys], "max"], rows)


def _wait(f: dict[str, Any]) -> str:
    """The open fleet's wait (percentiles with their intervals), its sentence, and each stage's row."""
    out, w = "", f.get("wait")
    if w:
        rows = [[k.removesuffix("_ms"), w[k], *w["intervals"][k]] for k in ("p50_ms", "p95_ms", "p99_ms")]
        out += (f"<p>{escape(w['sentence'])}</p>" + table(["wait (ms)", "value", "95 % low", "95 % high"], rows)
                + table(["arrivals / s", "served / s", "queue growth / s", "queued at the end"],
                        [[w["arrivals_per_s"], w["served_per_s"], w["queue_growth_per_s"], w["queued_end"]]]))
    if f.get("stages"):
        rows = [[s["stage"], s["t0"], s["t1"], s["workers"], s["rate_per_s"], s["served_per_s"], s["p50_ms"],
                 s["p99_ms"], s["bound"]] for s in f["stages"]]
        out += "<h4>Stages</h4>" + table(["stage", "from s", "to s", "users", "rate asked / s", "served / s",
                                          "wait p50 ms", "wait p99 ms", "queue"], rows)
    return out


def _failures(f: dict[str, Any]) -> str:
    if not f["failures_table"]:
        return "<p>No iteration failed.</p>"
    rows = [[r["kind"], f'<span class="msg">{escape(r["message"])}</span>', r["count"], r["first_seen"],
             r["last_seen"]] for r in f["failures_table"]]
    more = (f"<p>{f['failure_messages_left_out']} rarer messages left out.</p>"
            if f["failure_messages_left_out"] else "")
    return table(["kind", "message", "occurrences", "first seen", "last seen"], rows, raw_cols=(1,)) + more


def _locust(run: Run) -> str:
    st = run.locust_stats
    if st is None:
        return ""
    cols = [c for c in ["Type", "Name", "Request Count", "Failure Count", "Median Response Time",
                        "Average Response Time", "Min Response Time", "Max Response Time", "Requests/s",
                        "Failures/s", "90%", "99%"] if c in st.columns]
    rows = [[None if v != v else v for v in r] for r in st[cols].itertuples(index=False)]  # NaN -> n/a
    return "<h4>Locust's request statistics (locust_stats.csv)</h4>" + table(cols, rows)


def _checks(f: dict[str, Any]) -> str:
    if not f.get("checks"):
        return ""
    if (f.get("outcome") or {}).get("checks_state") == "not evaluated":  # a run that did not complete: no verdict
        rows = [[c["name"], c["value"], c["limit"], "not evaluated", c["line"]] for c in f["checks"]]
        return ("<p>The run did not complete, so its checks are not evaluated; what they measured on the rows "
                "recorded:</p>" + table(["check", "measured", "limit", "result", ""], rows))
    rows = [[c["name"], c["value"], c["limit"], "passed" if c["passed"] else "FAILED", c["line"]] for c in f["checks"]]
    return table(["check", "measured", "limit", "result", ""], rows)


def _probe_generator_safety(f: dict[str, Any]) -> str:
    parts = []
    p = f.get("probe")
    if p:
        parts.append(f"<h4>The stand-in probe ({escape(p['op'])})</h4>" + table(
            ["samples", "first third, ms", "last third, ms", "growth", "95 % interval", "slowed"],
            [[p["samples"], p["first_ms"], p["last_ms"], p["growth"], iv(p["interval"]), p["slowed"]]]))
    gen = f.get("generator")
    if gen:
        parts.append("<h4>The load generator</h4>" + table(
            ["Locust process", "samples", "median CPU %", "max CPU %", "share of samples >= 90 %", "sends load",
             "the ceiling"],
            [[k, v["samples"], v["median"], v["max"], f"{v['saturated_share'] * 100:.0f} %" if v["samples"] >= 5
              else f"{v['samples']} sample(s): too few", v["sends_load"],
              v["saturated"]] for k, v in gen["processes"].items()]))
    sf = f.get("safety")
    if sf:
        parts.append("<h4>Safety</h4>" + table(["acknowledged", "lost", "phantom", "overlaps", "violations"],
                                                [[sf[k] for k in ("acknowledged", "lost", "phantom", "overlaps",
                                                                  "violations")]]))
        if sf["details"]:
            parts.append(table(["detail", ""], [[k, v] for k, v in flatten(sf["details"]).items()]))
    return "".join(parts)


def _stand_in(stand_in: dict[str, Any]) -> str | None:
    """``dynalite 4.0.0 (DynamoDB), seaweedfs 4.48 (S3)``: each service's server, or the one server's name."""
    if not stand_in:
        return None
    services = stand_in.get("services") or {}
    named = [f"{services[k]} ({label})" for k, label in (("dynamodb", "DynamoDB"), ("s3", "S3")) if services.get(k)]
    return ", ".join(named) if named else f"{stand_in.get('name')} {stand_in.get('version')}"


def _settings(run: Run, f: dict[str, Any]) -> str:
    info = run.info
    stand_in = info.get("stand_in") or {}
    meta = [["time range", f"{f['span']['start']} .. {f['span']['end']} ({f['span']['seconds']:.0f} s, from "
                           f"{f['span']['start_from']} / {f['span']['end_from']})"],
            ["stop reason", info.get("stop_reason")], ["backend", info.get("backend")],
            ["endpoint", info.get("endpoint_kind")],
            ["stand-in", _stand_in(stand_in)],
            ["workers (users)", f["workers"]], ["Locust processes", (info.get("fleet") or {}).get("processes")],
            ["host", info.get("host")], ["iterations", f"{f['rows']} ({f['successes']} succeeded, "
                                                       f"{f['failures']} failed)"]]
    glock = words.global_lock_said(info.get("scenario") or {}, info.get("backend"))
    if glock:
        meta.append(["global lock (two-phase)", glock])
    mode = words.reads_said(info.get("scenario") or {})
    if mode:
        meta.append(["lock, commit and reads", mode])
    scen = flatten(info.get("scenario") or {})
    vers = info.get("versions") or {}
    return (table(["", ""], meta) +
            ("<h4>Scenario settings</h4>" + table(["setting", "value"], [[k, v] for k, v in scen.items()])
             if scen else "") +
            ("<h4>Versions</h4>" + table(["package", "version"], [[k, v] for k, v in vers.items()]) if vers else ""))


def _verdict(f: dict[str, Any]) -> str:
    """The page's lead (before any table): how the run ended, what the fleet is bound by and whether that moved,
    the rate, what grew, the checks: the outcome's words (``harness/record/outcome.py``), as ``harness runs`` says
    them."""
    v = f.get("verdict") or {}
    box = verdict_box([("Outcome", v.get("outcome")), ("Bound by", v.get("bound")), ("Failures", v.get("failures")),
                       ("Rate", v.get("rate")), ("Datastore's own time", v.get("own_time")),
                       ("What grew", v.get("grew")), forecast_row(f), first_change_row(f),
                       ("Checks", v.get("checks"))])
    if (f.get("outcome") or {}).get("completion", "completed") != "completed":  # cut short: its line stands out
        box = box.replace("<tr><th>Outcome</th>", '<tr class="warn"><th>Outcome</th>', 1)
    return box


def forecast_row(f: dict[str, Any]) -> tuple[str, str | None]:
    """The first screen's forecast line (issue 59), a row of its own so the verdict's other rows move freely."""
    return "Forecast", forecast_sentence(f.get("forecast"), short=True)


def first_change_row(f: dict[str, Any]) -> tuple[str, str | None]:
    """The first screen's first change of the rate and what was recorded near it (issue 59), a row of its own."""
    return "First change", (f.get("changes") or {}).get("sentence")


def _changes(f: dict[str, Any]) -> str:
    """The change points beside the verdict's segments: the rate's and each step's, with what was near each."""
    ch = f.get("changes") or {}
    if ch.get("penalty") is None:
        return _said([ch["note"]]) if ch.get("note") else ""
    rows = [["rate", c["t_s"], c["before"], c["after"], c["unit"], "; ".join(c.get("near") or []) or "-"]
            for c in ch["rate"]]
    rows += [[f"{label} step", c["t_s"], c["before"], c["after"], c["unit"], ""]
             for label, cs in ch["steps"].items() for c in cs]
    head = (f"<h4>Change points ({escape(ch['method'])}, penalty {ch['penalty']:.3g} over {ch['windows']} windows "
            f"of {ch['window_s']:g} s from {ch['from_s']:.0f} s; at most {ch['false_alarm_rate']:.0%} of flat runs "
            "show one)</h4>")
    return head + (table(["signal", "at s", "before", "after", "unit", "recorded within a window"], rows)
                   if rows else "<p>No change point.</p>")


def _cost(f: dict[str, Any]) -> str:
    """The run priced on AWS, on-demand and provisioned side by side, and the price table's sources."""
    c = f.get("cost")
    if not c:
        return ""
    rows = [[mode, m["per_hour"], m["per_iteration"], m["per_hour_at_horizon"]] for mode, m in c["modes"].items()]
    out = _said([cost_sentence(c) or "", c["note"], (c.get("cloudwatch") or {}).get("sentence") or ""])
    out += table(["pricing", "$ / hour at this fleet", "$ / successful iteration", "$ / hour at the forecast's rate"],
                 rows)
    if c.get("units"):
        u = c["units"]
        out += table(["read request units", "write request units", "RRU / s", "WRU / s"],
                     [[u["read_request_units"], u["write_request_units"], u["rru_per_s"], u["wru_per_s"]]])
    out += "<h4>Prices (" + escape(f"{c['region']}, {c['currency']}") + ")</h4>" + table(
        ["price", "USD", "source", "as of"], [[p["price"], p["usd"], p["source"], p["as_of"]] for p in c["prices"]])
    if c.get("overridden_by"):
        out += _said([f"Prices overridden by {c['overridden_by']}."])
    return out


def _forecast(f: dict[str, Any]) -> str:
    """The forecast's sentence, its two fits and where it lands (``harness/report/forecast/``)."""
    fc = f.get("forecast")
    if not fc:
        return ""
    out = _said([forecast_sentence(fc) or ""])
    fits = fc.get("fits") or {}
    rows = [[k, v["y"], v["x"], v["shape"], v["formula"], iv(v["slope_interval"]), v["r2"], v["n"],
             f"{v['x_lo']:.4g}-{v['x_hi']:.4g}"] for k, v in fits.items() if isinstance(v, dict)]
    if rows:
        out += table(["fit", "y", "against x", "shape (AIC)", "formula", "slope / exponent 95 %", "R²", "points",
                      "x measured"], rows)
        out += table(["horizon", "s", "iterations", "count there", "step ms now", "step ms there", "it/s",
                      "95 % band", "bound", "extrapolation"],
                     [[fc["horizon"], fc["horizon_s"], fc["horizon_iterations"], fc["count_at_horizon"]["point"],
                       fc["step_ms_now"], fc["step_ms_at_horizon"]["point"], fc["rate"]["point"],
                       iv([fc["rate"]["lo"], fc["rate"]["hi"]]), fc["bound"], f"x{fc['extrapolation']:.3g}"]])
    return out


def _utilization(f: dict[str, Any]) -> str:
    """Every shared resource's utilization over the load (after the warm-up), then the bound per segment."""
    rows = []
    for u in f.get("utilization") or []:
        e = u["evidence"]
        if u["kind"] == "lock":
            extra = (f"held {e['held'] * 100:.0f} %, retry gaps {e['gap_share'] * 100:.0f} %, "
                     f"{e['grants_per_s']:.3g} grants/s, {e['waiters']:.2g} waiters, {e['timeouts']} timeouts, "
                     f"{e['holders_in_run']} holders")
        elif u["kind"] in ("capacity", "partition"):
            extra = (f"{e['used_per_s']:.4g} of {e['limit_per_s']:.4g} {'RCU' if e['units'] == 'read' else 'WCU'}/s"
                     + (f", {e.get('basis')}" if e.get("basis") else "")
                     + (f", {e['throttled']} throttled iterations" if e.get("throttled") else ""))
        elif u["kind"] == "generator" or e.get("basis") == "cpu":
            extra = words.cpu_samples(e["saturated_share"], e["samples"])
            if e.get("shares"):  # the machine: each process's share, and the machine's own total
                extra += "; " + ", ".join(f"{n} {v * 100:.0f} %" for n, v in e["shares"].items()) + (
                    f"; the machine {e['machine_busy'] * 100:.0f} % busy in all" if e.get("machine_busy") else "")
        elif u["kind"] == "stand-in":
            extra = f"probe {e['now_ms']:.3g} ms against {e['baseline_ms']:.3g} ms at its quickest"
        else:
            extra = f"{(e.get('share') or 0) * 100:.0f} % of it in {u['name']}" if u["name"] else ""
        rows.append([u["kind"], u["name"], f"{u['utilization'] * 100:.0f} %",
                     iv([x * 100 for x in u["interval"]]) if u["interval"] else "", u["saturated"], u["can_bind"],
                     extra])
    out = table(["resource", "name", "utilization", "95 % interval (%)", "saturated", "can bind", "evidence"], rows)
    seg = [[d["segment"] + 1, f"{d['seconds'][0]:.0f} - {d['seconds'][1]:.0f}", d["kind"] or "none", d["name"] or "",
            f"{d['utilization'] * 100:.0f} %" if d["utilization"] is not None else ""]
           for d in f.get("bottlenecks") or []]
    return out + ("<p>The bound per segment:</p>" + table(["segment", "seconds", "bound by", "name", "utilization"],
                                                           seg) if seg else "")


def _limits(f: dict[str, Any]) -> str:
    """The next ceilings: growing items against the 400 KB limit, the hottest keys against the per-key limit."""
    fs = f.get("limits") or []
    if not fs:
        return ""
    rows = []
    for x in fs:
        if x["kind"] == "item size":
            lo, hi = x["seconds_to_limit_interval"]
            rows.append([x["kind"], x["name"], f"{x['now']:,.0f} B of {x['limit']:,.0f} B",
                         f"{x['growth_per_iteration']:,.1f} B/iteration" if x["growth_per_iteration"] else "",
                         fmt(x["seconds_to_limit"]), f"{fmt(lo)} - {fmt(hi)}",
                         x["within_run"] or x["within_horizon"], x["sentence"]])
        else:
            u = "WCU" if x["units"] == "write" else "RCU"
            rows.append([x["kind"], x["name"], f"{x['used_per_s']:,.1f} of {x['limit_per_s']:,.0f} {u}/s",
                         f"{(x['share_of_modelled'] or 0) * 100:.0f} % of the modelled "
                         f"{x['modelled_limit_per_s']:,.1f}",
                         "", "", x["within_run"], x["sentence"]])
    return (table(["limit", "item or key", "now", "growth / share", "seconds to the limit", "95 % interval (s)",
                     "on course", "forecast"], rows))


def _requests(f: dict[str, Any]) -> str:
    """Each step's time split into requests x time per request + time outside them, start against late."""
    rows = []
    for name, s in f["steps"].items():
        d = s.get("requests")
        if not d:
            continue
        n, per, out = d["requests"], d["ms_per_request"], d["outside_ms"]
        rows.append([name, n["first"], n["last"], n["growth"], per["first"], per["last"], per["growth"], out["first"],
                     out["last"], ", ".join(d["grew_by"]) or "-"])
    if not rows:
        return "<p>Per-step requests were not recorded in this run.</p>"
    cmp = f["compared"]
    return table(["step", "requests, start", f"requests, {cmp['late_is']}", "growth", "ms/request, start",
                  f"ms/request, {cmp['late_is']}", "growth", "ms outside, start", f"ms outside, {cmp['late_is']}",
                  "what grew"], rows)


def _cloudwatch(f: dict[str, Any]) -> str:
    """cloudwatch.csv against the rows: each figure side by side, the difference named; notes one line each."""
    c = f["cloudwatch"]
    where = f"<p>Read from CloudWatch at {escape(str(c.get('where') or '?'))}: {c['datapoints']} datapoints " \
            "(cloudwatch.csv).</p>"
    notes = "".join(f'<p class="warn">{escape(n)}</p>' for n in c["notes"])
    body = table(["figure", "the harness counted", "AWS measured", "difference"], c["table"]) if c["table"] else ""
    return where + notes + body + _said(c["lines"])


FIGURES = ("rate.png", "forecast.png", "bound.png", "grew.png", "failures.png", "step_time.png", "causes.png",
           "work_counts.png", "lock_wait.png", "latency_percentiles.png", "probe.png", "generator.png", "wait.png",
           "observed.png")


def _observed(f: dict[str, Any]) -> str:
    """What the observer read, first to last sample, and what its reads cost per group."""
    ob = f.get("observed") or {}
    rows = [[c["label"], c["keys"], c["samples"], c["first"], c["last"], c["growth"], c["grew"],
             c.get("beside") or ""] for c in (ob.get("changes") or {}).values()]
    out = table(["measure", "keys", "samples", "first", "last", "growth", "grew", "beside the rows'"], rows)
    c = ob.get("cost") or {}
    if c:
        groups = [[k, v, c["stretched"].get(k, ""), (c["gaps"].get(k) or {}).get("count", 0)]
                  for k, v in c["intervals"].items()]
        out += "<h4>The observer's reads</h4>" + table(["group", "interval (s), longest", "stretched", "gaps"],
                                                        groups)
    return out


def _by_base(figures: list[tuple[str, str]]) -> dict[str, str]:
    """Each figure's HTML by its name without the run's prefix (``1-run-a-rate.png`` -> ``rate.png``)."""
    out = {}
    for name, cap in figures:
        base = next((b for b in FIGURES if name == b or name.endswith("-" + b)), name)
        out[base] = _figure(name, cap, lead=base == "rate.png")
    return out


def _spans(f: dict[str, Any]) -> str:
    """What the spans measured (and did not): a command-driver run's spans, the columns no span filled."""
    s = (f.get("spans") or {}).get("sentence")
    return f'<p class="note">{escape(s)}</p>' if s else ""
def _safety_lead(run: Run, f: dict[str, Any]) -> list[str]:
    """A safety scenario's first line: its verdict (acknowledged, lost, phantom, torn, corrupt, violations)."""
    sf = f.get("safety")
    asked = (((run.info.get("scenario") or {}).get("checks")) or {}).get("safety")
    if not sf:
        return ['<p class="warn">Safety: not checked (no safety result was recorded for this run; '
                '<code>harness check RUN_DIR --live</code> checks it while its table or bucket is there).</p>'] \
            if asked else []
    return [f'<p class="{"warn" if sf.get("violations") else "ok"}"><b>{escape(words.safety_line(sf))}</b></p>']


def _baseline_lead(f: dict[str, Any]) -> list[str]:
    b = f.get("baseline")
    if not b:
        return []
    return [f'<p class="{"warn" if b["regressions"] else "ok"}">{escape(b["sentence"])}</p>']


def _baseline(f: dict[str, Any]) -> str:
    """The run against its baseline, item by item (harness/report/run/baseline.py)."""
    b = f.get("baseline")
    if not b:
        return ""
    rows = [[x["name"], x["what"], x["base"], x["new"], x["unit"], x["ratio"], iv(x["interval"]), x["verdict"],
             "REGRESSION" if x["regression"] else ""] for x in b["items"]]
    return (f"<p>{escape(b['sentence'])} Ratios are this run over the baseline ({escape(b['baseline'])}), with 95 % "
            f"intervals; a regression is credibly worse by more than {b['threshold'] * 100:g} %.</p>"
            + table(["", "measure", "baseline", "this run", "unit", "ratio", "95 % interval", "verdict", ""], rows))


def first_screen(run: Run, f: dict[str, Any], figures: list[tuple[str, str]]) -> list[str]:
    """The verdict and the rate over time; then the bound and the step that grew, as pictures. A safety
    scenario leads with its safety verdict, a run compared with a baseline with that comparison."""
    fig = _by_base(figures)
    pair = [fig[b] for b in ("bound.png", "grew.png") if b in fig]
    w = f.get("wait")
    queue = [f'<p class="{"warn" if w["growing"] else "ok"}">{escape(w["sentence"])}</p>'] if w else []
    return [*_safety_lead(run, f), _verdict(f), *_baseline_lead(f), *queue, *_warnings(run, f),
            fig.get("rate.png", ""), f'<div class="pair">{"".join(pair)}</div>' if pair else ""]


def sections(run: Run, f: dict[str, Any], figures: list[tuple[str, str]]) -> list[str]:
    """The numbers behind the first screen, one ``<details>`` per question; each sentence said once."""
    fig = _by_base(figures)
    said = words.sections(f)
    rest = [fig[n] for n in fig if n not in FIGURES]  # a figure no section names (none today) still shows
    return [
        details("What binds the fleet? Every shared resource's utilization, and the bound per segment",
                _said(said["bound"]) + _utilization(f) + fig.get("lock_wait.png", "")),
        details("How did the rate move? The segments behind the start, floor and end",
                _said(said["rate"]) + _levels(f) + _changes(f)),
        details("What failed, and when?", _said(said["failures"]) + _failures(f) + fig.get("failures.png", "")),
        details("Which step grew, and what drives it? Steps, their counts and their requests",
                _said(said["steps"]) + _steps(f) + "<h4>Each step's time: requests x time per request + time outside "
                "them</h4>" + _requests(f) + fig.get("step_time.png", "") + fig.get("causes.png", "")),
        details("What did each iteration do? Work counts", _spans(f) + _counts(f) + fig.get("work_counts.png", "")),
        *([details("What did the datastore hold? Its own state, read from outside (observed.csv)",
                   _said(said["observed"]) + _observed(f) + fig.get("observed.png", ""))]
          if f.get("observed") else []),
        *([details("How long did arrivals wait? The wait from each intended start, and the queue",
                   _wait(f) + fig.get("wait.png", ""))] if f.get("wait") or f.get("stages") else []),
        details("How long did iterations take? Response times (ms)",
                _percentiles(f) + fig.get("latency_percentiles.png", "") + _locust(run)),
        details("What will the rate be at this growth? The forecast from what grows",
                _forecast(f) + fig.get("forecast.png", "")),
        details("What would it cost on AWS? The run's requests and units, priced", _cost(f)),
        details("What reaches a limit next? Item size and per-key throughput", _limits(f)),
        details("Did the scenario's checks pass?", _checks(f)),
        details("How does it compare with its baseline? The rate, the floor and each step", _baseline(f)),
        details("Was the load generator or the stand-in the limit? Lock safety and notes",
                _said(said["generator"] + [x for x in said["other"] if x not in _alarms(f)])
                + _probe_generator_safety(f) + fig.get("probe.png", "")
                + fig.get("generator.png", "")),
        *([details("What did AWS measure? CloudWatch beside the harness's own counts", _cloudwatch(f))]
          if f.get("cloudwatch") else []),
        details("What ran? The run, its scenario's settings and versions", _settings(run, f) + "".join(rest)),
    ]


def run_section(run: Run, f: dict[str, Any], figures: list[tuple[str, str]]) -> str:
    """One run among several: its own first screen and sections under its label."""
    return "\n".join([f"<h2>{escape(run.label)}</h2>", *first_screen(run, f, figures), *sections(run, f, figures)])


def side_by_side(runs: list[Run]) -> str:
    """Settings that differ between the runs, and their check results, in columns."""
    flat = [flatten(r.info.get("scenario") or {}) for r in runs]
    keys = sorted({k for d in flat for k in d})
    differ = [k for k in keys if len({repr(d.get(k)) for d in flat}) > 1]
    out = ""
    if differ:
        out += "<h3>Settings that differ</h3>" + table(["setting", *[r.label for r in runs]],
                                                       [[k, *[d.get(k) for d in flat]] for k in differ])
    return out


CSS = ".pair{display:flex;gap:1em}.pair figure{flex:1;min-width:0}"


def page(title: str, first: list[str], sections: list[str], comparison: dict | None = None,
         comparison_figures: list[tuple[str, str]] | None = None, runs: list[Run] | None = None) -> str:
    """One run: its first screen, then its sections. Several: the comparison first, then each run."""
    if not comparison:
        return frame(title, first, sections, CSS)
    lead = [_figure(n, a, lead=i == 0) for i, (n, a) in enumerate(comparison_figures or [])]
    said = verdict_box([("Scaling", s["sentence"]) for s in comparison["fleet_scaling"]]
                       + [("Backends", s["sentence"]) for s in comparison["backends"]]
                       or [("Runs", f"{len(comparison['runs'])} runs side by side")])
    numbers = table(["run", "workers", "steady rate, it/s", "95 % interval", "mean successful iteration, ms",
                     "ms per request"],
                    [[r["label"], r["workers"], r["steady"]["rate"], iv(r["steady"]["interval"]),
                      r["mean_iteration_ms"], r["ms_per_request"]] for r in comparison["runs"]])
    names = sorted({c["name"] for r in comparison["runs"] for c in r.get("checks") or []})
    checks = ""
    if names:
        cells = [[n, *[next((f"{'passed' if c['passed'] else 'FAILED'}: {c['line']}"
                             for c in r.get("checks") or [] if c["name"] == n), "-")
                       for r in comparison["runs"]]] for n in names]
        checks = "<h3>Checks</h3>" + table(["check", *[r["label"] for r in comparison["runs"]]], cells)
    cmp = details("Run against run: the steady rates, the settings that differ, the checks",
                  numbers + (side_by_side(runs) if runs else "") + checks, open_=True)
    return frame(title, [said, lead[0] if lead else ""], [cmp, *lead[1:], *sections], CSS)
