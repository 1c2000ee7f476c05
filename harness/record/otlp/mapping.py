"""From spans to the iteration row: which span names and attributes fill which of the row's columns.

Shipped for swamp core and its two datastore extensions (the facts are in docs/command-driver.md, with file
and commit), and overridable per column in a scenario's ``[driver.spans]``. A column is a list of rules
tried in order; the first rule whose spans give a value fills it (so an extension's ``lock acquire`` wins
over core's ``swamp.lock.acquire`` around it, and neither is counted twice). A column no rule matches is
null, not 0: the report names it as not measured.

Each step's ``*_requests`` and ``*_request_ms`` are the per-request spans (``DynamoDB <Op>``, ``S3 <op>``)
whose nearest step span is that step's: a request inside a lock acquire counts for the lock, not for the
``method run`` around it. Only leaf requests count (``S3 listAllObjects`` wraps the ``S3 listObjects`` it
pages through: the wrapper is no request of its own), and a step's request time is the time its requests
kept it busy (the union of their intervals: swamp's extensions push in parallel, so summing would count
the same milliseconds many times over).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from harness.record.otlp.decode import Span
from harness.record.schema import COUNT_COLUMNS, QUERY_COLUMNS, SIZE_COLUMNS, STEP_COLUMNS, STEP_REQUEST_COLUMNS

DURATION, COUNT = "duration", "count"
AGGS = ("sum", "max")
STEP_OF = {col: step for step, col in STEP_COLUMNS.items()}  # lock_wait_ms -> lock
INT_COLUMNS = frozenset(COUNT_COLUMNS + QUERY_COLUMNS + SIZE_COLUMNS)
LOCK_SETTING_COLUMNS = ("lock_ttl_ms", "lock_timeout_ms")  # the datastore's own lock settings, as its spans say
MAPPABLE = (tuple(STEP_COLUMNS.values()) + COUNT_COLUMNS + ("read_units", "write_units") + QUERY_COLUMNS + SIZE_COLUMNS
            + LOCK_SETTING_COLUMNS)


@dataclass(frozen=True)
class Rule:
    """Spans whose name matches one of ``spans`` (globs), with the attributes in ``where`` (globs on their
    text), under an ancestor named ``under`` and none named ``not_under``; each gives ``value`` (its
    duration, 1 for ``count``, or an attribute: a missing one gives the duration for a ``*_ms`` column,
    nothing for a count), summed or the largest (``agg``)."""

    spans: tuple[str, ...]
    value: str = DURATION
    where: tuple[tuple[str, str], ...] = ()
    under: str = ""
    not_under: str = ""
    agg: str = "sum"

    def matches(self, s: Span, names_above: list[str]) -> bool:
        if not any(fnmatchcase(s.name, g) for g in self.spans):
            return False
        if any(not fnmatchcase(str(s.attributes.get(k, "")), g) for k, g in self.where):
            return False
        if self.under and not any(fnmatchcase(n, self.under) for n in names_above):
            return False
        return not (self.not_under and any(fnmatchcase(n, self.not_under) for n in names_above))


@dataclass(frozen=True)
class Mapping:
    columns: dict[str, tuple[Rule, ...]]
    requests: tuple[str, ...] = ("DynamoDB *", "S3 *")  # the per-request spans

    def with_overrides(self, columns: dict[str, tuple[Rule, ...]], requests: tuple[str, ...] | None) -> Mapping:
        return Mapping({**self.columns, **columns}, requests or self.requests)


EXT_LOCK = ("dynamodb-datastore lock acquire", "s3-datastore lock acquire")
EXT_PULL = ("dynamodb-datastore pullChanged", "s3-datastore pull")
EXT_COMMIT = ("dynamodb-datastore commitPush", "s3-datastore commitPush")
EXT_PUSH = ("dynamodb-datastore pushChanged", "s3-datastore push")
TEARDOWN = "swamp.cli.teardown"  # swamp flushes its datastore sync (push, commit, release) at teardown
READ_OPS = ("DynamoDB GetItem", "DynamoDB Query", "DynamoDB Scan", "DynamoDB BatchGetItem", "DynamoDB TransactGetItems")
WRITE_OPS = ("DynamoDB PutItem", "DynamoDB UpdateItem", "DynamoDB DeleteItem", "DynamoDB BatchWriteItem",
             "DynamoDB TransactWriteItems")
UNITS = "aws.dynamodb.consumed_capacity.total"

SWAMP = Mapping({
    "lock_wait_ms": (Rule(EXT_LOCK, "lock.wait_duration_ms", not_under=TEARDOWN),
                     Rule(("swamp.lock.acquire",), not_under=TEARDOWN)),
    "commit_lock_ms": (Rule(EXT_LOCK, "lock.wait_duration_ms", under=TEARDOWN),),
    "pull_ms": (Rule(EXT_PULL), Rule(("swamp.datastore.sync",), where=(("sync.direction", "pull"),))),
    "method_ms": (Rule(("swamp.model.method.run",)),),
    "push_ms": (Rule(("dynamodb-datastore preparePush", "s3-datastore preparePush")), Rule(EXT_PUSH),
                Rule(("swamp.datastore.sync",), where=(("sync.direction", "push"),))),
    "commit_ms": (Rule(EXT_COMMIT),),
    # swamp's DynamoDB extension exports the catalog inside commitPush (no span of its own): the reference
    # command's separate export step is its own span name
    "export_ms": (Rule(("s3-datastore exportCatalog", "harness-swamp exportCatalog")),),
    "delete_ms": (Rule(("swamp.model.delete",)),),
    "prune_ms": (Rule(("swamp.data.prune",)),),
    # the reference command's collection after the release (fencing's garbage; swamp has no such step) counts as
    # the release, as the model driver counts it
    "release_ms": (Rule(("dynamodb-datastore lock release", "s3-datastore lock release", "harness-swamp collect")),),
    "files_pulled": (Rule(EXT_PULL, "datastore.files_pulled"),),
    "files_pushed": (Rule(EXT_COMMIT, "datastore.files_pushed"), Rule(EXT_PUSH, "datastore.files_pushed")),
    "index_entries_written": (Rule(EXT_COMMIT, "datastore.entries"),),
    "catalog_rows": (Rule(("*",), "datastore.rows", agg="max"),),
    "requests": (Rule(("DynamoDB *", "S3 *"), COUNT),),
    "lock_attempts": (Rule(("DynamoDB *", "S3 *"), COUNT, under="* lock acquire"),),
    "items_read": (Rule(("DynamoDB *",), "aws.dynamodb.count"),),
    "pull_items_read": (Rule(("DynamoDB *",), "aws.dynamodb.scanned_count", under="dynamodb-datastore pullChanged"),),
    "pull_queries": (Rule(("DynamoDB Query",), COUNT, under="dynamodb-datastore pullChanged"),),
    "read_units": (Rule(READ_OPS, UNITS),),
    "write_units": (Rule(WRITE_OPS, UNITS),),
    "bytes_received": (Rule(("S3 *",), "http.response.body.size"),),
})

# swamp 06b6147 with webframp's DynamoDB extension (a929b7a) and swamp-club's S3 extension (c25ec91), as the
# swamp driver runs them: `method run` takes the model's lock (`[<ns>/]data/<type>/<id>/.lock`), then the
# namespace's global lock (`.locks/<ns>.lock`; without a namespace the datastore's, `dynamodb://<table>` on
# DynamoDB, `.datastore.lock` on S3) for the commit, both inside `swamp.cli` (none under `swamp.cli.teardown`):
# each column is one lock's, told by its key, in the run command's own process (`data prune` takes the global
# lock too: that is the prune's).
MODEL_LOCK = (("lock.key", "*data/*/.lock"),)
GLOBAL_LOCK = (("lock.key", ".*lock"),)
TABLE_LOCK = (("lock.key", "dynamodb://*"),)
RUN = "harness.command run"
REAL_SWAMP = SWAMP.with_overrides({
    "lock_wait_ms": (Rule(EXT_LOCK, "lock.wait_duration_ms", where=MODEL_LOCK, under=RUN),
                     Rule(("swamp.lock.acquire",), where=MODEL_LOCK, under=RUN)),
    "commit_lock_ms": (Rule(EXT_LOCK, "lock.wait_duration_ms", where=GLOBAL_LOCK, under=RUN),
                       Rule(EXT_LOCK, "lock.wait_duration_ms", where=TABLE_LOCK, under=RUN)),
    # S3 says no files-pushed: its uploads (one putObject a file, the catalog export's object among them) under
    # preparePush count them; DynamoDB's commitPush says datastore.files_pushed
    "files_pushed": (Rule(EXT_COMMIT, "datastore.files_pushed"), Rule(EXT_PUSH, "datastore.files_pushed"),
                     Rule(("S3 putObject",), COUNT, under="s3-datastore preparePush")),
    # swamp's own lock settings (not a step: the reference command's spans carry none)
    "lock_ttl_ms": (Rule(EXT_LOCK, "lock.ttl_ms", agg="max"),),
    "lock_timeout_ms": (Rule(EXT_LOCK, "lock.timeout_ms", agg="max"),),
}, None)


@dataclass
class Mapped:
    """The row's measured columns (None: no span filled it) and the column each span fed (its span id)."""

    values: dict[str, Any] = field(default_factory=dict)
    column_of: dict[str, str] = field(default_factory=dict)


def _wrappers(spans: list[Span], requests: tuple[str, ...]) -> set[str]:
    """The request spans that wrap other request spans (``S3 listAllObjects`` over its ``S3 listObjects``)."""
    is_request = {s.span_id for s in spans if any(fnmatchcase(s.name, g) for g in requests)}
    return {s.parent_id for s in spans if s.span_id in is_request and s.parent_id in is_request}


def busy_ms(intervals: list[tuple[int, int]]) -> float:
    """The time covered by at least one of the intervals (ns pairs), in ms: overlapping requests once."""
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total / 1e6


def row_values(spans: list[Span], mapping: Mapping = SWAMP) -> Mapped:
    """The row's columns from one iteration's spans (every command's trace together)."""
    by_id = {s.span_id: s for s in spans}
    above = {s.span_id: _names_above(s, by_id) for s in spans}
    wrappers = _wrappers(spans, mapping.requests)
    leaves = [s for s in spans if s.span_id not in wrappers]  # a wrapper request is no request of its own
    out = Mapped()
    step_spans: dict[str, str] = {}  # span id -> the step column it fills
    for col in MAPPABLE:
        rules = mapping.columns.get(col, ())
        hit: list[Span] = []
        value = None
        for rule in rules:  # the first rule whose spans give a value (a span without the attribute gives none)
            hit = [s for s in leaves if rule.matches(s, above[s.span_id])]
            value = _value(col, rule, hit) if hit else None
            if value is not None:
                break
        out.values[col] = value
        if col in STEP_OF and hit:
            for s in hit:
                step_spans.setdefault(s.span_id, col)
                out.column_of.setdefault(s.span_id, col)
    for col in STEP_COLUMNS.values():  # each step's own requests
        n_col, ms_col = STEP_REQUEST_COLUMNS[STEP_OF[col]]
        filled = out.values.get(col) is not None
        out.values[n_col], out.values[ms_col] = (0, 0.0) if filled else (None, None)
    busy: dict[str, list[tuple[int, int]]] = {}
    for s in leaves:
        if not any(fnmatchcase(s.name, g) for g in mapping.requests):
            continue
        step = _nearest(s, by_id, step_spans)
        if step is None:
            continue
        n_col, ms_col = STEP_REQUEST_COLUMNS[STEP_OF[step]]
        out.values[n_col] += 1
        busy.setdefault(ms_col, []).append((s.start_ns, max(s.end_ns, s.start_ns)))
        out.column_of.setdefault(s.span_id, n_col)
    for ms_col, intervals in busy.items():
        out.values[ms_col] = busy_ms(intervals)
    return out


def _value(col: str, rule: Rule, hit: list[Span]) -> Any:
    if rule.value == COUNT:
        return len(hit)
    vals = []
    for s in hit:
        if rule.value == DURATION:
            vals.append(s.duration_ms)
        elif rule.value in s.attributes and _number(s.attributes[rule.value]) is not None:
            vals.append(_number(s.attributes[rule.value]))
        elif col.endswith("_ms"):
            vals.append(s.duration_ms)
    if not vals:
        return None
    v = max(vals) if rule.agg == "max" else sum(vals)
    return int(round(v)) if col in INT_COLUMNS else float(v)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    if isinstance(x, list):  # an array attribute (aws.dynamodb.table_names): not a number
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _names_above(s: Span, by_id: dict[str, Span]) -> list[str]:
    names, seen, p = [], {s.span_id}, s.parent_id
    while p and p in by_id and p not in seen:
        seen.add(p)
        names.append(by_id[p].name)
        p = by_id[p].parent_id
    return names


def _nearest(s: Span, by_id: dict[str, Span], step_spans: dict[str, str]) -> str | None:
    seen, p = {s.span_id}, s.parent_id
    while p and p not in seen:
        if p in step_spans:
            return step_spans[p]
        seen.add(p)
        parent = by_id.get(p)
        if parent is None:
            return None
        p = parent.parent_id
    return None


# ---- a scenario's [driver.spans] ----------------------------------------------------------------


def parse_overrides(table: Any, where: str) -> tuple[dict[str, tuple[Rule, ...]], tuple[str, ...] | None]:
    """``[driver.spans]``: ``<column> = [{ span = "...", value = "...", where = {...}, under = "...",
    not_under = "...", agg = "sum" }, ...]`` and ``requests = ["DynamoDB *", ...]``; a ValueError names the key."""
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table of columns, each a list of rules")
    cols: dict[str, tuple[Rule, ...]] = {}
    requests = None
    for key, rules in table.items():
        if key == "requests":
            if not isinstance(rules, list) or not rules or not all(isinstance(g, str) for g in rules):
                raise ValueError(f"{where}.requests must be a non-empty list of span name globs")
            requests = tuple(rules)
            continue
        if key not in MAPPABLE:
            raise ValueError(f"{where}.{key}: not a column spans can fill; choose from {', '.join(MAPPABLE)}")
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise ValueError(f"{where}.{key} must be a list of rule tables, e.g. [{{ span = \"myext commit\" }}]")
        cols[key] = tuple(_rule(r, f"{where}.{key}") for r in rules)
    return cols, requests


def _rule(r: dict, where: str) -> Rule:
    unknown = set(r) - {"span", "value", "where", "under", "not_under", "agg"}
    if unknown:
        raise ValueError(f"{where}: unknown key {sorted(unknown)[0]!r} (span, value, where, under, not_under, agg)")
    span = r.get("span")
    spans = (span,) if isinstance(span, str) else tuple(span) if isinstance(span, list) else ()
    if not spans or not all(isinstance(s, str) and s for s in spans):
        raise ValueError(f"{where}: span must be a span name glob or a list of them")
    cond = r.get("where", {})
    if not isinstance(cond, dict) or not all(isinstance(v, str) for v in cond.values()):
        raise ValueError(f"{where}: where must be a table of attribute = \"glob\"")
    agg = r.get("agg", "sum")
    if agg not in AGGS:
        raise ValueError(f"{where}: agg must be sum or max, got {agg!r}")
    for k in ("value", "under", "not_under"):
        if not isinstance(r.get(k, ""), str):
            raise ValueError(f"{where}: {k} must be a string")
    return Rule(spans, r.get("value", DURATION), tuple(sorted(cond.items())), r.get("under", ""),
                r.get("not_under", ""), agg)
