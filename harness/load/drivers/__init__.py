"""Drivers: how a Locust user runs the system under test, one module per kind (see ``base``).

``model`` (the default) runs the harness's own Python model of swamp's sync layer in the Locust process;
``command`` runs a datastore's own command line, one process per step, and reads each step's time from the
spans the command exports (``harness.record.otlp``). A kind is a module here whose name does not start with ``_``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from harness.config.scenario import Scenario
from harness.core.errors import HarnessError
from harness.load.drivers.base import Driver, DriverContext, IterationOutcome

__all__ = ["Driver", "DriverContext", "IterationOutcome", "KINDS", "check", "make"]

KINDS = tuple(sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                     if not p.stem.startswith("_") and p.stem != "base"))


def module(kind: str) -> ModuleType:
    if kind not in KINDS:
        raise HarnessError(f"unknown driver {kind!r}: choose one of {', '.join(KINDS)}")
    return importlib.import_module(f"harness.load.drivers.{kind}")


def check(scenario: Scenario) -> None:
    """The scenario's ``[driver]`` as its driver reads it, or the first thing wrong with it (one line)."""
    module(scenario.driver.kind).check(scenario)


def make(ctx: DriverContext) -> Driver:
    return module(ctx.plan.scenario.driver.kind).make(ctx)
