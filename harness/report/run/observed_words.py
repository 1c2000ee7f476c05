"""The observer's findings in words: what grew in the datastore, whether it agrees with the rows, what it cost."""

from __future__ import annotations

from typing import Any

from harness.report.run.causes import COUNT_LABELS
from harness.report.show import g, times


def _moved(c: dict[str, Any]) -> str:
    growth = f", {times(c['growth'])}" if c.get("growth") else ""
    return f"{g(c['first'])} -> {g(c['last'])}{growth}"


def change_sentence(ob: dict[str, Any], counts: dict[str, Any]) -> str | None:
    ch = ob.get("changes") or {}
    if not ch:
        return None
    every = f", every {g(ob['every_s'])} s" if ob.get("every_s") else ""
    grew = [c for c in ch.values() if c["grew"]]
    if not grew:
        held = "; ".join(f"{c['label']} {_moved(c)}" for c in ch.values())
        return f"Seen from outside (observed.csv{every}), nothing the observer reads grew: {held}."
    parts = []
    for what, c in ch.items():
        if not c["grew"]:
            continue
        part = f"{c['label']} {_moved(c)}"
        col = c.get("beside")
        row = counts.get(col) if col else None
        if row and row.get("first") is not None and what != "gsi_items":
            part += f" (beside the rows' {COUNT_LABELS.get(col, col)}: {g(row['first'])} -> {g(row['last'])})"
        parts.append(part)
    return f"Seen from outside (observed.csv{every}), the datastore grew: {'; '.join(parts)}."


def legacy_sentence(a: dict[str, Any] | None) -> str | None:
    if not a:
        return None
    if not a.get("pairs"):
        return f"The FILE key's items could not be set beside the pulls: {a.get('note')}."
    grew = (f"{g(a['observed_first'])} -> {g(a['observed_last'])} ({times(a['observed_growth'])}) against "
            f"{g(a['pulls_first'])} -> {g(a['pulls_last'])} ({times(a['pulls_growth'])})")
    how = (f"over {a['pairs']} sample(s), each paired with the {a['pulls']} pull(s) that ended in the second before "
           f"it (their items read less the files they fetched): the observed count is x{a['slope']:.3f} the pulls' "
           f"(least squares), {a['median_deviation'] * 100:.2g} % apart at the median sample, "
           f"{a['max_deviation'] * 100:.2g} % at most")
    verdict = "grew as the rows' items read per pull did, within 2 %" if a["agrees"] else \
        "did not grow as the rows' items read per pull did within 2 %"
    return f"The items under the GSI key FILE {verdict}: {grew}, {how}."


LEVEL_NAMES = {"index_entries": ("index entries", "index entries written per commit (a full commit writes them all)"),
               "registry_bytes": ("registry item's bytes", "registry bytes")}


def level_sentence(a: dict[str, Any] | None) -> str | None:
    if not a:
        return None
    mine, theirs = LEVEL_NAMES[a["what"]]
    n, k = a["samples"], a["between"]
    lead = "agree with" if a["agrees"] else "do not always agree with"
    off = f"; not in {', '.join(a['keys_off'])}" if a.get("keys_off") else ""
    return (f"The observer's {mine} {lead} the rows' {theirs}: {k} of {n} sample(s) lie between the rows that ended "
            f"before its reads began and after they came back, {a['exact']} equal to what a row had then (a commit "
            f"lands before its row ends){off}.")


def cost_sentences(c: dict[str, Any] | None) -> list[str]:
    if not c:
        return []
    unit = c["unit"] or "requests"
    spent = f"{g(c['requests'])} requests" + (f", {g(c['read_units'])} read units" if c["read_units"] else "")
    budget = ""
    if c["budget_rate"] is not None:
        within = "within it" if c["within_budget"] else "over it"
        budget = (f"; {g(c['rate'])} {unit}/s against its budget of {g(c['budget_rate'])} {unit}/s "
                  f"({c['budget_source']}): {within}")
    share = ""
    if unit == "read units" and c.get("share_of_fleet_units") is not None:
        x = c["share_of_fleet_units"]
        share = f"; {times(x)} the fleet's read units" if x >= 1 else f"; {x * 100:.2g} % of the fleet's read units"
    elif c.get("share_of_fleet_requests") is not None:
        share = f"; {c['share_of_fleet_requests'] * 100:.2g} % of the fleet's requests"
    out = [f"The observer's own reads, counted apart from the fleet's: {spent}{budget}{share}."]
    if c["stretched"]:
        groups = ", ".join(f"{k} every {g(v)} s" for k, v in c["stretched"].items())
        out.append(f"Reads that cost more than their share of an interval's budget were taken less often than every "
                   f"{g(c['every_s'])} s: {groups}.")
    if c["gaps"]:
        gaps = "; ".join(f"{k}: {v['count']} ({v['first']})" for k, v in c["gaps"].items())
        out.append(f"Samples the observer could not read (gaps in its series, the run went on): {gaps}.")
    return out


def sentences(f: dict[str, Any]) -> list[str]:
    ob = f.get("observed")
    if not ob:
        return []
    ag = ob.get("agreement") or {}
    said = [change_sentence(ob, f.get("work_counts") or {}), legacy_sentence(ag.get("legacy")),
            level_sentence(ag.get("index_entries")), level_sentence(ag.get("registry_bytes"))]
    return [s for s in said if s] + cost_sentences(ob.get("cost"))
