"""End-to-end helpers: real `harness` / `locust` processes against a real moto server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "harness" / "config" / "scenarios"  # the shipped scenario files (package data)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a newcomer has: no endpoint, no AWS profile, no instance metadata lookups."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and not k.startswith("HARNESS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra)
    return env


def harness(*args: str, env: dict[str, str] | None = None, timeout: float = 240,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          env=env or clean_env(), timeout=timeout, cwd=cwd or ROOT)


def harness_all(*argvs: tuple[str, ...], env: dict[str, str] | None = None,
                timeout: float = 240) -> list[subprocess.CompletedProcess]:
    """Several independent `harness` processes at once (each its own stand-in and run directory), in the order
    given: a test that needs two real runs waits for the longer one instead of for both in turn."""
    procs = [subprocess.Popen([sys.executable, "-m", "harness", *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env or clean_env(), cwd=ROOT) for a in argvs]
    done = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return done


def senders(run_dir: Path) -> set[str]:
    """The worker processes whose rows a (running) test has written so far."""
    parts = list((run_dir / "iterations").glob("*.parquet")) if (run_dir / "iterations").is_dir() else []
    return set(pd.read_parquet(parts, columns=["worker"])["worker"]) if parts else set()


def rows(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "iterations").sort_values("ts_start").reset_index(drop=True)


@pytest.fixture
def run_scenario(tmp_path):
    """Run a scenario headless on the embedded default; return (process, rows)."""

    def _run(scenario: str, backend: str = "dynamodb", duration: str = "12s", *extra: str):
        run_dir = tmp_path / f"{scenario}-{backend}"
        proc = harness("run", scenario, "--backend", backend, "--duration", duration, "--run-dir", str(run_dir),
                       "--no-report", *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return run_dir, rows(run_dir)

    return _run
