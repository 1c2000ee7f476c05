"""The story's numbers: a chapter's verdict from its runs' findings, the closing table, the figures' series.

Pure functions of data already read (findings from ``summary.json``, a
comparison, rows): no files, no plotting. ``harness/products/story/story.py`` reads the
story directory and writes the page; ``harness/products/story/figures.py`` draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.config.plan import PreAge
from harness.products.story import expect as ex
from harness.products.story.ladder import pre_aged_files
from harness.report.series import count_means, pick_window, rate_series, run_span, step_means, with_windows
from harness.report.show import g, shape_words


def growth_per_iteration(rows: pd.DataFrame, counts: list[str] | tuple[str, ...]) -> dict[str, float | None]:
    """How much each count grows per iteration of a worker: the within-worker least-squares slope over
    successful iterations (each worker's own line, pooled), so fleets of different speeds compare."""
    ok = rows[rows["ok"].to_numpy(dtype=bool)]
    out: dict[str, float | None] = {}
    for c in counts:
        if len(ok) < 3 or c not in ok.columns:
            out[c] = None
            continue
        x = ok["iteration"].to_numpy(dtype=float)
        y = ok[c].to_numpy(dtype=float)
        users = ok["user"].to_numpy()
        xd, yd = np.empty_like(x), np.empty_like(y)
        for u in np.unique(users):
            m = users == u
            xd[m], yd[m] = x[m] - x[m].mean(), y[m] - y[m].mean()
        den = float((xd * xd).sum())
        out[c] = float((xd * yd).sum() / den) if den > 0 else None
    return out


def values_per_iteration(rows: pd.DataFrame, counts: list[str] | tuple[str, ...]) -> dict[str, list[float]]:
    """Each count's value in every successful iteration that recorded it (``grew_with_items`` compares their
    means across pre-aged sizes)."""
    ok = rows[rows["ok"].to_numpy(dtype=bool)]
    out: dict[str, list[float]] = {}
    for c in counts:
        v = ok[c].to_numpy(dtype=float) if c in ok.columns else np.array([], dtype=float)
        out[c] = [float(x) for x in v[np.isfinite(v)]]
    return out


def size_of(run: dict[str, Any]) -> dict[str, Any]:
    """A run's pre-aged size as ``grew_with_items`` says it (``story.json``'s run record: its seed): how many
    files (swamp's layout) or model versions (the model's), and the models x versions it was given as."""
    s = run.get("seed") or {}
    seed = PreAge(int(s.get("models") or 0), int(s.get("versions") or 0), 0, s.get("layout"))
    return {"scenario": run["scenario"], "backend": run["backend"], "workers": run["workers"],
            "items": pre_aged_files(seed) if s else 0, "unit": "files" if seed.layout else "model versions",
            "size": f"{seed.models}x{seed.versions}" if s else "not pre-aged"}


def bound_of(f: dict[str, Any], run: str) -> dict[str, Any]:
    b = f["bottleneck"]
    return {"run": run, "kind": b["kind"], "name": b["name"], "utilization": b["utilization"],
            "interval": b["interval"], "seconds": b.get("seconds"), "label": ex.bound_label(b["kind"], b["name"]),
            "numbers": ex.bound_numbers(b), "sentence": b["sentence"]}


def grew_of(f: dict[str, Any], run: str) -> list[dict[str, Any]]:
    """The work counts that grew credibly, most first."""
    out = []
    for c, wc in (f.get("work_counts") or {}).items():
        if wc.get("grew"):
            out.append({"run": run, "count": c, "label": ex.COUNT_LABELS.get(c, c), "first": wc["first"],
                        "last": wc["last"], "growth": wc["growth"], "interval": wc["interval"]})
    return sorted(out, key=lambda x: -(x["growth"] if x["growth"] is not None else float("inf")))


def rate_of(f: dict[str, Any], run: str) -> dict[str, Any]:
    fl = f["fleet"]
    return {"run": run, "start": fl["start_rate"], "start_interval": fl["start_interval"],
            "floor": fl["floor_rate"], "floor_interval": fl["floor_interval"], "end": fl["end_rate"],
            "shape": fl["shape"], "degraded": fl["degraded"], "iterations": f["rows"], "failures": f["failures"],
            "sparse": ex.sparse_levels(fl)}


def judge(chapter: dict[str, Any], findings: dict[str, dict[str, Any]], comparison: dict[str, Any] | None,
          slopes: dict[str, dict[str, Any]] | None, levels: dict[str, dict[str, Any]] | None = None
          ) -> dict[str, Any]:
    """A chapter's record (``story.json``) from its static part (name, fix, runs, expectations) and its runs'
    findings by label: the checks, what bound each run, what grew, the rates, shown or not, the sentence
    (``levels``: each run's counts per iteration and pre-aged size, for ``grew_with_items``)."""
    runs = chapter["runs"]
    present = [r for r in runs if r["label"] in findings]
    checks = _checks(chapter, runs, present, findings, comparison, slopes, levels)
    shown = all(c.shown for c in checks)
    many = len(runs) > 1
    short = {r["label"]: _short(r["label"], runs) if many else "" for r in runs}
    out = dict(chapter)
    out.update(
        runs=[{**r, "short": short[r["label"]]} for r in runs],
        run_dirs=[r["run_dir"] for r in runs],
        expected_sentence=ex.expected_sentence(chapter["expected"], {r["label"]: r["expect"] for r in runs
                                                                     if r["expect"]}),
        checks=[c.as_dict() for c in checks],
        **_evidence(present, findings, comparison),
        with_items=[c.sentence for c in checks if c.what == "grew_with_items"],
        shown=shown, sentence=_verdict(checks, short if many else None))
    if not shown and chapter.get("why_not"):  # the real code does not do what the model does: said, not failed
        out["why"] = chapter["why_not"]
        out["sentence"] = f"Not shown, and why: {chapter['why_not'].rstrip('.')}. " + \
            out["sentence"].removeprefix("Not shown: ")
    return out


def _checks(chapter: dict[str, Any], runs: list[dict[str, Any]], present: list[dict[str, Any]],
            findings: dict[str, dict[str, Any]], comparison: dict[str, Any] | None,
            slopes: dict[str, dict[str, Any]] | None,
            levels: dict[str, dict[str, Any]] | None = None) -> list[ex.Check]:
    """The chapter's expectations judged on the runs it has, a failed check for each run with no report, and one
    failed check when it expects nothing at all."""
    checks = ex.judge_chapter(chapter["expected"], [{"label": r["label"], "findings": findings[r["label"]],
                                                      "expect": r["expect"]} for r in present],
                              comparison, slopes, levels)
    missing = [r["label"] for r in runs if r["label"] not in findings]
    checks += [ex.Check("run", m, False, f"{m}: the run has no report (it recorded no iteration)") for m in missing]
    if not checks:
        checks = [ex.Check("expect", None, False, "the chapter expects nothing its runs could show: give it an "
                                                  "expect table")]
    return checks


def _verdict(checks: list[ex.Check], short: dict[str, str] | None) -> str:
    """``Shown: ...`` when every check is, else what was not shown, then what was; each check led by its run's
    short label when the chapter has several runs (``short``)."""

    def said(c: ex.Check) -> str:
        return f"{short.get(c.run, c.run)}: {c.sentence}" if short is not None and c.run else c.sentence

    failed = [c for c in checks if not c.shown]
    if not failed:
        return "Shown: " + "; ".join(said(c) for c in checks) + "."
    sentence = "Not shown: " + "; ".join(said(c) for c in failed) + "."
    ok = [c for c in checks if c.shown]
    if ok:
        sentence += " Shown as expected: " + "; ".join(said(c) for c in ok) + "."
    return sentence


def _evidence(present: list[dict[str, Any]], findings: dict[str, dict[str, Any]],
              comparison: dict[str, Any] | None) -> dict[str, list[Any]]:
    """What the runs showed: what bound each, what grew, the rates, and the comparison's scaling and backends."""
    return {"bound_by": [bound_of(findings[r["label"]], r["label"]) for r in present],
            "grew": [x for r in present for x in grew_of(findings[r["label"]], r["label"])],
            "rates": [rate_of(findings[r["label"]], r["label"]) for r in present],
            "scaling": [s["sentence"] for s in (comparison or {}).get("fleet_scaling") or []],
            "backends": [s["sentence"] for s in (comparison or {}).get("backends") or []]}


def _short(label: str, runs: list[dict[str, Any]]) -> str:
    """A run's label in a cell: only what differs between the chapter's runs (``6w``, ``s3``, ``pruning s3``)."""
    r = next(x for x in runs if x["label"] == label)
    parts = []
    if len({x["scenario"] for x in runs}) > 1:
        parts.append(r["scenario"])
    if len({x["backend"] for x in runs}) > 1:
        parts.append(ex.BACKEND_LABELS.get(r["backend"], r["backend"]))
    if len({x["workers"] for x in runs}) > 1:
        parts.append(f"{r['workers']} workers")
    if r.get("seed") and len({size_of(x)["size"] for x in runs if x.get("seed")}) > 1:  # pre-aged sizes
        parts.append(size_of(r)["size"])
    return " ".join(parts)


def closing_rows(chapters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a chapter: fix, rate start -> floor, bound by, what grew, verdict (each cell a list of lines)."""
    out = []
    for c in chapters:
        runs = c["runs"]
        many = len(runs) > 1

        def lead(run: str, runs: list[dict[str, Any]] = runs, many: bool = many) -> str:
            return f"{_short(run, runs)}: " if many else ""

        rate = [f"{lead(r['run'])}{_rate_cell(r)}" for r in c["rates"]]
        bound = [f"{lead(b['run'])}{_bound_short(b)}" for b in c["bound_by"]]
        grew = []
        for r in runs:
            top = [x for x in c["grew"] if x["run"] == r["label"]][:2]
            text = ", ".join(f"{x['label']} {'x' + format(x['growth'], '.3g') if x['growth'] else '(from 0)'}"
                             for x in top) or "nothing credibly"
            grew.append(f"{lead(r['label'])}{text}")
        # a count against the pre-aged size (``grew_with_items``): run against run, not within one
        grew += [f"across sizes: {s.split(': ', 1)[-1]}" for s in c.get("with_items", [])]
        out.append({"number": c["number"], "name": c["name"], "fix": c.get("fix") or "", "rate": rate,
                    "bound_by": bound, "grew": grew, "shown": c["shown"],
                    "why": bool(c.get("why")), "verdict": _closing_verdict(c, runs, many),
                    **({"beside": _beside_words(c["beside"])} if c.get("beside") else {})})
    return out


def _beside_words(b: dict[str, Any]) -> str:
    """The model's verdict in the closing table (``--beside``): ``the model: shown`` / ``not shown``."""
    if not b.get("judged"):
        return "the model: not judged in its story"
    return f"the model: {'shown' if b['shown'] else 'not shown'}"


def _rate_cell(r: dict[str, Any]) -> str:
    """start -> floor and how it moved; for a run too sparse to read levels from, what it did over the run."""
    if r.get("sparse"):
        return str(r["sparse"])
    how = shape_words(r["shape"], bool(r.get("degraded")), r["start"], r["floor"], r.get("end", r["floor"]))
    return f"{g(r['start'])} -> {g(r['floor'])} it/s ({how})"


def _closing_verdict(c: dict[str, Any], runs: list[dict[str, Any]], many: bool) -> str:
    """shown; not shown, and why (a real-swamp chapter whose code differs: the source of the difference); or
    not shown and the checks that were not."""
    if c["shown"]:
        return "shown"
    if c.get("why"):
        return f"not shown, and why: {c['why']}"
    return "not shown: " + "; ".join((f"{_short(x['run'], runs)}: " if many and x["run"] else "") + x["sentence"]
                                     for x in c["checks"] if not x["shown"])


def _bound_short(b: dict[str, Any]) -> str:
    if b["kind"] is None:
        return "nothing (think time)"
    u = f" {b['utilization'] * 100:.0f} %" if b["utilization"] is not None else ""
    if b["kind"] == "lock":
        return f"a lock{u} ({b['name']})"
    if b["kind"] == "step":
        return f"{b['name']}{u} of the workers' time"
    return f"{b['label']}{u}"


def run_series(info: dict[str, Any], rows: pd.DataFrame, counts: list[str], steps: list[str]
               ) -> dict[str, Any]:
    """One run's rate (successes and failures per second), counts and step means per window, for the figures."""
    span = run_span(info, rows)
    ok = int(rows["ok"].sum())
    window = pick_window(span.seconds, max(ok, 1))
    binned = with_windows(rows, span, window)
    rate = rate_series(binned, span, window)
    cm = count_means(binned, span, window) if counts else pd.DataFrame(index=rate.index)
    sm = step_means(binned, span, window) if steps else pd.DataFrame(index=rate.index)
    t = rate.index.to_numpy(dtype=float) + window / 2
    return {"seconds": span.seconds, "window": window, "t": t, "ok_rate": rate["ok_rate"].to_numpy(),
            "failed_rate": rate["failed_rate"].to_numpy(),
            "counts": {c: cm[c].to_numpy() for c in counts if c in cm.columns},
            "steps": {s: sm[s].to_numpy() for s in steps if s in sm.columns}}


def figure_counts(chapter: dict[str, Any]) -> list[str]:
    """The counts a chapter's figure shows: those its expectations name (what it rests on), in their order."""
    names: list[str] = []
    exps = [chapter["expected"], *[r["expect"] for r in chapter["runs"]]]
    for e in exps:
        for k in ("grew", "steady", "same_growth", "grew_with_items"):
            names += e.get(k, [])
        names += list(e.get("at_most", {}))
        if e.get("explained_by"):
            names.append(e["explained_by"])
    return list(dict.fromkeys(names))[:3]


STEP_OF_COUNT = {"pull_items_read": "pull_ms", "index_entries_written": "commit_ms", "catalog_rows": "export_ms",
                 "files_pushed": "push_ms", "lock_attempts": "lock_wait_ms"}


def figure_steps(chapter: dict[str, Any]) -> list[str]:
    """The step a chapter's ``explained_by`` names (its time beside the count), if any."""
    exps = [chapter["expected"], *[r["expect"] for r in chapter["runs"]]]
    return list(dict.fromkeys(STEP_OF_COUNT[e["explained_by"]] for e in exps if e.get("explained_by")
                              in STEP_OF_COUNT))[:1]


def bound_segments(f: dict[str, Any]) -> list[dict[str, Any]]:
    """Per segment of a run: the bound's kind, name and utilization with its interval (``findings.bottlenecks``)."""
    return [{"t0": d["seconds"][0], "t1": d["seconds"][1], "kind": d["kind"], "name": d["name"],
             "utilization": d["utilization"], "interval": d["interval"]} for d in f.get("bottlenecks") or []]
