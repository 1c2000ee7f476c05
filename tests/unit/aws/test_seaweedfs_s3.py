"""Every S3 call the harness makes, against a real SeaweedFS started by the harness's launcher.

The S3 backend (lock object, fencing, both index layouts), the ownership
check, cleanup, the probe and the safety checker's final-state capture use:
HeadBucket, CreateBucket, PutBucketTagging / GetBucketTagging, GetObject,
PutObject (plain, ``IfMatch``, ``IfNoneMatch="*"``), DeleteObject (plain and
``IfMatch``), DeleteObjects and ListObjectsV2 (prefix, pagination). Each is
checked here through the harness's own client (``make_clients``: path-style
addressing, the accounting hooks), refusals with the error code botocore
parses and the harness's classifier (``harness.core.aws_errors``) reads. Then the
launcher's promises about the process: the ports it chose, nothing left after
``stop()``, and no ``weed`` left when the process that started it is killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from botocore.exceptions import ClientError

from harness.aws.clients import make_clients
from harness.aws.endpoints import Endpoints
from harness.aws.standin import seaweedfs
from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS
from harness.config.factory import Factory, ownership_tags
from harness.config.plan import Resources
from harness.core.aws_errors import error_code, is_condition_failed, is_not_found
from harness.core.clock import FakeClock
from harness.datastore.backends.s3 import S3Backend
from harness.datastore.lock import LockConfig
from tests.conftest import make_store
from tests.support.plans import at, make_plan

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group("seaweedfs-s3"),  # one server for the module: its tests stay in one process
    pytest.mark.skipif(seaweedfs.missing_runtime() is not None, reason=f"{seaweedfs.missing_runtime()}"),
]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def weed(tmp_path_factory):
    s = EmbeddedSeaweedFS(data_dir=tmp_path_factory.mktemp("seaweedfs")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def clients(weed):
    return make_clients(Endpoints(None, weed.url, "embedded"))


@pytest.fixture
def s3(clients):
    return clients.s3


@pytest.fixture
def bucket(s3):
    name = f"t-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def refused(call) -> ClientError:
    with pytest.raises(ClientError) as e:
        call()
    return e.value


def status(e: ClientError) -> int:
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


# ---- buckets ---------------------------------------------------------------------------------------

def test_head_and_create_bucket(s3):
    name = f"t-{uuid.uuid4().hex[:12]}"
    e = refused(lambda: s3.head_bucket(Bucket=name))
    assert status(e) == 404 and error_code(e) == "404" and is_not_found(e)  # what S3Backend.ensure reads
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    again = refused(lambda: s3.create_bucket(Bucket=name))
    assert status(again) == 409 and error_code(again) in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists")


def test_bucket_tagging_round_trips_so_ownership_uses_tags_not_a_marker(s3, bucket):
    e = refused(lambda: s3.get_bucket_tagging(Bucket=bucket))
    assert status(e) == 404 and error_code(e) == "NoSuchTagSet"  # untagged: owner_tags reads {} -> foreign
    tags = ownership_tags("run-x")
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]})
    got = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert got == tags == {"harness:owner": "harness", "harness:run": "run-x"}


def test_ownership_refuses_a_foreign_bucket_and_cleanup_deletes_only_its_own(clients, s3, bucket, weed):
    from dataclasses import replace

    def factory(resources: Resources, run_id: str) -> Factory:
        plan = at(make_plan("namespaced", backend="s3"), s3=weed.url)
        return Factory(replace(plan, run_id=run_id, resources=resources))

    theirs = factory(Resources(table="t", bucket=bucket), "run-a")
    foreign = theirs.backend(clients)
    notes: list[str] = []
    with pytest.raises(Exception, match="was not created by the harness"):
        theirs.provision(clients, foreign, note=notes.append)
    assert theirs.teardown(clients, foreign) is False
    run = f"run-{uuid.uuid4().hex[:6]}"
    mine = factory(Resources.for_run(run), run)
    ours = mine.backend(clients)
    mine.provision(clients, ours, note=notes.append)
    mine.provision(clients, ours, note=notes.append)  # a second process checks the same bucket: ours
    assert notes == []  # nothing SeaweedFS lacks for this
    s3.put_object(Bucket=ours.bucket, Key="a/b", Body=b"x")
    assert mine.teardown(clients, ours) is True
    assert error_code(refused(lambda: s3.head_bucket(Bucket=ours.bucket))) == "404"
    assert s3.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


# ---- objects ---------------------------------------------------------------------------------------

def test_get_and_plain_put(s3, bucket):
    e = refused(lambda: s3.get_object(Bucket=bucket, Key="nope"))
    assert status(e) == 404 and error_code(e) == "NoSuchKey" and is_not_found(e)
    etag = s3.put_object(Bucket=bucket, Key="a/x@v1.d1", Body=b"hello")["ETag"]
    out = s3.get_object(Bucket=bucket, Key="a/x@v1.d1")
    assert out["Body"].read() == b"hello" and out["ETag"] == etag and etag.startswith('"')
    assert out["LastModified"].year >= 2024
    big = bytes(range(256)) * 2048  # 512 KB: write-stress's largest payload
    s3.put_object(Bucket=bucket, Key="big", Body=big)
    assert s3.get_object(Bucket=bucket, Key="big")["Body"].read() == big


def test_if_none_match_creates_once_and_refuses_with_412(s3, bucket):
    s3.put_object(Bucket=bucket, Key="lock", Body=b"1", IfNoneMatch="*")
    e = refused(lambda: s3.put_object(Bucket=bucket, Key="lock", Body=b"2", IfNoneMatch="*"))
    assert status(e) == 412 and error_code(e) == "PreconditionFailed" and is_condition_failed(e)
    assert s3.get_object(Bucket=bucket, Key="lock")["Body"].read() == b"1"


def test_if_match_swaps_only_on_the_current_etag(s3, bucket):
    first = s3.put_object(Bucket=bucket, Key="meta", Body=b"v1")["ETag"]
    second = s3.put_object(Bucket=bucket, Key="meta", Body=b"v2", IfMatch=first)["ETag"]
    assert second != first
    e = refused(lambda: s3.put_object(Bucket=bucket, Key="meta", Body=b"v3", IfMatch=first))  # stale
    assert status(e) == 412 and error_code(e) == "PreconditionFailed" and is_condition_failed(e)
    assert s3.get_object(Bucket=bucket, Key="meta")["Body"].read() == b"v2"
    missing = refused(lambda: s3.put_object(Bucket=bucket, Key="never", Body=b"v", IfMatch=first))
    assert is_condition_failed(missing) or is_not_found(missing)  # refused either way ...
    assert is_not_found(refused(lambda: s3.get_object(Bucket=bucket, Key="never")))  # ... and nothing written


def test_delete_object_plain_and_with_if_match(s3, bucket):
    assert s3.delete_object(Bucket=bucket, Key="absent")["ResponseMetadata"]["HTTPStatusCode"] == 204
    old = s3.put_object(Bucket=bucket, Key="k", Body=b"1")["ETag"]
    new = s3.put_object(Bucket=bucket, Key="k", Body=b"2")["ETag"]
    e = refused(lambda: s3.delete_object(Bucket=bucket, Key="k", IfMatch=old))
    assert status(e) == 412 and error_code(e) == "PreconditionFailed" and is_condition_failed(e)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"2"
    s3.delete_object(Bucket=bucket, Key="k", IfMatch=new)
    assert is_not_found(refused(lambda: s3.get_object(Bucket=bucket, Key="k")))
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="plain")
    assert is_not_found(refused(lambda: s3.get_object(Bucket=bucket, Key="plain")))


def test_delete_objects_quiet_removes_listed_keys_and_ignores_missing_ones(s3, bucket):
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"d/{i}", Body=b"x")
    out = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"d/{i}"} for i in (0, 1, 2)] +
                                                   [{"Key": "d/none"}], "Quiet": True})
    assert not out.get("Errors")
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="d/").get("Contents", [])]
    assert left == ["d/3", "d/4"]


def test_list_objects_v2_by_prefix_in_key_order_across_pages(s3, bucket):
    keys = [f"ns/_index/p{i:02d}@v{i}.{uuid.uuid4().hex[:6]}.json" for i in range(7)]
    for k in keys + ["ns/_indexed", "other/x", "ns/_index"]:  # neighbours the prefix must exclude
        s3.put_object(Bucket=bucket, Key=k, Body=b"{}")
    pages, token = [], None
    while True:
        kwargs = {"Bucket": bucket, "Prefix": "ns/_index/", "MaxKeys": 3}
        if token:
            kwargs["ContinuationToken"] = token
        out = s3.list_objects_v2(**kwargs)
        pages.append([o["Key"] for o in out.get("Contents", [])])
        assert all(o["ETag"].startswith('"') and o["Size"] == 2 for o in out.get("Contents", []))
        if not out.get("IsTruncated"):
            break
        token = out["NextContinuationToken"]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [k for p in pages for k in p] == sorted(keys)
    assert s3.list_objects_v2(Bucket=bucket, Prefix="nothing/").get("KeyCount") == 0


def test_conditional_writes_are_atomic_per_key(s3, bucket):
    """16 writers at once, one key: exactly one If-None-Match create and one If-Match swap win (versitygw before
    v1.8.0 let several win: the lock and the fence rest on this). weed serialises them behind a per-object lock:
    under this contention a refusal can take seconds (measured: median 1.5 s, up to 8 s with 16 writers)."""
    def race(kwargs_for) -> list[bool]:
        start = threading.Barrier(16)

        def one(i: int) -> bool:
            start.wait()
            try:
                s3.put_object(Bucket=bucket, Body=f"writer {i}".encode(), **kwargs_for(i))
                return True
            except ClientError as e:
                assert is_condition_failed(e), e
                return False

        with ThreadPoolExecutor(16) as ex:
            return list(ex.map(one, range(16)))

    for r in range(5):
        assert sum(race(lambda i, r=r: {"Key": f"create-{r}", "IfNoneMatch": "*"})) == 1
        etag = s3.put_object(Bucket=bucket, Key=f"swap-{r}", Body=b"base")["ETag"]
        assert sum(race(lambda i, r=r, etag=etag: {"Key": f"swap-{r}", "IfMatch": etag})) == 1


# ---- the harness's S3 backend on it ------------------------------------------------------------------

@pytest.mark.parametrize("index", ["sharded", "monolith"])
def test_the_backend_commits_pulls_and_snapshots_on_both_index_layouts(s3, bucket, index):
    clock = FakeClock()
    be = S3Backend(s3, bucket, index, clock=clock)
    be.ensure()
    lock = LockConfig(ttl_s=3.0, wait_s=2.0, retry_s=0.05, retry_cap_s=0.1)
    writer = make_store(be, "ns", clock=clock, lock=lock)
    reader = make_store(S3Backend(s3, bucket, index, clock=clock), "ns", clock=clock, lock=lock, holder="r")
    steps: list = []
    for i in range(3):
        writer.sync_run(f"m{i}", "get_memory", 2_000, steps)
    from harness.core.work import Work

    w = Work()
    reader.pull(w)
    assert w.files_pulled >= 3 * 3  # raw, metadata, latest of each model at least
    snap = be.index_snapshot(Work())  # what the safety checker captures at the end
    assert snap["missing_shards"] == [] and len(snap["entries"]) >= 9, json.dumps(snap, default=str)[:500]
    assert all(e["content_digest"] == e["digest"] for e in snap["entries"])  # every entry's content is there
    assert snap["domains"] and all(d["seq"] >= 3 for d in snap["domains"].values())
    assert be.commit_seq("ns", Work()) >= 3


def test_the_probe_requests_work_on_it(weed, s3, bucket):
    from harness.aws.fidelity import probe

    t = probe.Target(service="s3", endpoint=weed.url, name=bucket, key="probe/")
    samples = probe.sample(probe.s3_ops(t))
    assert [op for op, _ in samples] == ["GetObject", "ListObjectsV2"] and all(ms > 0 for _, ms in samples)


# ---- the process --------------------------------------------------------------------------------------

def test_every_chosen_port_is_what_listens_and_nothing_else_is_open(weed):
    proc = psutil.Process(weed.proc.pid)
    listening = {(c.laddr.ip, c.laddr.port) for c in proc.net_connections(kind="tcp") if c.status == "LISTEN"}
    assert listening == {("127.0.0.1", p) for p in weed.ports.values()}
    remote = {c.raddr.ip for c in proc.net_connections(kind="tcp") if c.raddr}
    assert remote <= {"127.0.0.1"}  # telemetry is off: it talks to itself only
    assert weed.services == {"s3": f"seaweedfs {weed.version}"} and weed.version == "4.48"


def test_stop_leaves_no_process_no_data_and_no_sockets(tmp_path):
    s = EmbeddedSeaweedFS(data_dir=tmp_path).start()
    pid, sockets, data = s.proc.pid, Path(s._sockets), s.data_dir
    assert data.is_dir() and any(data.iterdir()) and sockets.is_dir()
    s.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not data.exists() and not sockets.exists()
    assert (tmp_path / "seaweedfs.log").stat().st_size > 0  # the log stays with the run


def test_a_killed_parent_leaves_no_weed_behind(tmp_path):
    """SIGKILL to the process that started it (no cleanup runs): the kernel ends weed too (PR_SET_PDEATHSIG)."""
    code = ("import sys, time\n"
            "from harness.aws.standin.seaweedfs import EmbeddedSeaweedFS\n"
            f"s = EmbeddedSeaweedFS(data_dir={str(tmp_path)!r}).start()\n"
            "print(s.proc.pid, flush=True)\n"
            "print(json.dumps(s.ports), flush=True)\n"
            "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", "import json\n" + code], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    ports: dict[str, int] = {}
    try:
        weed_pid = int(parent.stdout.readline())
        ports = json.loads(parent.stdout.readline())
        assert psutil.Process(weed_pid).name() == "weed"
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and psutil.pid_exists(weed_pid):
            time.sleep(0.1)
        assert not psutil.pid_exists(weed_pid) or psutil.Process(weed_pid).status() == psutil.STATUS_ZOMBIE
    finally:
        if parent.poll() is None:
            parent.kill()
        # killed, weed leaves its gRPC sockets under /tmp (nothing of the harness's ran to remove them): the
        # test cleans up what it caused
        seaweedfs.stale_grpc_sockets_removed(ports)
