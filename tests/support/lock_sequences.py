"""The requests the harness makes under each lock, per backend, profile and run kind, as docs/swamp-today.md tables
them beside swamp's (tests/unit/datastore/test_lock_sequences.py checks the table against this; a drift fails).

    python -m tests.support.lock_sequences        # prints the table's harness columns, to paste after a change

One model run is recorded per row, on in-process moto and a fake clock, with a scenario's own settings (the
backend built by the plan's factory, the worker by ``SwampWorker``): the model's second run (its first made its
files), requests in the order they were sent, concurrent ones one after another (a serial executor: the
harness's waves of 10 files are in the order the code starts them). Each request is named by its operation and
what it touches (``lock``, ``entry``, ``chunks``, ``SEQ``, ``registry``, ``meta``, ``shard``, ...); repeats are
written ``n × (...)``. A row per lock: what taking it costs when it is free (``take``), what is sent while it
is held (``held``; the model lock's shows the global lock's section as ``[global lock]``), and giving it back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

# (backend, profile, run) -> the scenario it is recorded with, and its fencing
ROWS: dict[tuple[str, str, str], tuple[str, bool]] = {
    (b, "two-phase", run): ("two-phase-namespaced", run == "fenced") for b in ("dynamodb", "s3")
    for run in ("swamp's own", "fenced")
} | {(b, "one-lock", "fenced"): ("namespaced", True) for b in ("dynamodb", "s3")}
GLOBAL, MODEL = "global lock", "model lock"


class Serial(Executor):
    """Runs what is submitted at once, in order (so concurrent requests are recorded in a fixed order)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            f.set_exception(e)
        return f


def _ddb_label(op: str, p: dict) -> str:
    if op == "BatchWriteItem":
        reqs = next(iter(p["RequestItems"].values()))
        r = reqs[0]
        kind, key = ("put", r["PutRequest"]["Item"]) if "PutRequest" in r else ("delete", r["DeleteRequest"]["Key"])
        what = _ddb_key(key)
        return f"BatchWriteItem {what}" if kind == "put" else f"BatchWriteItem deletes ({what})"
    if op == "BatchGetItem":
        return "BatchGetItem " + _ddb_key(next(iter(p["RequestItems"].values()))["Keys"][0])
    if op == "Query":
        return "Query GSI" if p.get("IndexName") else "Query chunks"
    return f"{op} {_ddb_key(p.get('Key') or p.get('Item') or {})}"


def _ddb_key(key: dict) -> str:
    pk, sk = key.get("pk", {}).get("S", ""), key.get("sk", {}).get("S", "")
    if pk.startswith("LOCK#"):
        return "lock"
    if pk.startswith("SYNCSTATE#"):
        return sk
    if pk == "PARTITIONS#registry":
        return "registry"
    if pk.startswith("PARTITIONS#"):
        return "harness registry"
    if sk.startswith("CHUNK#") or sk.startswith("BLOB#"):
        return "chunks"
    if sk.startswith("V#"):
        return "versions"
    if sk == "BLOB":
        return "export head"
    return "entry"


def _s3_label(op: str, p: dict, locks: set[str]) -> str:
    key = p.get("Key") or ""
    if op in ("HeadBucket", "ListObjectsV2"):
        return op
    if op == "DeleteObjects":
        return "DeleteObjects superseded"
    if any(key.endswith(k) for k in locks):
        what = "lock"
    elif key.endswith("_index/_meta.json"):
        what = "meta"
    elif "/_index/" in f"/{key}":
        what = "shard"
    elif key.endswith(".datastore-index.json"):
        what = "monolith"
    else:
        what = "content"
    return f"{op} {what}"


@dataclass
class Log:
    """Requests and lock markers, in order."""

    items: list[tuple[str, str]]

    def mark(self, what: str, key: str) -> None:
        self.items.append((what, key))


def compress(labels: list[str]) -> str:
    """Repeats as ``n × (...)``: at each place the repeated run covering the most requests (shortest unit first)."""
    out, i = [], 0
    while i < len(labels):
        best = (1, 1)
        for k in range(1, 9):
            unit = labels[i:i + k]
            if len(unit) < k:
                break
            n = 1
            while labels[i + n * k:i + (n + 1) * k] == unit:
                n += 1
            if n > 1 and n * k > best[0] * best[1]:
                best = (k, n)
        k, n = best
        unit = labels[i:i + k]
        if n == 1:
            out.append(unit[0])
        else:
            out.append(f"{n} × " + (unit[0] if k == 1 else f"({', '.join(unit)})"))
        i += k * n
    return ", ".join(out) or "-"


def _kind(key: str) -> str:
    return MODEL if "/data/" in f"/{key}" and key.endswith("/.lock") else GLOBAL


@contextmanager
def _mocked() -> Iterator[Any]:
    import boto3
    from moto import mock_aws

    from harness.aws.instrument import instrument

    with mock_aws():
        session = boto3.Session(region_name=os.environ["AWS_DEFAULT_REGION"])
        yield instrument(session.client("dynamodb")), instrument(session.client("s3"))


def record(backend: str, profile: str, run: str) -> dict[str, tuple[str, str, str]]:
    """{lock: (take, held, give back)} for one row of ``ROWS``."""
    from harness.config.factory import Factory
    from harness.core.clock import FakeClock
    from harness.load.drivers.model import SwampWorker
    from tests.support.plans import make_plan

    name, fencing = ROWS[(backend, profile, run)]
    plan = make_plan(name, backend=backend)
    sc = plan.scenario
    plan = replace(plan, scenario=replace(sc, datastore=replace(sc.datastore, fencing=fencing)))
    log = Log([])
    with _mocked() as (ddb, s3):
        be = Factory(plan).backend(SimpleNamespace(dynamodb=ddb, s3=s3))
        be._pool = Serial()
        be.clock = FakeClock(time.time())
        be.ensure()
        worker = SwampWorker(plan.scenario, be, process="local", user="w0-0", clock=be.clock, rng_seed=1)
        store = worker.store
        store.cfg = replace(store.cfg, heartbeat=False)  # a heartbeat thread would move the fake clock on its own
        locks: set[str] = set()
        real_try, real_release = be.lock_store.try_acquire, be.lock_store.release

        def try_acquire(key: str, *a: Any, **k: Any) -> Any:
            log.mark("TRY", key)
            return real_try(key, *a, **k)

        real_record = store.record

        def recorder(event: dict) -> None:
            if event.get("type") == "grant":  # after the backend learnt of it (a fenced grant's head write)
                log.mark("GRANT", event["key"])
            real_record(event)

        def release(key: str, *a: Any, **k: Any) -> Any:
            log.mark("RELEASING", key)
            out = real_release(key, *a, **k)
            log.mark("RELEASED", key)
            return out

        be.lock_store.try_acquire, be.lock_store.release = try_acquire, release
        store.record = recorder
        real_step = store.step

        @contextmanager
        def step(steps: list, name: str) -> Iterator[Any]:
            log.mark("STEP", name)
            with real_step(steps, name) as w:
                yield w

        store.step = step
        locks.update({store.lock_key(), store.paths.model_lock("system", "m0")})

        def on_call(model: Any, params: dict, **_: Any) -> None:
            op = model.name
            label = _s3_label(op, params, locks) if backend == "s3" else _ddb_label(op, params)
            log.items.append(("REQ", label))

        client = s3 if backend == "s3" else ddb
        client.meta.events.register(f"before-parameter-build.{client.meta.service_model.endpoint_prefix}", on_call)
        model_type = "system"
        store.sync_run("m0", "get_uptime", 100, [], model_type)
        store.sync_run("m1", "get_uptime", 100, [], model_type)
        log.items.clear()
        store.sync_run("m0", "get_uptime", 100, [], model_type)
    return _split(log.items)


def _steps(pairs: list[tuple[str, str]]) -> str:
    """``step: requests; step: ...`` (each step's requests compressed on their own)."""
    out: list[tuple[str, list[str]]] = []
    for step, label in pairs:
        if label == "[global lock]":
            out.append(("", [label]))
        elif out and out[-1][0] == step:
            out[-1][1].append(label)
        else:
            out.append((step, [label]))
    return "; ".join(f"{step}: {compress(ls)}" if step else ls[0] for step, ls in out) or "-"


def _split(items: list[tuple[str, str]]) -> dict[str, tuple[str, str, str]]:
    """Per lock: taking it (from its first try, or for the lock taken first from the start, to its grant), while
    held (by step), giving it back; the global lock's whole section in the model lock's hold as ``[global lock]``."""
    at: dict[str, dict[str, int]] = {}
    step, steps = "", []
    for i, (what, key) in enumerate(items):
        if what == "STEP":
            step = key
        elif what != "REQ":
            at.setdefault(_kind(key), {}).setdefault(what, i)
        steps.append(step)
    first = min(at, key=lambda lock: at[lock]["GRANT"])
    out: dict[str, tuple[str, str, str]] = {}
    for lock, m in at.items():
        start = -1 if lock == first else m["TRY"]
        inner = at[GLOBAL] if lock == MODEL and GLOBAL in at else None
        held: list[tuple[str, str]] = []
        for j in range(m["GRANT"] + 1, m["RELEASING"]):
            if inner and inner["TRY"] <= j <= inner["RELEASED"]:
                if j == inner["TRY"]:
                    held.append(("", "[global lock]"))
            elif items[j][0] == "REQ":
                held.append((steps[j], items[j][1]))
        take = [k for w, k in items[start + 1:m["GRANT"]] if w == "REQ"]
        give = [k for w, k in items[m["RELEASING"] + 1:m["RELEASED"]] if w == "REQ"]
        out[lock] = (compress(take), _steps(held), compress(give))
    return out


def table() -> list[tuple[str, str, str, str, str, str, str]]:
    """(backend, profile, run, lock, take, held, give back) per row, in ROWS's order."""
    rows = []
    for backend, profile, run in ROWS:
        for lock, (take, held, give) in sorted(record(backend, profile, run).items(), reverse=True):
            rows.append((backend, profile, run, lock, take, held, give))
    return rows


def main() -> None:
    print("| backend | profile | run | lock | take (free) | held | give back |")
    print("|---|---|---|---|---|---|---|")
    for r in table():
        print("| " + " | ".join(f"`{c}`" if i >= 4 and c != "-" else c for i, c in enumerate(r)) + " |")


if __name__ == "__main__":
    main()
