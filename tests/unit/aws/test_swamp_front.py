"""The swamp driver through the front (issues 56 and 57 together), without swamp: a fake swamp CLI
(tests/fixtures/fake_swamp_cli.py) sends DynamoDB requests only where its repository's ``.swamp.yaml`` points,
as swamp's extension does, and no spans. So the user's ``.swamp.yaml`` must name the worker's seat (not the
stand-in), and the row's requests and units can only have come from the front's counts of that seat: the
iteration's commands, not the repository's setup or the model's creation.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from harness.aws.fidelity.layer import FidelityConfig
from harness.aws.fidelity.model import FidelityModel
from harness.aws.front.client import FRONT_JSON
from harness.aws.front.server import Front
from harness.aws.front.thread import FrontThread
from harness.aws.moto_server import EmbeddedMoto
from harness.load import drivers
from harness.load.drivers import swamp as swampdrv
from tests.support.plans import at, make_plan

FAKE = Path(__file__).parents[2] / "fixtures" / "fake_swamp_cli.py"
KEYS = {"aws_access_key_id": "harnesslocal", "aws_secret_access_key": "harnesslocal"}


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    with EmbeddedMoto() as m:
        yield m.urls["dynamodb"]


def _swamp(tmp_path: Path) -> Path:
    exe = tmp_path / "swamp"
    exe.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(FAKE)!r}\n"
                   f"runpy.run_path({str(FAKE)!r}, run_name='__main__')\n")
    exe.chmod(0o755)
    tpl = tmp_path / "tpl" / "extensions" / "datastores" / "dynamodb_datastore"
    tpl.mkdir(parents=True)
    return exe


def test_the_swamp_repository_names_the_seat_and_the_row_counts_only_the_iterations_requests(moto, tmp_path):
    exe = _swamp(tmp_path)
    run_dir = tmp_path / "run"
    plan = make_plan("namespaced", driver="swamp", swamp=str(exe), swamp_repo=str(tmp_path / "tpl"),
                     run_dir=str(run_dir))
    plan = at(plan, dynamodb=moto, s3=moto)
    table = plan.resources.table
    boto3.session.Session(region_name="us-east-1", **KEYS).client("dynamodb", endpoint_url=moto).create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}])
    ft = FrontThread(Front(FidelityModel(FidelityConfig(enabled=True, latency="local"), rng=random.Random(1)),
                           {"dynamodb": moto, "s3": moto}))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / FRONT_JSON).write_text(json.dumps({"control": ft.control_url}))
    shared: dict = {}
    try:
        drivers.check(plan.scenario)
        d = drivers.make(drivers.DriverContext(plan, process="local", user="w0-0", namespace="w0-0", rng_seed=1,
                                               shared=shared))
        assert isinstance(d, swampdrv.SwampDriver)
        outs = [d.run_once() for _ in range(2)]
        seat = ft.seat("w0-0")
    finally:
        if "otlp" in shared:
            shared["otlp"].close()
        ft.stop()
    yaml = (d.workdir / ".swamp.yaml").read_text()
    assert f'endpoint: "{seat}"' in yaml and moto not in yaml, yaml  # the seat, never the stand-in itself
    sent = (d.workdir / "sent.log").read_text().splitlines()
    assert {line.split()[1] for line in sent} == {seat}
    assert [line.split()[0] for line in sent][:2] == ["status", "create"]  # setup, then the first model's creation
    for out in outs:
        r = out.row
        assert r["ok"], r["error"]
        # the run's 3 PutItems and 1 GetItem, from the wire: not the setup's DescribeTable nor the creation's GetItem
        assert (r["requests"], r["write_requests"], r["throttles"]) == (4, 3, 0), r
        assert r["write_units"] == 3 * 2.0 and r["read_units"] == 0.5  # 1.5 KB items: 2 WCU each; eventual read
        assert r["bytes_sent"] > 3 * 1500


def test_s3_rows_get_no_capacity_units_from_the_wire():
    """S3 has no capacity units: the wire's zeros must not read as 'this iteration cost 0 units'."""
    from harness.aws.front.counts import WireCounts
    from harness.aws.front.seat import fill

    row: dict = {"requests": 31, "read_units": None, "write_units": None, "throttles": None}
    fill(row, WireCounts(requests=34, write_requests=18, kinds={"s3.PutObject": 18, "s3.GetObject": 16}))
    assert row["requests"] == 31 and row["throttles"] == 0  # the spans' count stays; throttles are the wire's
    assert row["read_units"] is None and row["write_units"] is None
    ddb: dict = {"read_units": None, "write_units": None}
    fill(ddb, WireCounts(requests=2, read_units=0.5, write_units=2.0, kinds={"dynamodb.PutItem": 1,
                                                                            "dynamodb.GetItem": 1}))
    assert (ddb["read_units"], ddb["write_units"]) == (0.5, 2.0)
