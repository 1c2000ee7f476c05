"""The fidelity layer in real runs: S3 workers top out lower per operation than DynamoDB workers."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import harness

pytestmark = pytest.mark.e2e


def test_s3_tops_out_lower_per_operation_in_one_comparison_report(tmp_path):
    ddb, s3 = tmp_path / "ddb", tmp_path / "s3"
    for run_dir, backend, profile, secs in ((ddb, "dynamodb", "aws-dynamodb", "15s"), (s3, "s3", "aws-s3-vpce", "20s")):
        p = harness("run", "pruning", "--backend", backend, "--latency", profile, "--duration", secs,
                    "--run-dir", str(run_dir), "--no-report")
        assert p.returncode == 0, p.stdout + p.stderr
        assert json.loads((run_dir / "run.json").read_text())["fidelity"]["latency"] == profile
    p = harness("report", str(ddb), str(s3), "--out", str(tmp_path / "cmp"))
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    (b,) = summary["comparison"]["backends"]
    # PutObject ~300 ms through a VPC endpoint against PutItem ~3.7 ms: several times slower per operation
    assert b["s3_ms_per_request_over_dynamodb"] > 3
    assert b["dynamodb_over_s3"] > 2
    assert "S3 workers top out lower per operation" in (tmp_path / "cmp" / "index.html").read_text()
