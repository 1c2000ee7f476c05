"""The spy's side in a test: the environment that loads it into every process of a run, and what it logged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import clean_env

SPY = Path(__file__).with_name("spy")  # its sitecustomize.py


def spied(log: Path, **extra: str) -> dict[str, str]:
    """A newcomer's environment (clean_env) with the spy logging into ``log``."""
    return clean_env(HARNESS_SPY_LOG=str(log), PYTHONPATH=str(SPY), **extra)


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def aws_lookups(log: Path) -> list[str]:
    return [e["resolve"] for e in events(log) if "resolve" in e and e["resolve"].rstrip(".").endswith("amazonaws.com")]
