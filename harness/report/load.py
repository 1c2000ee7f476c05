"""Open run directories for reporting: validate, read only the needed columns and side files.

A run directory is one with ``run.json`` and ``iterations/``. A web UI session
is a directory whose tests are run directories of their own (``tests/001/``);
anything that looks for runs treats each test as a run.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.errors import HarnessError
from harness.metrics.lockuse import EVENT_FIELDS, LOCK_EVENTS
from harness.record import runinfo
from harness.record.keys import KEYS_CSV
from harness.record.memory import give_back
from harness.record.processes import worker_pid_names
from harness.record.reader import read_rows, shard_paths, skipped_shards
from harness.record.schema import QUERY_COLUMNS, SIZE_COLUMNS, STEP_REQUEST_COLUMNS
from harness.record.schema import STEP_COLUMNS as _SCHEMA_STEPS

STEP_COLUMNS = [c for c in _SCHEMA_STEPS.values() if c != "release_ms"]  # the steps a report stacks
COUNT_COLUMNS = ["pull_items_read", "index_entries_written", "catalog_rows", "files_pushed", "lock_attempts",
                 "read_units", "write_units"]
# per step: requests made and ms inside them (null in runs recorded before the rows had them); index reads per pull
REQUEST_COLUMNS = [c for step, pair in STEP_REQUEST_COLUMNS.items() for c in pair if step != "release"]
REPORT_COLUMNS = ["ts_start", "ts_end", "ts_intended", "wait_ms", "user", "ok",
                  "error_kind", "error", "total_ms", "requests", *STEP_COLUMNS,
                  *COUNT_COLUMNS, *REQUEST_COLUMNS, *QUERY_COLUMNS, *SIZE_COLUMNS,
                  "spans", "spans_rejected", "command_ms",  # the command driver's (null under the model's)
                  "after_exit_ms", "lock_ttl_ms", "lock_timeout_ms",
                  "files_pulled"]  # a pull's content reads, apart from its index reads (report/run/observed.py)
READ_BATCH_BYTES = 16 << 20  # history files parsed together, up to this many bytes at once
SKIP_DIRS = {"report", "iterations", "history", "figures", "jobs", "seed-state", ".ipynb_checkpoints", "spans",
             "workdirs"}


@dataclass
class Run:
    path: Path
    info: dict
    rows: pd.DataFrame
    partial: bool
    probes: pd.DataFrame | None = None  # constant-cost request latencies (stand-in detection)
    generator: pd.DataFrame | None = None  # the load generator's own CPU per Locust process
    users: pd.DataFrame | None = None  # Locust's user count over time (ts, users)
    safety: dict | None = None  # the lock-safety checker's result
    locust_stats: pd.DataFrame | None = None  # Locust's own request table
    locks: pd.DataFrame | None = None  # lock events from history/*.jsonl (grant, release, lock_timeout, renew)
    keys: pd.DataFrame | None = None  # keys.csv: capacity units per partition key per interval
    processes: pd.DataFrame | None = None  # processes.csv: the harness's processes and the machine, by CPU
    spans: dict[str, int] | None = None  # the spans table's counts (a command-driver run): spans, late, unjoined
    observed: pd.DataFrame | None = None  # observed.csv: the datastore's own state, read from outside
    skipped: list[str] = field(default_factory=list)  # damaged iteration shards left out, each "name (why)"

    @property
    def label(self) -> str:
        fleet = self.info.get("fleet", {}).get("workers", "?")
        name = self.info.get("scenario_name", self.path.name)
        return f"{name} / {self.info.get('backend', '?')} / {fleet} workers"


def is_run(p: Path) -> bool:
    return (p / "run.json").is_file() and (p / "iterations").is_dir()


def find_runs(root: str | Path, depth: int = 4) -> list[Path]:
    """Every run directory under ``root`` (itself included), session tests as runs, oldest first.

    Directories that are not runs (``jobs/``, comparison reports, a session's
    own top level) are skipped, not errors.
    """
    root = Path(root)
    found: list[Path] = []

    def walk(p: Path, d: int) -> None:
        if is_run(p):
            found.append(p)
        if d == 0:
            return
        try:
            children = sorted(c for c in p.iterdir() if c.is_dir() and c.name not in SKIP_DIRS
                              and not c.name.startswith("."))
        except OSError:
            return
        for c in children:
            walk(c, d - 1)

    if root.is_dir():
        walk(root, depth)
    return sorted(found, key=_started)


def _started(p: Path) -> tuple[str, str]:
    try:
        started = str(json.loads((p / "run.json").read_text()).get("started_at") or "")
    except (OSError, json.JSONDecodeError):
        started = ""
    return started, str(p)


def expand(paths: list[str | Path]) -> list[Path]:
    """The runs the user named: a run as itself, a session (or any folder of runs) as the runs in it."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if is_run(p) or not p.is_dir():
            out.append(p)
            continue
        inside = [r for r in find_runs(p) if r != p]
        out.extend(inside or [p])  # nothing inside: open_run says what is wrong with it
    return out


def open_run(path: str | Path) -> Run:
    """One-line errors for what is not a run or has nothing to report yet."""
    p = Path(path)
    if not p.is_dir():
        raise HarnessError(f"{p} is not a directory: pass a run directory that `harness run` printed")
    info_path = p / "run.json"
    if not info_path.exists():
        raise HarnessError(f"{p} is not a run directory (no run.json): pass a directory that `harness run` made")
    try:
        info = json.loads(info_path.read_text())
    except json.JSONDecodeError:
        raise HarnessError(f"{info_path} is not valid JSON: the run directory is damaged") from None
    if not shard_paths(p):
        raise HarnessError(f"{p} has no iteration rows yet: wait for the run to record some, or check locust.log")
    # counts, ms sums, sizes: float32 (and a null), cast while still Arrow
    rows = read_rows(p, REPORT_COLUMNS, float32=(*REQUEST_COLUMNS, *QUERY_COLUMNS, *SIZE_COLUMNS))
    skipped = skipped_shards(rows)  # damaged shards left out (and the spans table's, below)
    if rows.empty and skipped:
        raise HarnessError(f"{p} has no intact iteration rows: every shard is damaged ({len(skipped)} skipped, "
                           f"the first {skipped[0]})")
    if rows.empty:
        raise HarnessError(f"{p} has no iteration rows: the run recorded nothing, see locust.log")
    rows["error"] = rows["error"].fillna("")
    rows["error_kind"] = rows["error_kind"].fillna("")
    partial = info.get("status") != "finished"
    spans = _span_counts(p, skipped)
    return Run(p, info, rows, partial, probes=_probes(p), generator=_generator(p), users=_users(p),
               safety=_safety(p), locust_stats=_locust_stats(p), locks=lock_events(p), keys=_keys(p),
               processes=read_processes(p, info), spans=spans,
               observed=observed(p), skipped=skipped)


def _span_counts(p: Path, skipped: list[str]) -> dict[str, int] | None:
    """The spans table's size, its late spans and those of no iteration (two columns read, not the table); its
    damaged shards added to ``skipped``."""
    from harness.record.spans import read_spans

    t = read_spans(p, ["late", "iteration"])
    if t is None:
        return None
    skipped.extend(skipped_shards(t))
    return {"spans": int(len(t)), "late": int(t["late"].fillna(False).sum()),
            "unjoined": int(t["iteration"].isna().sum())}


def _csv(path: Path, need: set[str]) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return None
    if df.empty or not need <= set(df.columns):
        return None
    return df


def _probes(p: Path) -> pd.DataFrame | None:
    df = _csv(p / "probes.csv", {"ts", "ms"})
    if df is None:
        return None
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    if "op" not in df.columns:
        df["op"] = "probe"
    df["op"] = df["op"].fillna("probe").astype(str)
    return df.dropna(subset=["ms"])


def _generator(p: Path) -> pd.DataFrame | None:
    df = _csv(p / "generator.csv", {"ts", "process", "cpu_percent"})
    if df is None:
        return None
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    df["process"] = df["process"].astype(str)
    df["cpu_percent"] = pd.to_numeric(df["cpu_percent"], errors="coerce")
    return df.dropna(subset=["cpu_percent"])


def read_processes(p: Path, info: dict | None = None) -> pd.DataFrame | None:
    """processes.csv; a web session's test (``tests/NNN/``) reads its session's, over the test's own span."""
    need = {"ts", "process", "role", "cpu_percent", "cores"}
    df = _csv(p / "processes.csv", need)
    if df is None and p.parent.name == runinfo.TESTS_DIR:
        df = _csv(p.parent.parent / "processes.csv", need)
    if df is None:
        return None
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    df["process"], df["role"] = df["process"].astype(str), df["role"].astype(str)
    df["cpu_percent"] = pd.to_numeric(df["cpu_percent"], errors="coerce")
    df["process"] = worker_names(df["process"], info)
    return df.dropna(subset=["cpu_percent"])


def worker_names(process: pd.Series, info: dict | None) -> pd.Series:
    """``worker@<pid>`` as the rows and generator.csv name that worker (``worker-N``, by the pid run.json's
    ``processes`` records); a pid it does not record keeps its sampled name."""
    by_pid = worker_pid_names((info or {}).get("processes"))
    return process.map(lambda n: by_pid.get(n, n)) if by_pid else process


def _users(p: Path) -> pd.DataFrame | None:
    """Locust's user count per history row (the Aggregated line), as (ts, users)."""
    df = _csv(p / "locust_stats_history.csv", {"Timestamp", "User Count", "Name"})
    if df is None:
        return None
    df = df[df["Name"] == "Aggregated"]
    if df.empty:
        return None
    return pd.DataFrame({"ts": pd.to_datetime(df["Timestamp"], unit="s", utc=True),
                         "users": pd.to_numeric(df["User Count"], errors="coerce")}).dropna()


def _safety(p: Path) -> dict | None:
    path = p / "safety.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {"unreadable": str(path)}
    return data if isinstance(data, dict) else None


def _locust_stats(p: Path) -> pd.DataFrame | None:
    return _csv(p / "locust_stats.csv", {"Name", "Request Count", "Failure Count"})


def lock_events(p: Path) -> pd.DataFrame | None:
    """The lock's events from ``history/*.jsonl`` as compact columns (None without a history).

    A nine-hour run holds millions of events, so they are parsed in bulk (pyarrow's JSON reader, file by
    file) and kept lean: only the lock's event types and fields; type, key and holder as categoricals; the
    nonce (which pairs a release with its grant) as an int32 code, one per distinct string over every file
    (``_one_code``). A file the reader cannot parse whole (a line cut short by a crash) is read line by line,
    skipping what does not parse.
    """
    files = sorted((p / "history").glob("*.jsonl")) if (p / "history").is_dir() else []
    if not files:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    schema = pa.schema([(f, pa.bool_() if f == "ok" else pa.float64() if f.endswith("_ms") else pa.string())
                        for f in EVENT_FIELDS])
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    # one thread: as fast here (the batches are small) and its buffers are freed where they were made
    serial = pj.ReadOptions(use_threads=False)
    wanted = pa.array(list(LOCK_EVENTS))
    vocab: dict[str, dict[str, int]] = {"type": {}, "key": {}, "holder": {}}
    parts: dict[str, list[np.ndarray]] = {c: [] for c in EVENT_FIELDS}
    nonce_dicts: list[pa.Array] = []  # each batch's distinct nonces; parts["nonce"] holds codes into them

    def codes(col: pa.ChunkedArray, name: str) -> np.ndarray:
        enc = pc.dictionary_encode(col).combine_chunks()
        known = vocab[name]
        lookup = np.array([known.setdefault(v, len(known)) for v in enc.dictionary.to_pylist()] + [-1],
                          dtype=np.int32)
        idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        return lookup[idx]

    def parse(batch: list[Path]) -> list[pa.Table]:
        """One parse for many small files (a run flushes one every 5 s); file by file when that fails."""
        blob = b"".join(b if b.endswith(b"\n") or not b else b + b"\n" for b in (f.read_bytes() for f in batch))
        try:
            return [pj.read_json(io.BytesIO(blob), read_options=serial, parse_options=opts)] if blob.strip() else []
        except pa.ArrowInvalid:
            if len(batch) > 1:
                return [t for f in batch for t in parse([f])]
            return [pa.Table.from_pandas(_events_line_by_line(batch[0]), schema=schema, preserve_index=False)]

    batches, size, batch = [], 0, []
    for f in files:
        batch.append(f)
        size += f.stat().st_size
        if size >= READ_BATCH_BYTES:
            batches.append(batch)
            batch, size = [], 0
    if batch:
        batches.append(batch)
    for t in (t for b in batches for t in parse(b)):
        keep = pc.is_in(t["type"], value_set=wanted)
        if not pc.all(keep).as_py():  # filtering copies every column (0.2 s a batch): only when it drops some
            t = t.filter(keep)
        if t.num_rows == 0:
            continue
        for c in ("type", "key", "holder"):
            parts[c].append(codes(t[c], c))
        enc = pc.dictionary_encode(t["nonce"]).combine_chunks()  # this batch's; merged over all batches below
        parts["nonce"].append(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32))
        nonce_dicts.append(enc.dictionary)
        del enc
        for c in EVENT_FIELDS:
            if c.endswith("_ms"):
                parts[c].append(t[c].to_numpy())
        parts["ok"].append(t["ok"].fill_null(False).to_numpy(zero_copy_only=False))
        del t
        give_back()  # each batch's parse in fresh pages otherwise: the pool and the C heap would keep them all
    if not parts["type"]:
        return None

    # Each column is built while its parts are freed, and given its own block (a frame built from a dict
    # stacks same-typed columns: one more copy of them all): the peak is the parts plus one column.
    out = pd.DataFrame(index=pd.RangeIndex(sum(len(x) for x in parts["type"])))
    for name in ("type", "key", "holder"):
        out[name] = pd.Categorical.from_codes(np.concatenate(parts.pop(name)), categories=list(vocab[name]))
    out["nonce"] = _one_code(parts.pop("nonce"), nonce_dicts)
    del nonce_dicts
    give_back()  # the parsed JSON's buffers and the parts: the pool and the C heap keep them otherwise
    out["ok"] = np.concatenate(parts.pop("ok"))
    for c in EVENT_FIELDS:
        if c.endswith("_ms"):
            out[c] = np.concatenate(parts.pop(c))
    return out


def _one_code(codes: list, dictionaries: list) -> np.ndarray:
    """Per-batch codes into per-batch dictionaries -> one int32 code per distinct string (-1 stays -1).

    Only the batches' distinct strings are encoded together, not every event's: the nonce strings of a long
    run's millions of events are its history's largest column.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not dictionaries:
        return np.zeros(0, dtype=np.int32)
    merged = pc.dictionary_encode(pa.concat_arrays(dictionaries)).indices.to_numpy(zero_copy_only=False)
    out, at = [], 0
    for local, d in zip(codes, dictionaries, strict=True):
        lookup = np.append(merged[at:at + len(d)], -1).astype(np.int32)  # code -1 (no nonce) is the last
        out.append(lookup[local])
        at += len(d)
    return np.concatenate(out)


def _events_line_by_line(path: Path) -> pd.DataFrame:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(e, dict) and e.get("type") in LOCK_EVENTS:
            out.append({k: e.get(k) for k in EVENT_FIELDS})
    return pd.DataFrame.from_records(out, columns=list(EVENT_FIELDS))



def observed(p: Path) -> pd.DataFrame | None:
    """``observed.csv`` (``time,what,key,value``): ``num`` is the value as a number (NaN for text: a lock's
    holder, a gap's reason); None when the run has none (the observer off, or a run from before it)."""
    df = _csv(p / "observed.csv", {"time", "what", "key", "value"})
    if df is None:
        return None
    df["time"] = pd.to_numeric(df["time"], errors="coerce")
    df = df.dropna(subset=["time"])
    df["what"] = df["what"].astype(str)
    df["key"] = df["key"].astype(object).fillna("").astype(str)
    df["value"] = df["value"].astype(object).fillna("").astype(str)
    df["num"] = pd.to_numeric(df["value"], errors="coerce")
    return df


def _keys(p: Path) -> pd.DataFrame | None:
    """``keys.csv``: read and write units per partition key per interval (top keys only), when recorded."""
    df = _csv(p / KEYS_CSV, {"ts", "table", "key", "read_units", "write_units"})
    if df is None:
        return None
    df["ts"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    for c in ("read_units", "write_units", "throttles"):
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0.0)
    # an all-empty column is read as float NaN: to object first, so the blanks fill as "" (the base table)
    df["index"] = df["index"].astype(object).fillna("").astype(str) if "index" in df.columns else ""
    df["key"] = df["key"].astype(object).fillna("").astype(str)
    df["table"] = df["table"].astype(str)
    return df
