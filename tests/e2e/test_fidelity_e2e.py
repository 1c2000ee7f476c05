"""The fidelity layer in real runs: S3 workers top out lower per operation than DynamoDB workers."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import harness, harness_all

pytestmark = pytest.mark.e2e


@pytest.mark.heavy
def test_s3_tops_out_lower_per_operation_in_one_comparison_report(tmp_path):
    ddb, s3 = tmp_path / "ddb", tmp_path / "s3"
    # an S3 iteration of this scenario is ~50 requests at ~200 ms each: ~10 s, so two of them need ~22 s
    # (both at once: each its own stand-in; the profiles' floors are sleeps, which a shared CPU only lengthens)
    plan = ((ddb, "dynamodb", "aws-dynamodb", "10s"), (s3, "s3", "aws-s3-vpce", "22s"))
    done = harness_all(*(("run", "pruning", "--backend", backend, "--latency", profile, "--duration", secs,
                          "--run-dir", str(run_dir), "--no-report") for run_dir, backend, profile, secs in plan))
    for (run_dir, _, profile, _), p in zip(plan, done, strict=True):
        assert p.returncode == 0, p.stdout + p.stderr
        assert json.loads((run_dir / "run.json").read_text())["fidelity"]["latency"] == profile
    p = harness("report", str(ddb), str(s3), "--out", str(tmp_path / "cmp"))
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    runs = {r["backend"]: r for r in summary["comparison"]["runs"]}
    (b,) = summary["comparison"]["backends"]
    # The profiles set floors a busy machine only raises: every S3 operation waits a median of 40 ms or more
    # (PutObject ~300 ms), every DynamoDB one 2.8 ms or more (PutItem ~3.7 ms on average).
    assert runs["s3"]["ms_per_request"] >= 40 and runs["dynamodb"]["ms_per_request"] >= 2.8
    assert b["s3_ms_per_request_over_dynamodb"] == pytest.approx(
        runs["s3"]["ms_per_request"] / runs["dynamodb"]["ms_per_request"])
    # slower per operation, so a lower rate for the same workers (credibly so, where the report gives an interval)
    assert b["s3_ms_per_request_over_dynamodb"] > 1.5 and b["dynamodb_over_s3"] > 1.5
    assert b.get("interval") is None or b["interval"][0] > 1
