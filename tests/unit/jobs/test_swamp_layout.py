"""The swamp-layout pre-age against what the real swamp wrote (tests/fixtures/swamp/ddb-<version>.items.json).

Each fixture is one ``swamp model create`` + ``method run get_uptime`` of swamp 06b6147 on an extension
version (how: that folder's README). The writer must put a file exactly as that version did, lay a model's
files out as swamp's run does, and leave the bookkeeping a fresh swamp pull starts from.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from harness.core.errors import HarnessError
from harness.core.work import Work
from harness.datastore.backends.dynamodb import DynamoBackend
from harness.jobs.pacing.swamp_layout import (
    LAYOUTS,
    SwampFile,
    SwampLayoutSource,
    file_items,
    layout_named,
    model_files,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "swamp"
VERSIONS = {"swamp-dynamodb@a929b7a": "ddb-a929b7a", "swamp-dynamodb@bc36088a": "ddb-bc36088a"}
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
STAMP = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z"


def recorded(layout: str) -> list[dict]:
    items = json.loads((FIXTURES / f"{VERSIONS[layout]}.items.json").read_text())["items"]
    for item in items:
        if "content" in item:
            item["content"] = {"B": base64.b64decode(item["content"]["B"])}
    return items


def recorded_files(layout: str) -> list[SwampFile]:
    items = recorded(layout)
    chunks = {i["pk"]["S"]: i["content"]["B"] for i in items if i["sk"]["S"].startswith("CHUNK#")}
    return [SwampFile(i["pk"]["S"][len("FILE#"):], chunks[i["pk"]["S"]], i["updatedAt"]["S"])
            for i in items if i["sk"]["S"] == "META"]


def shape(rel: str) -> str:
    """A path with its ids, names and times taken out: what every model's run has in common."""
    rel = re.sub(UUID, "<id>", rel)
    rel = re.sub(STAMP, "<t>", rel)
    return re.sub(r"/(m0|seed-m\d{4})\.yaml$", "/<name>.yaml", rel)


@pytest.mark.parametrize("layout", sorted(VERSIONS))
def test_a_file_is_written_item_for_item_as_the_extension_version_wrote_it(layout):
    files = recorded_files(layout)
    assert len(files) == 5  # definition, raw, metadata, latest, output
    want = [i for i in recorded(layout) if i["pk"]["S"].startswith("FILE#")]
    got = [item for f in files for item in file_items(LAYOUTS[layout], f)]
    key = lambda i: (i["pk"]["S"], i["sk"]["S"])  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)


def test_the_two_versions_differ_only_in_the_gsi_keys():
    new, legacy = (recorded_files(v) for v in sorted(VERSIONS))
    f = next(f for f in new if f.rel.endswith("/raw"))
    meta_new = file_items(LAYOUTS["swamp-dynamodb@a929b7a"], f)[1]
    meta_old = file_items(LAYOUTS["swamp-dynamodb@bc36088a"], f)[1]
    assert meta_old["gsi1pk"] == {"S": "FILE"} and meta_old["gsi1sk"] == {"S": f.rel}
    # a929b7a's gsiFilePartition takes the type's two segments: every @webframp/system model shares one key
    assert meta_new["gsi1pk"] == {"S": "FILE#@webframp/system"}
    assert meta_new["gsi1sk"] == {"S": f"{f.updated_at}|{f.rel}"}
    assert {k: v for k, v in meta_new.items() if not k.startswith("gsi1")} == \
        {k: v for k, v in meta_old.items() if not k.startswith("gsi1")}


def test_a_models_files_are_the_files_swamps_run_leaves():
    want = sorted(shape(f.rel) for f in recorded_files("swamp-dynamodb@a929b7a"))
    one_run = model_files(1.8e9, 0, 1, 1)
    assert sorted(shape(f.rel) for f in one_run) == want
    three_runs = model_files(1.8e9, 2, 3, 5)
    assert len(three_runs) == 2 + 3 * 3  # definition, latest; raw, metadata, output per run
    assert len({f.rel for f in three_runs}) == len(three_runs)
    by_name = {f.rel.rsplit("/", 1)[-1]: f for f in three_runs}
    assert by_name["latest"].content == b"3"


def test_metadata_describes_its_raw_and_definitions_keep_swamps_form():
    files = model_files(1.8e9, 7, 2, 10)
    model_id = re.search(UUID, next(f.rel for f in files if f.rel.startswith("data/"))).group(0)
    for v in (1, 2):
        raw = next(f for f in files if f.rel.endswith(f"/current/{v}/raw")).content
        meta = next(f for f in files if f.rel.endswith(f"/current/{v}/metadata.yaml")).content.decode()
        assert f"checksum: {hashlib.sha256(raw).hexdigest()}\n" in meta and f"size: {len(raw)}\n" in meta
        assert f"version: {v}\n" in meta and f"ownerRef: {model_id}\n" in meta
    rec = next(f for f in recorded_files("swamp-dynamodb@a929b7a") if f.rel.startswith("definitions-evaluated/"))
    rec_id = re.search(UUID, rec.content.decode()).group(0)
    mine = next(f for f in files if f.rel.startswith("definitions-evaluated/"))
    assert mine.content.decode() == rec.content.decode().replace(rec_id, model_id).replace("name: m0",
                                                                                         "name: seed-m0007")


def test_the_same_parameters_give_the_same_bytes():
    a, b = model_files(1.8e9, 3, 2, 4), model_files(1.8e9, 3, 2, 4)
    assert a == b and model_files(1.9e9, 3, 2, 4) != a


def test_an_unknown_layout_is_one_line_naming_the_built_ones():
    with pytest.raises(HarnessError, match="swamp-dynamodb@a929b7a, swamp-dynamodb@bc36088a, swamp-s3@c25ec91"):
        layout_named("swamp-dynamodb@0000000")


def _pull(ddb, table: str, layout: str) -> dict[str, dict]:
    """What a fresh swamp pull reads, the way the version's ``pull`` reads it: a929b7a the system partitions
    and every registered one, bc36088a the one ``FILE`` partition. Returns META items by path."""
    if layout.endswith("bc36088a"):
        keys = ["FILE"]
    else:
        reg = ddb.get_item(TableName=table, Key={"pk": {"S": "PARTITIONS#registry"}, "sk": {"S": "LIST"}})["Item"]
        keys = reg["partitions"]["SS"]
    out: dict[str, dict] = {}
    for key in keys:
        kwargs = {"TableName": table, "IndexName": "gsi1", "KeyConditionExpression": "gsi1pk = :p",
                  "ExpressionAttributeValues": {":p": {"S": key}}}
        while True:
            page = ddb.query(**kwargs)
            out.update({i["pk"]["S"][len("FILE#"):]: i for i in page["Items"]})
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return out


@pytest.mark.parametrize("layout", sorted(VERSIONS))
def test_a_pre_aged_table_holds_every_models_files_where_a_fresh_pull_looks(aws, layout):
    ddb, _ = aws
    table = f"swamp-{layout[-7:]}"
    DynamoBackend(ddb, table, "legacy").ensure()  # the table `harness jobs pre-age` provisions: pk/sk, gsi1
    source = SwampLayoutSource(ddb, table, LAYOUTS[layout], models=9, versions=3, epoch=1.8e9)
    assert source.files() == 9 * (2 + 3 * 3) and source.total == -(-source.files() // source.FILES_PER_ITEM)
    charged = 0.0
    for idx in range(source.total):
        work = Work()
        source.run(idx, work)
        source.run(idx, Work())  # a redone item lands the same items
        charged += source.cost(idx)
    source.finish()
    assert charged >= 3 * source.files()  # chunk + META + its GSI copy: at least one unit each

    metas = _pull(ddb, table, layout)
    assert set(metas) == {f.rel for f in source.files_list}  # every file, found where the version's pull looks
    for f in source.files_list[:20]:
        chunk = ddb.get_item(TableName=table, Key={"pk": {"S": f"FILE#{f.rel}"}, "sk": {"S": "CHUNK#v1#0000000"}})
        assert hashlib.sha256(chunk["Item"]["content"]["B"]).hexdigest() == metas[f.rel]["hash"]["S"]
    ids = {re.search(UUID, r).group(0) for r in metas if r.startswith("data/")}
    assert ids == set(source.model_ids)

    state = ddb.get_item(TableName=table, Key={"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "STATE"}})["Item"]
    assert state["lastPushedAt"]["S"] == max(m["updatedAt"]["S"] for m in metas.values())
    seq = ddb.get_item(TableName=table, Key={"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "SEQ"}}).get("Item")
    want = [i for i in recorded(layout) if i["pk"]["S"] in ("SYNCSTATE#global", "PARTITIONS#registry")]
    assert {(i["pk"]["S"], i["sk"]["S"]) for i in want} == \
        {("SYNCSTATE#global", "STATE")} | ({("SYNCSTATE#global", "SEQ"), ("PARTITIONS#registry", "LIST")}
                                           if layout.endswith("a929b7a") else set())
    if layout.endswith("a929b7a"):
        assert seq == {"pk": {"S": "SYNCSTATE#global"}, "sk": {"S": "SEQ"}, "seq": {"N": "1"}}
        rec_registry = next(i for i in want if i["pk"]["S"] == "PARTITIONS#registry")["partitions"]["SS"]
        assert set(rec_registry) <= set(source.partitions())  # the recorded run's partitions, all registered
    else:
        assert seq is None


def test_the_seed_refuses_orphans_and_a_non_dynamodb_scenario_before_any_request():
    from harness.config import scenario as scenarios
    from harness.jobs.bulk import _seed_swamp_layout

    sc = scenarios.load("legacy-gsi")
    with pytest.raises(HarnessError, match="no --orphans"):
        _seed_swamp_layout(None, sc, "swamp-dynamodb@a929b7a", 5, 2, 1, "t", None)  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="dynamodb backend"):
        _seed_swamp_layout(None, sc.with_overrides(backend="s3"), "swamp-dynamodb@a929b7a", 5, 2, 0, "t",
                           None)  # type: ignore[arg-type]
