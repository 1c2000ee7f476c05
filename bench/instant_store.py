"""An in-memory DynamoDB that answers at once and by DynamoDB's rules, for the benchmarks.

The benchmarks need a backend that costs (almost) nothing, so that what they
measure is the client: boto3's CPU and the harness's. Canned answers rot: the
harness's requests change (a new condition, a returned attribute), and a
canned reply no longer answers what DynamoDB would. So this is a small
DynamoDB instead: items keyed by the table's key schema, global secondary
indexes, condition / update / key-condition / filter expressions, and the
answers (``ReturnValues``, ``ConditionalCheckFailedException``, pagination,
transactions) that the real service gives. It does not model capacity,
throttling or latency (the fidelity layer does that, in front of any backend).

``InstantDynamo.handle(operation, request) -> (status, body)`` takes and gives
DynamoDB's JSON wire format; ``bench/instant.py`` serves it in-process (a
botocore hook) or over HTTP.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

Item = dict[str, dict]  # attribute name -> wire-format value ({"S": "x"}, {"N": "1"}, ...)
PREFIX = "com.amazonaws.dynamodb.v20120810#"


class DynamoError(Exception):
    def __init__(self, code: str, message: str, extra: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra or {}


def _validation(message: str) -> DynamoError:
    return DynamoError("ValidationException", message)


# ---- values ---------------------------------------------------------------------------
def _kind(v: dict) -> str:
    return next(iter(v))


def _scalar(v: dict) -> Any:
    """A comparable Python value for S / N / B (DynamoDB orders these three)."""
    k = _kind(v)
    if k == "N":
        return Decimal(v["N"])
    return v[k]


def _num(d: Decimal) -> dict:
    text = format(d.normalize(), "f") if d == d.to_integral_value() else str(d.normalize())
    return {"N": text}


def _size(v: dict) -> int:
    k = _kind(v)
    if k in ("S", "B"):
        return len(v[k])
    if k in ("SS", "NS", "BS", "L"):
        return len(v[k])
    if k == "M":
        return len(v["M"])
    return 1


# ---- expressions -----------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(<>|<=|>=|=|<|>|\(|\)|,|\+|-|\[\d+\]|\.)|(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|"
                    r"([A-Za-z_][A-Za-z0-9_]*))")
_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE"}
_FUNCTIONS = {"attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains", "size",
              "if_not_exists", "list_append"}


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise _validation(f"Invalid expression: syntax error near {text[pos:pos + 20]!r}")
        out.append(m.group(0).strip())
        pos = m.end()
    return out


class _Parser:
    """Recursive descent over the tokens of one expression; produces small tuples (an AST)."""

    def __init__(self, text: str) -> None:
        self.t, self.i = _tokens(text), 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok.upper() != want):
            raise _validation(f"Invalid expression: expected {want or 'more'}, got {tok!r}")
        self.i += 1
        return tok

    def done(self) -> None:
        if self.peek() is not None:
            raise _validation(f"Invalid expression: unexpected {self.peek()!r}")

    # paths and operands
    def path(self) -> tuple:
        parts: list[Any] = [self.take()]
        while self.peek() is not None and (self.peek() == "." or self.peek().startswith("[")):
            tok = self.take()
            parts.append(int(tok[1:-1]) if tok.startswith("[") else self.take())
        return ("path", tuple(parts))

    def operand(self) -> tuple:
        tok = self.peek()
        if tok is None:
            raise _validation("Invalid expression: missing operand")
        if tok.startswith(":"):
            self.i += 1
            return ("value", tok)
        if tok in _FUNCTIONS and self.peek(1) == "(":
            return self.function()
        return self.path()

    def function(self) -> tuple:
        name = self.take()
        self.take("(")
        args = [self.operand()]
        while self.peek() == ",":
            self.take(",")
            args.append(self.operand())
        self.take(")")
        return ("fn", name, tuple(args))

    def value(self) -> tuple:
        """An update's right-hand side: operand [+|- operand]."""
        left = self.operand()
        if self.peek() in ("+", "-"):
            op = self.take()
            return ("arith", op, left, self.operand())
        return left

    # conditions
    def condition(self) -> tuple:
        left = self.conjunction()
        while (self.peek() or "").upper() == "OR":
            self.take()
            left = ("or", left, self.conjunction())
        return left

    def conjunction(self) -> tuple:
        left = self.negation()
        while (self.peek() or "").upper() == "AND":
            self.take()
            left = ("and", left, self.negation())
        return left

    def negation(self) -> tuple:
        if (self.peek() or "").upper() == "NOT":
            self.take()
            return ("not", self.negation())
        return self.comparison()

    def comparison(self) -> tuple:
        if self.peek() == "(":
            self.take("(")
            inner = self.condition()
            self.take(")")
            return inner
        left = self.operand()
        tok = (self.peek() or "").upper()
        if tok in ("=", "<>", "<", "<=", ">", ">="):
            self.take()
            return ("cmp", tok, left, self.operand())
        if tok == "BETWEEN":
            self.take()
            low = self.operand()
            self.take("AND")
            return ("between", left, low, self.operand())
        if tok == "IN":
            self.take()
            self.take("(")
            options = [self.operand()]
            while self.peek() == ",":
                self.take(",")
                options.append(self.operand())
            self.take(")")
            return ("in", left, tuple(options))
        if left[0] == "fn":
            return ("test", left)
        raise _validation(f"Invalid expression: a condition needs a comparison, got {tok!r}")

    # updates
    def update(self) -> list[tuple]:
        actions: list[tuple] = []
        while self.peek() is not None:
            clause = self.take().upper()
            if clause not in ("SET", "REMOVE", "ADD", "DELETE"):
                raise _validation(f"Invalid UpdateExpression: unexpected {clause!r}")
            while True:
                target = self.path()
                if clause == "SET":
                    self.take("=")
                    actions.append(("SET", target, self.value()))
                elif clause == "REMOVE":
                    actions.append(("REMOVE", target, None))
                else:
                    actions.append((clause, target, self.operand()))
                if self.peek() != ",":
                    break
                self.take(",")
        return actions


_CACHE: dict[tuple[str, str], Any] = {}


def _parsed(kind: str, text: str) -> Any:
    """Parse once per distinct expression: the harness sends the same few over and over."""
    key = (kind, text)
    got = _CACHE.get(key)
    if got is None:
        p = _Parser(text)
        got = p.update() if kind == "update" else p.condition()
        p.done()
        _CACHE[key] = got
    return got


@dataclass
class _Ctx:
    names: dict[str, str]
    values: dict[str, dict]

    def name(self, tok: str) -> str:
        if tok.startswith("#"):
            if tok not in self.names:
                raise _validation(f"An expression attribute name used in the document path is not defined: {tok}")
            return self.names[tok]
        return tok

    def value(self, tok: str) -> dict:
        if tok not in self.values:
            raise _validation(f"An expression attribute value used in expression is not defined: {tok}")
        return self.values[tok]


def _resolve(item: Item, path: tuple, ctx: _Ctx) -> dict | None:
    parts = path[1]
    cur: Any = item.get(ctx.name(parts[0]))
    for p in parts[1:]:
        if cur is None:
            return None
        if isinstance(p, int):
            lst = cur.get("L")
            cur = lst[p] if lst is not None and p < len(lst) else None
        else:
            cur = (cur.get("M") or {}).get(ctx.name(p))
    return cur


def _eval(node: tuple, item: Item, ctx: _Ctx) -> Any:
    kind = node[0]
    if kind == "value":
        return ctx.value(node[1])
    if kind == "path":
        return _resolve(item, node, ctx)
    if kind == "fn":
        return _function(node[1], node[2], item, ctx)
    if kind == "arith":
        a, b = _eval(node[2], item, ctx), _eval(node[3], item, ctx)
        if a is None or b is None or _kind(a) != "N" or _kind(b) != "N":
            raise _validation("An operand in the update expression has an incorrect data type")
        return _num(Decimal(a["N"]) + (Decimal(b["N"]) if node[1] == "+" else -Decimal(b["N"])))
    raise _validation(f"Invalid operand {node!r}")


def _function(name: str, args: tuple, item: Item, ctx: _Ctx) -> Any:
    if name in ("attribute_exists", "attribute_not_exists"):
        present = _resolve(item, args[0], ctx) is not None
        return present if name == "attribute_exists" else not present
    if name == "attribute_type":
        v = _resolve(item, args[0], ctx)
        return v is not None and _kind(v) == ctx.value(args[1][1])["S"]
    if name == "begins_with":
        v, prefix = _eval(args[0], item, ctx), _eval(args[1], item, ctx)
        return v is not None and prefix is not None and _kind(v) == _kind(prefix) in ("S", "B") and \
            v[_kind(v)].startswith(prefix[_kind(prefix)])
    if name == "contains":
        v, x = _eval(args[0], item, ctx), _eval(args[1], item, ctx)
        if v is None or x is None:
            return False
        k = _kind(v)
        if k in ("S", "B"):
            return _kind(x) == k and x[k] in v[k]
        if k in ("SS", "NS", "BS"):
            return next(iter(x.values())) in v[k]
        if k == "L":
            return x in v["L"]
        return False
    if name == "size":
        v = _eval(args[0], item, ctx)
        return None if v is None else {"N": str(_size(v))}
    if name == "if_not_exists":
        v = _resolve(item, args[0], ctx)
        return v if v is not None else _eval(args[1], item, ctx)
    if name == "list_append":
        a, b = _eval(args[0], item, ctx), _eval(args[1], item, ctx)
        return {"L": list((a or {"L": []})["L"]) + list((b or {"L": []})["L"])}
    raise _validation(f"Invalid function name: {name}")


def _compare(op: str, a: dict | None, b: dict | None) -> bool:
    if op == "=":
        return a is not None and b is not None and _equal(a, b)
    if op == "<>":
        return not (a is not None and b is not None and _equal(a, b))
    if a is None or b is None or _kind(a) != _kind(b) or _kind(a) not in ("S", "N", "B"):
        return False
    x, y = _scalar(a), _scalar(b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _equal(a: dict, b: dict) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return False
    if ka == "N":
        return Decimal(a["N"]) == Decimal(b["N"])
    if ka in ("SS", "BS"):
        return set(a[ka]) == set(b[kb])
    if ka == "NS":
        return {Decimal(x) for x in a[ka]} == {Decimal(x) for x in b[kb]}
    return a == b


def _test(node: tuple, item: Item, ctx: _Ctx) -> bool:
    kind = node[0]
    if kind == "or":
        return _test(node[1], item, ctx) or _test(node[2], item, ctx)
    if kind == "and":
        return _test(node[1], item, ctx) and _test(node[2], item, ctx)
    if kind == "not":
        return not _test(node[1], item, ctx)
    if kind == "cmp":
        return _compare(node[1], _eval(node[2], item, ctx), _eval(node[3], item, ctx))
    if kind == "between":
        v = _eval(node[1], item, ctx)
        return _compare(">=", v, _eval(node[2], item, ctx)) and _compare("<=", v, _eval(node[3], item, ctx))
    if kind == "in":
        v = _eval(node[1], item, ctx)
        return any(_compare("=", v, _eval(o, item, ctx)) for o in node[2])
    if kind == "test":
        return bool(_eval(node[1], item, ctx))
    raise _validation(f"Invalid condition {node!r}")


def _set_path(item: Item, path: tuple, ctx: _Ctx, value: dict | None) -> None:
    parts = path[1]
    if len(parts) == 1:
        name = ctx.name(parts[0])
        if value is None:
            item.pop(name, None)
        else:
            item[name] = value
        return
    parent = _resolve(item, ("path", parts[:-1]), ctx)
    if parent is None:
        raise _validation("The document path provided in the update expression is invalid for update")
    last = parts[-1]
    if isinstance(last, int):
        lst = parent["L"]
        if value is None:
            if last < len(lst):
                del lst[last]
        elif last < len(lst):
            lst[last] = value
        else:
            lst.append(value)
    elif value is None:
        parent["M"].pop(ctx.name(last), None)
    else:
        parent["M"][ctx.name(last)] = value


def _apply_update(item: Item, actions: list[tuple], ctx: _Ctx) -> set[str]:
    """Apply in place; returns the top-level attributes the update touched."""
    old = {k: v for k, v in item.items()}  # every right-hand side reads the item as it was
    touched: set[str] = set()
    for action, target, arg in actions:
        touched.add(ctx.name(target[1][0]))
        if action == "SET":
            _set_path(item, target, ctx, _eval(arg, old, ctx))
        elif action == "REMOVE":
            _set_path(item, target, ctx, None)
        elif action == "ADD":
            add = ctx.value(arg[1])
            cur = _resolve(item, target, ctx)
            k = _kind(add)
            if cur is None:
                _set_path(item, target, ctx, {k: list(add[k])} if k in ("SS", "NS", "BS") else dict(add))
            elif k == "N" and _kind(cur) == "N":
                _set_path(item, target, ctx, _num(Decimal(cur["N"]) + Decimal(add["N"])))
            elif k in ("SS", "NS", "BS") and _kind(cur) == k:
                merged = list(cur[k]) + [x for x in add[k] if x not in cur[k]]
                _set_path(item, target, ctx, {k: merged})
            else:
                raise _validation("An operand in the update expression has an incorrect data type")
        else:  # DELETE from a set
            drop = ctx.value(arg[1])
            cur = _resolve(item, target, ctx)
            k = _kind(drop)
            if cur is not None:
                if _kind(cur) != k:
                    raise _validation("An operand in the update expression has an incorrect data type")
                left = [x for x in cur[k] if x not in drop[k]]
                _set_path(item, target, ctx, {k: left} if left else None)  # an emptied set vanishes
    return touched


# ---- tables ----------------------------------------------------------------------------
def _sort_key(v: dict | None) -> Any:
    return (0, "") if v is None else (1, _scalar(v))


@dataclass
class _Index:
    name: str
    hash: str
    range: str | None
    projection: dict = field(default_factory=lambda: {"ProjectionType": "ALL"})


@dataclass
class _Table:
    name: str
    hash: str
    range: str | None
    attributes: list[dict]
    gsis: list[_Index]
    billing: dict
    created: float
    items: dict[tuple, Item] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    ttl: dict | None = None
    description: dict = field(default_factory=dict)

    @property
    def arn(self) -> str:
        return f"arn:aws:dynamodb:us-east-1:000000000000:table/{self.name}"

    def key_of(self, item: Item) -> tuple:
        try:
            h = item[self.hash]
            r = item[self.range] if self.range else None
        except KeyError:
            raise _validation("One of the required keys was not given a value") from None
        return (_kind(h), h[_kind(h)], (_kind(r), r[_kind(r)]) if r else None)

    def key_item(self, item: Item) -> Item:
        out = {self.hash: item[self.hash]}
        if self.range:
            out[self.range] = item[self.range]
        return out

    def describe(self) -> dict:
        t: dict[str, Any] = {
            "TableName": self.name, "TableStatus": "ACTIVE", "TableArn": self.arn,
            "TableId": f"{abs(hash(self.name)):032x}"[:32],
            "CreationDateTime": self.created, "ItemCount": len(self.items),
            "TableSizeBytes": 0, "AttributeDefinitions": self.attributes,
            "KeySchema": [{"AttributeName": self.hash, "KeyType": "HASH"}]
            + ([{"AttributeName": self.range, "KeyType": "RANGE"}] if self.range else []),
            **self.billing,
        }
        if self.gsis:
            t["GlobalSecondaryIndexes"] = [{
                "IndexName": g.name, "IndexStatus": "ACTIVE", "Projection": g.projection,
                "IndexArn": f"{self.arn}/index/{g.name}",
                "KeySchema": [{"AttributeName": g.hash, "KeyType": "HASH"}]
                + ([{"AttributeName": g.range, "KeyType": "RANGE"}] if g.range else [])} for g in self.gsis]
        return t


def _project(item: Item, expr: str | None, ctx: _Ctx) -> Item:
    if not expr:
        return item
    out: Item = {}
    for part in expr.split(","):
        name = ctx.name(part.strip().split(".")[0].split("[")[0])
        if name in item:
            out[name] = item[name]
    return out


class InstantDynamo:
    """DynamoDB's data plane in one dict per table; one lock (requests are atomic, as DynamoDB's are)."""

    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.requests: dict[str, int] = {}
        self.cpu_s = 0.0  # this store's own CPU, so a benchmark can leave it out of the client's
        self._lock = threading.Lock()

    def handle(self, op: str, req: dict) -> tuple[int, dict]:
        t0 = time.thread_time()
        try:
            with self._lock:
                self.requests[op] = self.requests.get(op, 0) + 1
                fn = getattr(self, f"_op_{op}", None)
                if fn is None:
                    raise DynamoError("UnknownOperationException", f"{op} is not supported by the instant store")
                return 200, fn(req)
        except DynamoError as e:
            return 400, {"__type": PREFIX + e.code, "message": e.message, **e.extra}
        finally:
            self.cpu_s += time.thread_time() - t0

    # ---- control plane ----------------------------------------------------------------
    def _table(self, name: str) -> _Table:
        t = self.tables.get(name)
        if t is None:
            raise DynamoError("ResourceNotFoundException", f"Requested resource not found: Table: {name} not found")
        return t

    def _table_by_arn(self, arn: str) -> _Table:
        return self._table(arn.rsplit("/", 1)[-1])

    def _op_CreateTable(self, r: dict) -> dict:
        name = r["TableName"]
        if name in self.tables:
            raise DynamoError("ResourceInUseException", f"Table already exists: {name}")
        keys = {k["KeyType"]: k["AttributeName"] for k in r["KeySchema"]}
        gsis = []
        for g in r.get("GlobalSecondaryIndexes", []):
            gkeys = {k["KeyType"]: k["AttributeName"] for k in g["KeySchema"]}
            gsis.append(_Index(g["IndexName"], gkeys["HASH"], gkeys.get("RANGE"), g.get("Projection", {})))
        billing: dict[str, Any] = {"BillingModeSummary": {"BillingMode": r.get("BillingMode", "PROVISIONED")}}
        if "ProvisionedThroughput" in r:
            billing["ProvisionedThroughput"] = r["ProvisionedThroughput"]
        t = _Table(name, keys["HASH"], keys.get("RANGE"), r.get("AttributeDefinitions", []), gsis, billing,
                   time.time(), tags={x["Key"]: x["Value"] for x in r.get("Tags", [])})
        self.tables[name] = t
        return {"TableDescription": t.describe()}

    def _op_DescribeTable(self, r: dict) -> dict:
        return {"Table": self._table(r["TableName"]).describe()}

    def _op_DeleteTable(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        del self.tables[t.name]
        return {"TableDescription": {**t.describe(), "TableStatus": "DELETING"}}

    def _op_UpdateTable(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        if "ProvisionedThroughput" in r:
            t.billing["ProvisionedThroughput"] = r["ProvisionedThroughput"]
        if "BillingMode" in r:
            t.billing["BillingModeSummary"] = {"BillingMode": r["BillingMode"]}
        return {"TableDescription": t.describe()}

    def _op_ListTables(self, r: dict) -> dict:
        return {"TableNames": sorted(self.tables)}

    def _op_UpdateTimeToLive(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        t.ttl = r["TimeToLiveSpecification"]
        return {"TimeToLiveSpecification": t.ttl}

    def _op_DescribeTimeToLive(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        if not t.ttl:
            return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED" if t.ttl.get("Enabled") else "DISABLED",
                                          "AttributeName": t.ttl.get("AttributeName")}}

    def _op_TagResource(self, r: dict) -> dict:
        self._table_by_arn(r["ResourceArn"]).tags.update({x["Key"]: x["Value"] for x in r["Tags"]})
        return {}

    def _op_UntagResource(self, r: dict) -> dict:
        t = self._table_by_arn(r["ResourceArn"])
        for k in r["TagKeys"]:
            t.tags.pop(k, None)
        return {}

    def _op_ListTagsOfResource(self, r: dict) -> dict:
        return {"Tags": [{"Key": k, "Value": v} for k, v in self._table_by_arn(r["ResourceArn"]).tags.items()]}

    # ---- items ------------------------------------------------------------------------
    @staticmethod
    def _ctx(r: dict) -> _Ctx:
        return _Ctx(r.get("ExpressionAttributeNames") or {}, r.get("ExpressionAttributeValues") or {})

    def _check(self, r: dict, item: Item | None, ctx: _Ctx) -> None:
        cond = r.get("ConditionExpression")
        if cond and not _test(_parsed("condition", cond), item or {}, ctx):
            extra = {}
            if r.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and item:
                extra = {"Item": item}
            raise DynamoError("ConditionalCheckFailedException", "The conditional request failed", extra)

    @staticmethod
    def _returned(mode: str | None, old: Item | None, new: Item | None, touched: set[str]) -> dict:
        if mode == "ALL_OLD" and old:
            return {"Attributes": old}
        if mode == "ALL_NEW" and new:
            return {"Attributes": new}
        if mode == "UPDATED_OLD" and old:
            got = {k: v for k, v in old.items() if k in touched}
            return {"Attributes": got} if got else {}
        if mode == "UPDATED_NEW" and new:
            got = {k: v for k, v in new.items() if k in touched}
            return {"Attributes": got} if got else {}
        return {}

    def _put(self, t: _Table, r: dict) -> Item | None:
        item = r["Item"]
        key = t.key_of(item)
        old = t.items.get(key)
        self._check(r, old, self._ctx(r))
        t.items[key] = item
        return old

    def _update(self, t: _Table, r: dict) -> tuple[Item | None, Item, set[str]]:
        key = t.key_of(r["Key"])
        old = t.items.get(key)
        ctx = self._ctx(r)
        self._check(r, old, ctx)
        new = {k: v for k, v in (old or r["Key"]).items()}
        touched: set[str] = set()
        if r.get("UpdateExpression"):
            touched = _apply_update(new, _parsed("update", r["UpdateExpression"]), ctx)
        if touched & {t.hash, t.range}:
            raise _validation("Cannot update attribute: this attribute is part of the key")
        t.items[key] = new
        return old, new, touched

    def _delete(self, t: _Table, r: dict) -> Item | None:
        key = t.key_of(r["Key"])
        old = t.items.get(key)
        self._check(r, old, self._ctx(r))
        t.items.pop(key, None)
        return old

    def _op_PutItem(self, r: dict) -> dict:
        old = self._put(self._table(r["TableName"]), r)
        return self._returned(r.get("ReturnValues"), old, None, set())

    def _op_GetItem(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        item = t.items.get(t.key_of(r["Key"]))
        return {"Item": _project(item, r.get("ProjectionExpression"), self._ctx(r))} if item else {}

    def _op_DeleteItem(self, r: dict) -> dict:
        old = self._delete(self._table(r["TableName"]), r)
        return self._returned(r.get("ReturnValues"), old, None, set())

    def _op_UpdateItem(self, r: dict) -> dict:
        old, new, touched = self._update(self._table(r["TableName"]), r)
        return self._returned(r.get("ReturnValues"), old, new, touched)

    def _op_BatchWriteItem(self, r: dict) -> dict:
        for name, reqs in r["RequestItems"].items():
            if len(reqs) > 25:
                raise _validation("Too many items requested for the BatchWriteItem call")
            t = self._table(name)
            for q in reqs:
                if "PutRequest" in q:
                    self._put(t, {"Item": q["PutRequest"]["Item"]})
                else:
                    self._delete(t, {"Key": q["DeleteRequest"]["Key"]})
        return {"UnprocessedItems": {}}

    def _op_BatchGetItem(self, r: dict) -> dict:
        out: dict[str, list] = {}
        for name, spec in r["RequestItems"].items():
            t = self._table(name)
            ctx = self._ctx(spec)
            got = [t.items.get(t.key_of(k)) for k in spec["Keys"]]
            out[name] = [_project(i, spec.get("ProjectionExpression"), ctx) for i in got if i]
        return {"Responses": out, "UnprocessedKeys": {}}

    def _op_TransactWriteItems(self, r: dict) -> dict:
        items = r["TransactItems"]
        if len(items) > 100:
            raise _validation("Member must have length less than or equal to 100")
        # check every condition first, against a snapshot; then apply all (all or nothing)
        reasons, failed = [], False
        for entry in items:
            (kind, spec), = entry.items()
            t = self._table(spec["TableName"])
            key = t.key_of(spec.get("Item") or spec["Key"])
            try:
                self._check(spec, t.items.get(key), self._ctx(spec))
                reasons.append({"Code": "None"})
            except DynamoError as e:
                failed = True
                reasons.append({"Code": "ConditionalCheckFailed", "Message": e.message})
        if failed:
            raise DynamoError("TransactionCanceledException",
                              "Transaction cancelled, please refer cancellation reasons for specific reasons "
                              f"[{', '.join(x['Code'] for x in reasons)}]", {"CancellationReasons": reasons})
        for entry in items:
            (kind, spec), = entry.items()
            spec = {k: v for k, v in spec.items() if k != "ConditionExpression"}
            t = self._table(spec["TableName"])
            if kind == "Put":
                self._put(t, spec)
            elif kind == "Update":
                self._update(t, spec)
            elif kind == "Delete":
                self._delete(t, spec)
        return {}

    def _op_TransactGetItems(self, r: dict) -> dict:
        out = []
        for entry in r["TransactItems"]:
            spec = entry["Get"]
            t = self._table(spec["TableName"])
            item = t.items.get(t.key_of(spec["Key"]))
            out.append({"Item": item} if item else {})
        return {"Responses": out}

    # ---- reads over ranges ------------------------------------------------------------
    def _page(self, t: _Table, rows: list[Item], r: dict, index: _Index | None) -> dict:
        ctx = self._ctx(r)
        start = r.get("ExclusiveStartKey")
        if start:
            key = t.key_of(start)
            idx = next((i for i, it in enumerate(rows) if t.key_of(it) == key), None)
            rows = rows[idx + 1:] if idx is not None else rows
        limit = r.get("Limit")
        page = rows[:limit] if limit else rows
        more = bool(limit) and len(rows) > limit
        flt = r.get("FilterExpression")
        found = [i for i in page if not flt or _test(_parsed("condition", flt), i, ctx)]
        out: dict[str, Any] = {"Count": len(found), "ScannedCount": len(page)}
        if r.get("Select") != "COUNT":
            out["Items"] = [_project(i, r.get("ProjectionExpression"), ctx) for i in found]
        if more and page:
            last = page[-1]
            lek = t.key_item(last)
            if index is not None:
                lek[index.hash] = last[index.hash]
                if index.range:
                    lek[index.range] = last[index.range]
            out["LastEvaluatedKey"] = lek
        return out

    def _op_Query(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        index = None
        if r.get("IndexName"):
            index = next((g for g in t.gsis if g.name == r["IndexName"]), None)
            if index is None:
                raise _validation(f"The table does not have the specified index: {r['IndexName']}")
        hash_name, range_name = (index.hash, index.range) if index else (t.hash, t.range)
        ctx = self._ctx(r)
        cond = _parsed("condition", r["KeyConditionExpression"])
        rows = [i for i in t.items.values() if hash_name in i and (not range_name or range_name in i)
                and _test(cond, i, ctx)]
        rows.sort(key=lambda i: (_sort_key(i.get(range_name)) if range_name else (0, ""),
                                 _sort_key(i.get(t.hash)), _sort_key(i.get(t.range) if t.range else None)),
                  reverse=r.get("ScanIndexForward") is False)
        return self._page(t, rows, r, index)

    def _op_Scan(self, r: dict) -> dict:
        t = self._table(r["TableName"])
        index = next((g for g in t.gsis if g.name == r.get("IndexName")), None)
        rows = list(t.items.values())
        if index is not None:
            rows = [i for i in rows if index.hash in i]
        return self._page(t, rows, r, index)
