"""Every DynamoDB stand-in held to AWS's own DynamoDB Local: one deterministic workload, three servers, compared.

The workload makes every request shape the harness makes, through the harness's own datastore and backend
code (a fenced per-model namespace with two workers, a legacy-layout namespace on swamp's unfenced commit,
a two-phase namespace with swamp's bookkeeping, lock contention, a stale holder, delete and prune) and, for the
edges the harness's code handles but a calm run never reaches, direct boto3 calls (conditional writes and
their failures, ``ReturnValuesOnConditionCheckFailure``, BatchWriteItem / BatchGetItem at and past their
limits, the 16 MB BatchGetItem answer, Query pagination by ``Limit`` and by the 1 MB page, set ADD / DELETE,
``ReturnValues``). Each server is started once (module-scoped); on each the workload runs once, on a fake
clock and deterministic ids, so the final table contents, the requests made (per phase, per operation and
outcome) and the error codes can be compared item for item with DynamoDB Local's.

Every difference is either fixed in the harness or is one of ``KNOWN`` below, each listed in
docs/stand-ins.md with what it changes in a run: a new difference fails here.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections import Counter
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from harness.aws import standin
from harness.aws.instrument import instrument
from harness.core.aws_errors import error_code
from harness.core.clock import FakeClock
from harness.core.work import Work
from harness.datastore import catalog as catalog_module
from harness.datastore import lock as lock_module
from harness.datastore import sync as sync_module
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.datastore.backends.dynamodb import commit as commit_module
from harness.datastore.catalog import Catalog
from harness.datastore.errors import FencedError
from harness.datastore.lock import Lock, LockConfig
from harness.datastore.sync import Datastore, SyncConfig
from harness.datastore.variant import Variant

pytestmark = pytest.mark.xdist_group("dynamodb-conformance")  # one start of each server: the module in one process
REFERENCE = "dynamodb-local"
STAND_INS = (REFERENCE, "dynalite", "moto")
LOCK = LockConfig(ttl_s=3.0, wait_s=2.0, retry_s=0.05, retry_cap_s=0.1)
ID_MAKERS = (lock_module, sync_module, commit_module)  # the modules whose uuid4 makes nonces and commit ids
BIG, LARGE = 390_000, 45  # bytes of one large item's payload (DynamoDB's item limit is 400 KB), and how many

# stand-in -> the differences from DynamoDB Local this workload shows (docs/stand-ins.md says what each changes)
# (the harness's own requests — the datastore phases — make the same requests, with the same outcomes, into the
# same final items on all three: every line is a stand-in answering an edge differently, or provisioning)
TAGS_NOTE = '"this endpoint does not implement TagResource: ownership is marked by an item"'
TTL_NOTE = '"this endpoint does not implement UpdateTimeToLive: items will not expire (the harness does not need it)"'
OWNER_ITEM = "final state of conformance-per-model, pk HARNESS#owner: 1 item(s) missing"  # DynamoDB Local: no tags
OVER_4KB = 'condition expression over 4 KB: "ok" (DynamoDB Local "ValidationException")'
KNOWN: dict[str, set[str]] = {
    "dynalite": {
        # BatchGetItem answers about 1 MB (DynamoDB: 16 MB), the rest as UnprocessedKeys, over and over
        "batch get of 45 items of 390 KB (got, unprocessed, calls): [30, 285, 10] (DynamoDB Local [45, 2, 2])",
        "edges: item and batch limits: BatchGetItem ok: 10 (DynamoDB Local 2)",
        # the 4 KB limit on an expression is not enforced
        OVER_4KB,
        "edges: conditional writes: UpdateItem ValidationException: 1 (DynamoDB Local 2)",
        "edges: conditional writes: UpdateItem ok: 1 (DynamoDB Local 0)",
        "final state of conformance-edges, pk reg: 1 item(s) only here",
        # TTL missing, tagging there (DynamoDB Local: the reverse)
        f"provision notes: [{TTL_NOTE}] (DynamoDB Local [{TAGS_NOTE}])",
        OWNER_ITEM,
        # no ReturnValuesOnConditionCheckFailure item
        'put again: ["ConditionalCheckFailedException", []] (DynamoDB Local ["ConditionalCheckFailedException", '
        '["pk", "sk", "v"]])',
    },
    "moto": {
        # 26 requests in one BatchWriteItem are accepted (DynamoDB: at most 25)
        'batch write of 26: "ok" (DynamoDB Local "ValidationException")',
        "edges: item and batch limits: BatchWriteItem ValidationException: 1 (DynamoDB Local 2)",
        "edges: item and batch limits: BatchWriteItem ok: 9 (DynamoDB Local 8)",
        "final state of conformance-edges, pk over: 26 item(s) only here",
        # an ExpressionAttributeValues entry no expression uses is accepted (DynamoDB: ValidationException)
        'unused expression value: "ok" (DynamoDB Local "ValidationException")',
        "edges: conditional writes: PutItem ValidationException: 0 (DynamoDB Local 1)",
        "edges: conditional writes: PutItem ok: 2 (DynamoDB Local 1)",
        "final state of conformance-edges, pk u: 1 item(s) only here",
        # the 4 KB limit on an expression is not enforced
        OVER_4KB,
        "edges: conditional writes: UpdateItem ValidationException: 1 (DynamoDB Local 2)",
        "edges: conditional writes: UpdateItem ok: 1 (DynamoDB Local 0)",
        "final state of conformance-edges, pk reg: 1 item(s) only here",
        # a Query page stops before the item that would pass 1 MB (DynamoDB includes it), and a page that ends
        # exactly at the Limit on the last item has no LastEvaluatedKey (DynamoDB: one, then an empty page)
        "query of 100 items of 30 KB, no Limit (pages, items): [4, 100] (DynamoDB Local [3, 100])",
        "query Limit 5 over 25: [[5, true], [5, true], [5, true], [5, true], [5, false]] (DynamoDB Local "
        "[[5, true], [5, true], [5, true], [5, true], [5, true], [0, false]])",
        "gsi query Limit 5 over 25: [[5, true], [5, true], [5, true], [5, true], [5, false]] (DynamoDB Local "
        "[[5, true], [5, true], [5, true], [5, true], [5, true], [0, false]])",
        "edges: query pagination: Query ok: 15 (DynamoDB Local 16)",
        # UPDATED_NEW returns the key attributes too
        'update 0: ADD s :a -> UPDATED_NEW: ["ok", {"pk": {"S": "set"}, "s": {"SS": ["x", "y"]}, "sk": {"S": "0"}}] '
        '(DynamoDB Local ["ok", {"s": {"SS": ["x", "y"]}}])',
        # TTL and tagging both there (DynamoDB Local has no tagging)
        f"provision notes: [] (DynamoDB Local [{TAGS_NOTE}])",
        OWNER_ITEM,
    },
}


class Recorder:
    """Counts every request a client sends, per phase, by operation and outcome (``ok`` or the error code)."""

    def __init__(self) -> None:
        self._phase, self._since = "", time.monotonic()
        self.calls: Counter[tuple[str, str, str]] = Counter()
        self.facts: dict[str, Any] = {}
        self.seconds: Counter[str] = Counter()  # per phase, to keep the whole test short

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[self._phase] += now - self._since
        self._phase, self._since = name, now

    def after_call(self, http_response: Any, parsed: dict, model: Any, **_: Any) -> None:
        code = (parsed.get("Error") or {}).get("Code", "") if http_response.status_code >= 300 else ""
        self.calls[(self.phase, model.name, code or "ok")] += 1


def _client(url: str, rec: Recorder) -> Any:
    c = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="conformance",
                     aws_secret_access_key="conformance",
                     config=Config(retries={"total_max_attempts": 1}, read_timeout=60))
    c.meta.events.register("after-call.dynamodb", rec.after_call)
    return instrument(c)


def _outcome(fn, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except ClientError as e:
        return error_code(e), e.response


# ---- the workload ----------------------------------------------------------------------------------------------
def workload(url: str) -> dict[str, Any]:
    rec = Recorder()
    ddb = _client(url, rec)
    clock = FakeClock()
    ids = random.Random(33)
    # the same nonces, commit ids and catalog times on every server (botocore's own uuid4 calls untouched)
    patches = [(m, "uuid", SimpleNamespace(uuid4=lambda: uuid.UUID(int=ids.getrandbits(128), version=4)))
               for m in ID_MAKERS]
    patches.append((catalog_module, "time", SimpleNamespace(time=clock.now, strftime=time.strftime,
                                                            gmtime=time.gmtime)))
    real = [(m, name, getattr(m, name)) for m, name, _ in patches]
    for m, name, value in patches:
        setattr(m, name, value)
    try:
        tables = _datastore_phases(ddb, rec, clock) + _edge_phases(ddb, rec)
        rec.phase = "final state"
        state = {t: _scan(ddb, t) for t in tables}
    finally:
        for m, name, value in real:
            setattr(m, name, value)
    rec.phase = ""
    return {"calls": rec.calls, "facts": rec.facts, "state": state, "seconds": rec.seconds}


def _store(be: DynamoBackend, ns: str, holder: str, clock: FakeClock, **cfg: Any) -> Datastore:
    config = SyncConfig(namespace=ns, lock=LOCK, heartbeat=False, **cfg)
    return Datastore(be, Catalog(), config, clock=clock, holder=holder, rng=random.Random(holder))


def _datastore_phases(ddb: Any, rec: Recorder, clock: FakeClock) -> list[str]:
    rec.phase = "provision"
    pm = DynamoBackend(ddb, "conformance-per-model", "per-model", clock=clock, tags={"harness:owner": "harness"})
    lg = DynamoBackend(ddb, "conformance-legacy", "legacy", clock=clock, variant=Variant(fenced=False))
    pm.ensure()
    lg.ensure()
    rec.facts["provision notes"] = sorted(pm.notes)

    rec.phase = "fenced sync (per-model)"
    a, b = _store(pm, "w1", "a", clock), _store(pm, "w1", "b", clock)
    for i in range(4):
        clock.advance(1)
        a.sync_run(f"m{i % 2}", "get_uptime", 200, [])
        clock.advance(1)
        b.sync_run(f"n{i % 2}", "get_memory", 3000, [])
    rec.facts["per-model pull"] = a.pull(Work())

    rec.phase = "lock contention and a stale holder"
    key = a.lock_key()
    first = Lock(pm.lock_store, key, clock, LOCK, "a").acquire(Work(), lambda g, w: pm.on_grant("w1", g, None, w))
    second = Lock(pm.lock_store, key, clock, LOCK, "b")
    rec.facts["refused while held"] = pm.lock_store.try_acquire(
        key, second._record("nonce-b", int(clock.now() * 1000)), int(clock.now() * 1000), Work())
    clock.advance(LOCK.ttl_s + 1)  # the first holder's lease runs out: the second takes the lock
    stolen = second.acquire(Work(), lambda g, w: pm.on_grant("w1", g, None, w))
    rec.facts["stale renew"] = pm.lock_store.renew(key, first.nonce, int(clock.now() * 1000) + 3000, Work())
    a.stage("w1/system/m0/stale.yaml", b"written by a holder whose lease ran out")
    try:
        a.commit(first, Work())
        rec.facts["stale commit"] = "committed"
    except FencedError:
        rec.facts["stale commit"] = "fenced"
    rec.facts["stale release"] = pm.lock_store.release(key, first.nonce, Work())
    rec.facts["release"] = pm.lock_store.release(key, stolen.nonce, Work())

    rec.phase = "delete and prune (per-model)"
    clock.advance(1)
    a.delete_model("m1", [])
    clock.advance(1)
    report = a.prune([])
    rec.facts["prune"] = (report.files, report.rows)

    rec.phase = "two-phase with swamp's bookkeeping"
    books = DynamoBackend(ddb, "conformance-per-model", "per-model", clock=clock,  # the same table, swamp's books
                          variant=Variant(bookkeeping="swamp"))
    t1, t2 = (_store(books, "w2", h, clock, sync="two-phase") for h in ("c", "d"))
    for i in range(3):
        clock.advance(1)
        t1.sync_run(f"p{i}", "get_load", 100, [])
        clock.advance(1)
        t2.sync_run(f"p{i}", "get_disk", 100, [])

    rec.phase = "unfenced sync (legacy GSI)"
    la, lb = (_store(lg, None, h, clock) for h in ("e", "f"))
    for i in range(3):
        clock.advance(1)
        la.sync_run(f"q{i}", "get_uptime", 100, [])
        clock.advance(1)
        lb.sync_run(f"q{i}", "get_uptime", 100, [])
    rec.facts["legacy pull"] = la.pull(Work())
    return ["conformance-per-model", "conformance-legacy"]


def _edge_phases(ddb: Any, rec: Recorder) -> list[str]:
    t = "conformance-edges"
    rec.phase = "edges: provision"
    ddb.create_table(TableName=t, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"}
                                           for n in ("pk", "sk", "gsi1pk", "gsi1sk")],
                     GlobalSecondaryIndexes=[{"IndexName": "gsi1", "Projection": {"ProjectionType": "ALL"},
                                              "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                                                            {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}])
    large = "conformance-large"  # its 17.5 MB are left out of the final state (a Scan of it takes seconds)
    ddb.create_table(TableName=large, BillingMode="PAY_PER_REQUEST", KeySchema=[
        {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")])
    for name in (t, large):
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2})
    f = rec.facts

    def key(pk: str, sk: str = "0") -> dict:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

    rec.phase = "edges: conditional writes"
    new = "attribute_not_exists(pk)"
    f["put new"] = _outcome(ddb.put_item, TableName=t, Item={**key("c"), "v": {"N": "1"}}, ConditionExpression=new)[0]
    code, resp = _outcome(ddb.put_item, TableName=t, Item={**key("c"), "v": {"N": "2"}}, ConditionExpression=new,
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    f["put again"] = (code, sorted((resp.get("Item") or {}) if code != "ok" else {}))
    code, resp = _outcome(ddb.update_item, TableName=t, Key=key("c"), UpdateExpression="SET v = :n",
                          ConditionExpression="v = :o", ExpressionAttributeValues={":n": {"N": "3"}, ":o": {"N": "9"}})
    f["update, condition false"] = code
    code, resp = _outcome(ddb.update_item, TableName=t, Key=key("absent"), UpdateExpression="SET v = :n",
                          ConditionExpression="attribute_exists(pk)", ExpressionAttributeValues={":n": {"N": "3"}})
    f["update of an absent item, attribute_exists"] = code
    f["delete, condition false"] = _outcome(ddb.delete_item, TableName=t, Key=key("c"), ConditionExpression="v = :o",
                                            ExpressionAttributeValues={":o": {"N": "9"}})[0]
    code, resp = _outcome(ddb.delete_item, TableName=t, Key=key("c"), ConditionExpression="v = :o",
                          ExpressionAttributeValues={":o": {"N": "1"}}, ReturnValues="ALL_OLD")
    f["delete, condition true, ALL_OLD"] = (code, sorted(resp.get("Attributes", {})))
    f["unused expression value"] = _outcome(ddb.put_item, TableName=t, Item=key("u"), ConditionExpression=new,
                                            ExpressionAttributeValues={":x": {"N": "1"}})[0]
    long = " AND ".join(f"(attribute_not_exists(#c{i}) OR #c{i} <= :s)" for i in range(90))  # > 4 KB
    f["condition expression over 4 KB"] = _outcome(
        ddb.update_item, TableName=t, Key=key("reg"), UpdateExpression="SET #c0 = :s", ConditionExpression=long,
        ExpressionAttributeNames={f"#c{i}": f"c:partition-{i}" for i in range(90)},
        ExpressionAttributeValues={":s": {"N": "1"}})[0]
    f["update of a key attribute"] = _outcome(ddb.update_item, TableName=t, Key=key("u"),
                                              UpdateExpression="SET sk = :s",
                                              ExpressionAttributeValues={":s": {"S": "x"}})[0]

    rec.phase = "edges: sets and ReturnValues"
    ups = [("ADD s :a", {":a": {"SS": ["x", "y"]}}, "UPDATED_NEW"),
           ("ADD s :a", {":a": {"SS": ["y", "z"]}}, "ALL_NEW"),
           ("DELETE s :a", {":a": {"SS": ["x"]}}, "UPDATED_OLD"),
           ("DELETE s :a", {":a": {"SS": ["y", "z"]}}, "ALL_OLD"),
           ("SET n = if_not_exists(n, :z) + :o", {":z": {"N": "0"}, ":o": {"N": "1"}}, "UPDATED_NEW"),
           ("ADD n :o", {":o": {"N": "1"}}, "UPDATED_NEW")]
    for i, (expr, values, rv) in enumerate(ups):
        code, resp = _outcome(ddb.update_item, TableName=t, Key=key("set"), UpdateExpression=expr,
                              ExpressionAttributeValues=values, ReturnValues=rv)
        f[f"update {i}: {expr} -> {rv}"] = (code, _plain(resp.get("Attributes", {})))
    f["empty set"] = _outcome(ddb.put_item, TableName=t, Item={**key("e"), "s": {"SS": []}})[0]
    f["empty string in a key"] = _outcome(ddb.put_item, TableName=t, Item=key("e", ""))[0]

    rec.phase = "edges: item and batch limits"
    f["item over 400 KB"] = _outcome(ddb.put_item, TableName=t, Item={**key("big"), "b": {"B": b"x" * 410_000}})[0]
    puts = [{"PutRequest": {"Item": {**key("batch", f"{i:02d}"), "gsi1pk": {"S": "G"}, "gsi1sk": {"S": f"{i:02d}"}}}}
            for i in range(25)]
    f["batch write of 26"] = _outcome(ddb.batch_write_item, RequestItems={t: [
        {"PutRequest": {"Item": key("over", f"{i:02d}")}} for i in range(26)]})[0]
    f["batch write, one key twice"] = _outcome(ddb.batch_write_item, RequestItems={t: [puts[0], puts[0]]})[0]
    code, resp = _outcome(ddb.batch_write_item, RequestItems={t: puts[:25]})
    f["batch write of 25"] = (code, len(resp.get("UnprocessedItems", {}).get(t, [])))
    keys = [key("batch", f"{i:02d}") for i in range(25)]
    f["batch get of 101"] = _outcome(ddb.batch_get_item, RequestItems={t: {"Keys": keys * 4 + keys[:1]}})[0]
    f["batch get, one key twice"] = _outcome(ddb.batch_get_item, RequestItems={t: {"Keys": [keys[0], keys[0]]}})[0]
    for i in range(0, LARGE, 15):  # 45 items of 390 KB: 17.5 MB, past BatchGetItem's 16 MB answer
        ddb.batch_write_item(RequestItems={large: [{"PutRequest": {"Item": {**key("large", f"{j:02d}"),
                                                                           "b": {"B": bytes([j]) * BIG}}}}
                                                   for j in range(i, i + 15)]})
    got, unprocessed, calls = 0, 0, 0
    req: dict = {large: {"Keys": [key("large", f"{j:02d}") for j in range(LARGE)]}}
    while req and calls < 10:  # as the backend's batch_get does: again with what was left
        out = ddb.batch_get_item(RequestItems=req)
        calls += 1
        got += len(out["Responses"].get(large, []))
        unprocessed += len(out.get("UnprocessedKeys", {}).get(large, {}).get("Keys", []))
        req = out.get("UnprocessedKeys") or {}
    f[f"batch get of {LARGE} items of 390 KB (got, unprocessed, calls)"] = (got, unprocessed, calls)
    for i in range(0, 100, 25):  # 100 items of 30 KB: 3 MB, Query pages of 1 MB
        ddb.batch_write_item(RequestItems={t: [{"PutRequest": {"Item": {**key("mid", f"{j:03d}"),
                                                                       "b": {"B": bytes([j]) * 30_000}}}}
                                               for j in range(i, i + 25)]})

    rec.phase = "edges: query pagination"
    f["query Limit 5 over 25"] = _pages(ddb, TableName=t, KeyConditionExpression="pk = :p",
                                        ExpressionAttributeValues={":p": {"S": "batch"}}, Limit=5)
    f["gsi query Limit 5 over 25"] = _pages(ddb, TableName=t, IndexName="gsi1", KeyConditionExpression="gsi1pk = :p",
                                            ExpressionAttributeValues={":p": {"S": "G"}}, Limit=5)
    pages = _pages(ddb, TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "mid"}})
    f["query of 100 items of 30 KB, no Limit (pages, items)"] = (len(pages), sum(n for n, _ in pages))
    f["query Select COUNT"] = _pages(ddb, TableName=t, KeyConditionExpression="pk = :p", Select="COUNT",
                                     ExpressionAttributeValues={":p": {"S": "batch"}})
    return [t]


def _pages(ddb: Any, **kwargs: Any) -> list[tuple[int, bool]]:
    """(items or count, LastEvaluatedKey given) per page, to the end."""
    pages = []
    while True:
        out = ddb.query(**kwargs)
        pages.append((out["Count"], "LastEvaluatedKey" in out))
        if "LastEvaluatedKey" not in out or len(pages) > 50:
            return pages
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def _plain(attrs: dict) -> dict:
    """An item as comparable plain values: sets sorted, binaries by size and digest."""
    out = {}
    for name, v in sorted(attrs.items()):
        (kind, val), = v.items()
        if kind == "B":
            val = f"{len(val)} B {hashlib.sha256(val).hexdigest()[:12]}"
        elif kind in ("SS", "NS", "BS"):
            val = sorted(str(x) for x in val)
        elif kind == "M":
            val = _plain(val)
        elif kind == "L":
            val = [_plain({"_": x})["_"] for x in val]
        out[name] = {kind: val}
    return out


def _scan(ddb: Any, table: str) -> dict[str, dict]:
    items, kwargs = {}, {"TableName": table, "ConsistentRead": True}
    while True:
        out = ddb.scan(**kwargs)
        for item in out["Items"]:
            items[f"{item['pk']['S']} | {item['sk']['S']}"] = _plain(item)
        if "LastEvaluatedKey" not in out:
            return dict(sorted(items.items()))
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


# ---- the comparison --------------------------------------------------------------------------------------------
def differences(ref: dict[str, Any], other: dict[str, Any]) -> set[str]:
    """One line per difference from the reference: requests per phase, facts, final items."""
    out = set()
    for k in sorted(set(ref["calls"]) | set(other["calls"])):
        if k[0] in ("provision", "edges: provision", "final state"):
            continue  # waiters poll until a table is ACTIVE: counts there follow timing
        if ref["calls"][k] != other["calls"][k]:
            out.add(f"{k[0]}: {k[1]} {k[2]}: {other['calls'][k]} (DynamoDB Local {ref['calls'][k]})")
    for k in sorted(set(ref["facts"]) | set(other["facts"])):
        if ref["facts"].get(k) != other["facts"].get(k):
            out.add(f"{k}: {_short(other['facts'].get(k))} (DynamoDB Local {_short(ref['facts'].get(k))})")
    for table in ref["state"]:
        mine, theirs = ref["state"][table], other["state"].get(table, {})
        by_pk: dict[str, Counter[str]] = {}
        for item in sorted(set(mine) | set(theirs)):
            if mine.get(item) != theirs.get(item):
                how = "only here" if item not in mine else "missing" if item not in theirs else "different"
                by_pk.setdefault(item.split(" | ")[0], Counter())[how] += 1
        for pk, counts in by_pk.items():
            out.add(f"final state of {table}, pk {pk}: " + ", ".join(f"{n} item(s) {how}" for how, n in
                                                                     sorted(counts.items())))
    return out


def _short(v: Any) -> str:
    text = json.dumps(v, default=str, sort_keys=True)
    return text if len(text) <= 300 else text[:297] + "..."


@pytest.fixture(scope="module")
def observed(tmp_path_factory) -> dict[str, Any]:
    """The workload's record on each stand-in (the reason instead where one cannot start here)."""
    out: dict[str, Any] = {n: p for n in STAND_INS if (p := standin.missing_runtime(n))}
    servers = {n: standin.LAUNCHERS[n].server(n, standin.Where(logs=tmp_path_factory.mktemp(n)))
               for n in STAND_INS if n not in out}
    # the start-ups overlap: what can be launched is, the rest started, then the launched awaited (all from this
    # thread: a launcher's child dies with the thread that started it)
    for s in servers.values():
        (s.launch if hasattr(s, "launch") else s.start)()
    for s in servers.values():
        if hasattr(s, "await_ready"):
            s.await_ready()
    try:
        for name, server in servers.items():  # one at a time: the workload's ids are patched process-wide
            out[name] = workload(server.urls["dynamodb"])
    finally:
        for server in servers.values():
            server.stop()
    return out


def test_the_reference_runs_the_whole_workload(observed):
    ref = observed[REFERENCE]
    if isinstance(ref, str):
        pytest.skip(f"DynamoDB Local: {ref}")
    facts = ref["facts"]
    assert facts["stale commit"] == "fenced" and facts["stale renew"] is False and facts["release"] is True
    assert facts["refused while held"] is None
    codes = {c for (_, _, c) in ref["calls"]}
    assert {"ok", "ConditionalCheckFailedException", "ValidationException"} <= codes


@pytest.mark.parametrize("name", [n for n in STAND_INS if n != REFERENCE])
def test_each_stand_in_differs_from_dynamodb_local_only_as_documented(observed, name):
    ref, other = observed[REFERENCE], observed[name]
    if isinstance(ref, str) or isinstance(other, str):
        pytest.skip(ref if isinstance(ref, str) else other)
    found = differences(ref, other)
    assert sorted(found - KNOWN[name]) == [], "new differences"
    assert sorted(KNOWN[name] - found) == [], "listed differences no longer seen: update KNOWN and the docs"
