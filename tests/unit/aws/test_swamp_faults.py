"""The real swamp under the model's violating schedules (issue 57 item 4): the parts testable without swamp.

- ``harness.safety.swamp_check``: a ``method run --json`` result's acknowledgement (its checksum is swamp's own, checked
  against a version swamp 06b6147 stored), and the comparison with a fresh read: lost, phantom, older;
- ``harness.aws.front.schedule``: a step aimed at one user's commit writes, through a real front over a moto server:
  a lost answer lands, a throttle reaches the client as DynamoDB's error, a freeze calls back before the request
  goes on, another user's requests and the lock's own writes are left alone;
- with HARNESS_SWAMP / HARNESS_SWAMP_REPO set, ``bench/swamp_faults.py``'s ``lost`` schedule on the real swamp.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

from harness.aws.fidelity.model import FidelityConfig
from harness.aws.front.schedule import AfterGlobalLock, ScheduledFront, ScheduledModel, Step
from harness.aws.front.thread import FrontThread
from harness.aws.moto_server import EmbeddedMoto
from harness.safety.swamp_check import Version, acknowledged, compare, content_checksum, read_versions

ROOT = Path(__file__).resolve().parents[3]
ONE_TRY = Config(retries={"mode": "standard", "total_max_attempts": 1})
KEYS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}

# a version swamp 06b6147 stored (metadata.yaml's checksum) and the attributes its method run --json gave
ATTRS = {"bootTime": "2026-12-06 22:44:16",
         "uptimeString": "23:30:59 up 46 min,  0 user,  load average: 8.08, 10.19, 10.80",
         "loadAverage1m": "8.08", "loadAverage5m": "10.19", "loadAverage15m": "10.80",
         "fetchedAt": "2026-12-06T23:30:59.970Z"}
SWAMPS_CHECKSUM = "7a6239783cc1638208b5764e2d0de48db1de2d7723259f6e5748a907c93dd658"
MODEL = "9f209cf2-6e53-401e-a7c1-a76c7c92f558"


def _result(version: int, attrs: dict, status: str = "succeeded") -> dict:
    return {"modelId": MODEL, "status": status, "dataArtifacts": [
        {"name": "current", "path": f"/root/.swamp/repos/x/ns/data/@webframp/system/{MODEL}/current/{version}",
         "attributes": attrs}]}


def test_checksum_is_swamps() -> None:
    # swamp's metadata.yaml for this content said 7a6239…: the acknowledgement needs no read of swamp's files
    assert content_checksum(ATTRS) == SWAMPS_CHECKSUM
    assert content_checksum(ATTRS) != content_checksum({**ATTRS, "loadAverage1m": "8.09"})
    (v,) = acknowledged(_result(2, ATTRS), "A")
    assert (v.model_id, v.name, v.version, v.by) == (MODEL, "current", 2, "A")
    assert acknowledged(_result(2, ATTRS, status="failed"), "A") == []


def test_read_versions() -> None:
    listing = {"dataName": "current", "modelId": MODEL, "versions": [
        {"version": 2, "checksum": "b" * 64, "isLatest": True}, {"version": 1, "checksum": "a" * 64}]}
    assert read_versions(listing) == [Version(MODEL, "current", 2, "b" * 64), Version(MODEL, "current", 1, "a" * 64)]


def _v(version: int, c: str, by: str = "") -> Version:
    return Version(MODEL, "current", version, c * 64, by)


def test_compare_clean() -> None:
    v = compare([_v(1, "a", "A"), _v(2, "b", "B")], [_v(1, "a"), _v(2, "b")])
    assert v.clean and v.counts() == {"lost": 0, "phantom": 0, "older": 0}


def test_compare_overwritten_is_lost_and_phantom() -> None:
    # two writers both acknowledged v2; the read holds a third content under v2 (neither's): both lost, one phantom
    v = compare([_v(1, "a", "A"), _v(2, "b", "A"), _v(2, "c", "B")], [_v(1, "a"), _v(2, "d")])
    assert v.counts() == {"lost": 2, "phantom": 1, "older": 0}
    # the read holds A's: B's acknowledged v2 is lost, nothing phantom, nothing older
    v = compare([_v(1, "a", "A"), _v(2, "b", "A"), _v(2, "c", "B")], [_v(1, "a"), _v(2, "b")])
    assert v.counts() == {"lost": 1, "phantom": 0, "older": 0}
    assert "B's current v2" in v.lost[0] and "other content" in v.lost[0]


def test_compare_missing_is_lost_and_older() -> None:
    v = compare([_v(1, "a", "A"), _v(2, "b", "A")], [_v(1, "a")])
    assert v.counts() == {"lost": 1, "phantom": 0, "older": 1}
    assert "is not read" in v.lost[0] and "latest read v1 < v2" in v.older[0]


def test_compare_before_is_not_phantom() -> None:
    v = compare([_v(2, "b", "A")], [_v(1, "a"), _v(2, "b")], before=[_v(1, "a")])
    assert v.clean
    assert compare([_v(2, "b", "A")], [_v(1, "a"), _v(2, "b")]).counts()["phantom"] == 1


# ---- the schedule's steps through a real front -------------------------------------------------------------


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with EmbeddedMoto() as m:
        yield m.urls["dynamodb"]


@pytest.fixture
def front(moto: str) -> Iterator[tuple[FrontThread, ScheduledModel]]:
    model = ScheduledModel(FidelityConfig())
    ft = FrontThread(ScheduledFront(model, {"dynamodb": moto}))
    try:
        yield ft, model
    finally:
        ft.stop()


def _ddb(url: str):
    return boto3.session.Session(region_name="us-east-1", **KEYS).client("dynamodb", endpoint_url=url,
                                                                        config=ONE_TRY)


def _table(url: str, name: str) -> None:
    _ddb(url).create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                           AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
                           KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                      {"AttributeName": "sk", "KeyType": "RANGE"}])


def _put(client, table: str, pk: str, sk: str = "x") -> None:
    client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": sk}})


def _has(url: str, table: str, pk: str, sk: str = "x") -> bool:
    return "Item" in _ddb(url).get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})


def test_after_global_lock_matches_the_commit_writes_only() -> None:
    m = AfterGlobalLock()
    lock = {"TableName": "t", "Item": {"pk": {"S": "LOCK#ns/data/@x/m/.lock"}}}
    glock = {"TableName": "t", "Item": {"pk": {"S": "LOCK#.locks/ns.lock"}}}
    write = {"TableName": "t", "Item": {"pk": {"S": "FILE#ns/data/x"}}}
    assert not m("PutItem", write)  # before the global lock: the model lock's pull, not the commit
    assert not m("PutItem", lock)
    assert not m("PutItem", glock)
    assert m("BatchWriteItem", write) and m("PutItem", write)
    assert not m("GetItem", write)  # reads are not the commit's writes
    assert not m("DeleteItem", glock) and not m("UpdateItem", lock)  # the locks' own release and renewal


def test_lost_answer_lands(front, moto: str) -> None:
    ft, model = front
    _table(moto, "tlost")
    a, b = _ddb(ft.seat("A")), _ddb(ft.seat("B"))
    step = model.add(Step("A", "lost", AfterGlobalLock(), times=1))
    _put(a, "tlost", "LOCK#.locks/ns.lock")
    _put(b, "tlost", "FILE#b")  # another user's write: untouched
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        _put(a, "tlost", "FILE#a")
    assert _has(moto, "tlost", "FILE#a")  # applied, though its answer never came
    _put(a, "tlost", "FILE#a2")  # times=1: the next one answers
    assert step.acted == ["PutItem"] and _has(moto, "tlost", "FILE#b")


def test_throttle_past_retries_and_freeze_callback(front, moto: str) -> None:
    ft, model = front
    _table(moto, "tthr")
    a = _ddb(ft.seat("A"))
    model.add(Step("A", "throttle", AfterGlobalLock(), times=None))
    _put(a, "tthr", "LOCK#.locks/ns.lock")
    for i in range(3):
        with pytest.raises(ClientError) as e:
            _put(a, "tthr", f"FILE#{i}")
        assert e.value.response["Error"]["Code"] == "ThrottlingException"
        assert not _has(moto, "tthr", f"FILE#{i}")
    model.clear()
    calls: list[str] = []
    model.add(Step("A", "freeze", AfterGlobalLock(), times=1, skip=1, on_freeze=lambda: calls.append("stop")))
    _put(a, "tthr", "LOCK#.locks/ns.lock")
    _put(a, "tthr", "FILE#s")  # skipped
    assert calls == []
    _put(a, "tthr", "FILE#f")  # frozen, then sent on: it lands and answers
    assert calls == ["stop"] and _has(moto, "tthr", "FILE#f")


def test_unknown_action_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown schedule action"):
        Step("A", "explode", AfterGlobalLock())


# ---- the real swamp (gated) -------------------------------------------------------------------------------

needs_swamp = pytest.mark.skipif(not (os.environ.get("HARNESS_SWAMP") and os.environ.get("HARNESS_SWAMP_REPO")),
                                 reason="set HARNESS_SWAMP and HARNESS_SWAMP_REPO (../shared/realswamp)")


def test_bench_skips_without_swamp() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_SWAMP", "HARNESS_SWAMP_REPO")}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "swamp_faults.py")], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("skipped: set HARNESS_SWAMP")


@pytest.mark.e2e
@needs_swamp
def test_real_swamp_lost_answer(tmp_path: Path) -> None:
    """One commit whose first write and sequence increment lose their answers: the data survives (the retries
    are idempotent), the commit sequence grows by two for one commit; a global lock acquire whose answer is
    lost makes the run wait out the lock's TTL."""
    import json

    out = tmp_path / "faults.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "swamp_faults.py"), "--schedules", "lost", "--out",
                    str(out)], check=True, timeout=900)
    (r,) = json.loads(out.read_text())["schedules"]
    assert r["commands"]["A"]["exit"] == 0 and len(r["acted"]) == 2 and r["lock_lost"] == ["PutItem"]
    assert r["findings"] == {"lost": 0, "phantom": 0, "older": 0, "unreadable": 0}
    assert r["seq_after"] - r["seq_before"] == 2  # one commit, counted twice
    assert r["lock_run_s"] >= 30  # its own lock, taken for another's: it waited out swamp's 30 s TTL
